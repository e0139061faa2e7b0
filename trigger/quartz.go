package trigger

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Quartz's day extensions (http://www.quartz-scheduler.org, CronTrigger):
// in day-of-month, "L" (the last day), "L-n" (n days before it), "nW"
// (the weekday nearest day n, within the month) and "LW" (the last
// weekday); in day-of-week, "xL" (the last weekday x of the month) and
// "x#n" (the n-th weekday x). Weekdays keep this package's numbering
// (0 or SUN = Sunday ... 6 or SAT = Saturday), not Quartz's 1 = Sunday:
// Quartz's "6L" (last Friday) is "5L" or "FRIL" here. A field may mix
// them with plain values in a list ("1,L"); a day matches a field when
// a plain value or a rule matches.

// dayRule is one Quartz day item.
type dayRule struct {
	kind   byte // 'L' last day (-off), 'W' nearest weekday, 'V' last weekday (LW), 'l' last x of month, '#' n-th x
	n, off int  // W: the day; '#': the week; 'L': the offset; weekday rules: n is the weekday
	week   int
}

var (
	domRuleRE = regexp.MustCompile(`^(?:L(?:-([0-9]{1,2}))?|([0-9]{1,2})W|LW)$`)
	dowRuleRE = regexp.MustCompile(`^([0-9]|[A-Za-z]{3})(?:L|#([0-9]))$`)
	dowNames  = map[string]int{"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
)

// UsesQuartz reports whether a cron expression uses Quartz's day
// extensions (L, W, #), which need protocol 8.
func UsesQuartz(expr string) bool {
	f := strings.Fields(expr)
	if len(f) != 5 && len(f) != 6 {
		return false
	}
	dom, dow := f[len(f)-3], f[len(f)-1]
	for _, it := range strings.Split(dom, ",") {
		if domRuleRE.MatchString(strings.ToUpper(it)) {
			return true
		}
	}
	for _, it := range strings.Split(dow, ",") {
		if dowRuleRE.MatchString(it) {
			return true
		}
	}
	return false
}

// splitDayRules takes the Quartz items out of a day field (i: 3 for
// day-of-month, 5 for day-of-week): it returns the plain items for
// robfig/cron ("" when there are none) and the rules.
func splitDayRules(i int, field string) (plain string, rules []dayRule, err error) {
	var rest []string
	for _, it := range strings.Split(field, ",") {
		r, ok, err := parseDayRule(i, it)
		if err != nil {
			return "", nil, exprError("%s field %q: %s", fieldNames[i], field, err)
		}
		if ok {
			rules = append(rules, r)
			continue
		}
		rest = append(rest, it)
	}
	return strings.Join(rest, ","), rules, nil
}

// parseDayRule reads one item as a Quartz rule; ok is false for a plain
// item.
func parseDayRule(i int, it string) (dayRule, bool, error) {
	if i == 3 {
		m := domRuleRE.FindStringSubmatch(strings.ToUpper(it))
		switch {
		case m == nil:
			return dayRule{}, false, nil
		case strings.ToUpper(it) == "LW":
			return dayRule{kind: 'V'}, true, nil
		case m[2] != "":
			d, _ := strconv.Atoi(m[2])
			if d < 1 || d > 31 {
				return dayRule{}, false, fmt.Errorf("%q: W needs a day from 1 to 31", it)
			}
			return dayRule{kind: 'W', n: d}, true, nil
		}
		off := 0
		if m[1] != "" {
			off, _ = strconv.Atoi(m[1])
			if off > 30 {
				return dayRule{}, false, fmt.Errorf("%q: L-n takes n from 0 to 30", it)
			}
		}
		return dayRule{kind: 'L', off: off}, true, nil
	}
	m := dowRuleRE.FindStringSubmatch(it)
	if m == nil {
		return dayRule{}, false, nil
	}
	wd, err := strconv.Atoi(m[1])
	if err != nil {
		v, ok := dowNames[strings.ToUpper(m[1])]
		if !ok {
			return dayRule{}, false, fmt.Errorf("%q: unknown weekday %q", it, m[1])
		}
		wd = v
	}
	if wd > 6 {
		return dayRule{}, false, fmt.Errorf("%q: weekday %d above 6 (0 = Sunday, 6 = Saturday)", it, wd)
	}
	if m[2] == "" {
		return dayRule{kind: 'l', n: wd}, true, nil
	}
	week, _ := strconv.Atoi(m[2])
	if week < 1 || week > 5 {
		return dayRule{}, false, fmt.Errorf("%q: # takes a week from 1 to 5", it)
	}
	return dayRule{kind: '#', n: wd, week: week}, true, nil
}

// matches reports whether day d of month m of year y matches r.
func (r dayRule) matches(y, m, d int) bool {
	last := daysIn(y, m)
	switch r.kind {
	case 'L':
		return d == last-r.off
	case 'V':
		return d == nearestWeekday(y, m, last, last)
	case 'W':
		return r.n <= last && d == nearestWeekday(y, m, r.n, last)
	case 'l':
		return weekday(y, m, d) == r.n && d+7 > last
	case '#':
		return weekday(y, m, d) == r.n && (d-1)/7+1 == r.week
	}
	return false
}

// nearestWeekday is Quartz's "nW": day n if it is Monday to Friday; the
// Friday before a Saturday (the Monday after it when n is the 1st); the
// Monday after a Sunday (the Friday before it when n is the last day):
// never outside the month.
func nearestWeekday(y, m, n, last int) int {
	switch weekday(y, m, n) {
	case 6:
		if n == 1 {
			return 3
		}
		return n - 1
	case 0:
		if n == last {
			return n - 2
		}
		return n + 1
	}
	return n
}

func anyRule(rules []dayRule, y, m, d int) bool {
	for _, r := range rules {
		if r.matches(y, m, d) {
			return true
		}
	}
	return false
}
