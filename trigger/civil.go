package trigger

import "time"

// civil is a wall-clock time to the second, without a timezone.
type civil struct {
	year, month, day, hour, min, sec int
}

func civilOf(t time.Time) civil {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return civil{y, int(mo), d, h, mi, s}
}

func (c civil) less(o civil) bool {
	switch {
	case c.year != o.year:
		return c.year < o.year
	case c.month != o.month:
		return c.month < o.month
	case c.day != o.day:
		return c.day < o.day
	case c.hour != o.hour:
		return c.hour < o.hour
	case c.min != o.min:
		return c.min < o.min
	default:
		return c.sec < o.sec
	}
}

// nextDay returns midnight of the following day.
func (c civil) nextDay() civil {
	c.hour, c.min, c.sec = 0, 0, 0
	c.day++
	if c.day > daysIn(c.year, c.month) {
		c.day = 1
		c.month++
		if c.month > 12 {
			c.month = 1
			c.year++
		}
	}
	return c
}

// nextHour returns the start of the following hour.
func (c civil) nextHour() civil {
	c.min, c.sec = 0, 0
	c.hour++
	if c.hour == 24 {
		return c.nextDay()
	}
	return c
}

// nextMinute returns the start of the following minute.
func (c civil) nextMinute() civil {
	c.sec = 0
	c.min++
	if c.min == 60 {
		return c.nextHour()
	}
	return c
}

// nextSecond returns c plus one second.
func (c civil) nextSecond() civil {
	c.sec++
	if c.sec == 60 {
		return c.nextMinute()
	}
	return c
}

func isLeap(y int) bool {
	return y%4 == 0 && (y%100 != 0 || y%400 == 0)
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	default:
		return 31
	}
}

// weekday returns the day of the week of a proleptic Gregorian date,
// Sunday = 0.
func weekday(y, m, d int) int {
	// Days since 1970-01-01 (a Thursday), after H. Hinnant's days_from_civil.
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	doy := (153*((m+9)%12)+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := era*146097 + doe - 719468
	w := (days + 4) % 7
	if w < 0 {
		w += 7
	}
	return w
}
