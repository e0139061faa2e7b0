package ics

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// window is [from, to) at midnight in the zone named, dates as
// "2006-01-02"; Location is left nil (From.Location() is the zone).
func window(t *testing.T, from, to, zone string) Options {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	f, err := time.ParseInLocation(time.DateOnly, from, loc)
	if err != nil {
		t.Fatal(err)
	}
	u, err := time.ParseInLocation(time.DateOnly, to, loc)
	if err != nil {
		t.Fatal(err)
	}
	return Options{From: f, To: u}
}

// calendar wraps lines (header properties and VEVENT bodies, "\n"
// separated) in a VCALENDAR with CRLF line ends.
func calendar(header string, events ...string) string {
	lines := []string{"BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//ax//ics test//EN"}
	if header != "" {
		lines = append(lines, strings.Split(header, "\n")...)
	}
	for _, ev := range events {
		lines = append(lines, "BEGIN:VEVENT")
		lines = append(lines, strings.Split(ev, "\n")...)
		lines = append(lines, "END:VEVENT")
	}
	lines = append(lines, "END:VCALENDAR")
	return strings.Join(lines, "\r\n") + "\r\n"
}

func TestParse_Fixtures(t *testing.T) {
	cnYear := window(t, "2026-01-01", "2027-01-01", "Asia/Shanghai")
	cnUTC := cnYear
	cnUTC.Location = time.UTC
	cnOctober := window(t, "2026-10-03", "2026-10-05", "Asia/Shanghai")
	cnNoonTo := cnOctober
	cnNoonTo.To = cnNoonTo.To.Add(12 * time.Hour)
	china := []string{
		"2026-01-01/2026-01-03", // 元旦, DTEND exclusive
		"2026-02-15/2026-02-23", // 春节
		"2026-04-04/2026-04-06", // 清明节, DURATION:P3D
		"2026-05-01/2026-05-05", // 劳动节
		"2026-06-19/2026-06-21", // 端午节
		"2026-08-12",            // 17:00Z is 01:00 the next day in Shanghai
		"2026-09-25/2026-09-27", // 中秋节
		"2026-10-01/2026-10-07", // 国庆节 golden week
	}
	chinaUTC := append([]string(nil), china...)
	chinaUTC[5] = "2026-08-11"

	tests := []struct {
		name, file  string
		opt         Options
		wantZone    string
		wantExclude []string
		wantEvents  int
		wantSkipped []string
	}{
		{
			name: "US holidays, two years in New York", file: "us-holidays.ics",
			opt:      window(t, "2026-01-01", "2028-01-01", "America/New_York"),
			wantZone: "America/New_York",
			wantExclude: []string{
				"2026-01-01",            // one-off
				"2026-01-19",            // yearly 3rd Monday of January since 2021
				"2026-05-25",            // yearly last Monday of May
				"2026-07-03",            // RECURRENCE-ID moves 07-04 (a Saturday) to the Friday
				"2026-09-07",            // 1st Monday of September
				"2026-11-26/2026-11-27", // two-day all-day event
				"2026-12-24/2026-12-25", // Christmas Eve merged with the yearly Christmas
				"2026-12-31/2027-01-01", // 22:00-02:00 party crosses midnight
				"2027-01-18",
				"2027-05-31",
				"2027-07-04",
				"2027-09-06",
				// 2027-12-25: EXDATE
			},
			wantEvents:  11,
			wantSkipped: []string{`event "Company picnic": STATUS:CANCELLED`},
		},
		{
			name: "US holidays, a window of December 2026", file: "us-holidays.ics",
			opt:         window(t, "2026-12-01", "2027-01-01", "America/New_York"),
			wantZone:    "America/New_York",
			wantExclude: []string{"2026-12-24/2026-12-25", "2026-12-31"},
			wantEvents:  11,
			wantSkipped: []string{`event "Company picnic": STATUS:CANCELLED`},
		},
		{
			name: "China 2026, Asia/Shanghai from X-WR-TIMEZONE", file: "cn-holidays.ics",
			opt: cnYear, wantZone: "Asia/Shanghai", wantExclude: china, wantEvents: 8,
		},
		{
			name: "China 2026, Location UTC moves only the timed event", file: "cn-holidays.ics",
			opt: cnUTC, wantZone: "UTC", wantExclude: chinaUTC, wantEvents: 8,
		},
		{
			name: "golden week cut by a window ending at midnight", file: "cn-holidays.ics",
			opt: cnOctober, wantZone: "Asia/Shanghai", wantExclude: []string{"2026-10-03/2026-10-04"}, wantEvents: 8,
		},
		{
			name: "a window ending at noon lists that day", file: "cn-holidays.ics",
			opt: cnNoonTo, wantZone: "Asia/Shanghai", wantExclude: []string{"2026-10-03/2026-10-05"}, wantEvents: 8,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := Parse(f, tt.opt)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Timezone != tt.wantZone {
				t.Errorf("Timezone = %q, want %q", got.Timezone, tt.wantZone)
			}
			if !reflect.DeepEqual(got.Exclude, tt.wantExclude) {
				t.Errorf("Exclude =\n  %q\nwant\n  %q", got.Exclude, tt.wantExclude)
			}
			if got.Events != tt.wantEvents {
				t.Errorf("Events = %d, want %d", got.Events, tt.wantEvents)
			}
			if !reflect.DeepEqual(got.Skipped, tt.wantSkipped) {
				t.Errorf("Skipped = %q, want %q", got.Skipped, tt.wantSkipped)
			}
		})
	}
}

// TestParse_Events checks the rules on single events: DST in the three
// zones of issue 23, ends at midnight, DURATION, recurrences, overrides.
func TestParse_Events(t *testing.T) {
	ny2026 := window(t, "2026-01-01", "2027-01-01", "America/New_York")
	berlin2026 := window(t, "2026-01-01", "2027-01-01", "Europe/Berlin")
	sh2026 := window(t, "2026-01-01", "2027-01-01", "Asia/Shanghai")
	utc2026 := window(t, "2026-01-01", "2027-01-01", "UTC")
	// inZone sets Location to the window's zone.
	inZone := func(o Options) Options { o.Location = o.From.Location(); return o }

	tests := []struct {
		name, header string
		events       []string
		opt          Options
		want         []string
	}{
		{
			// 03:30Z on 03-09 is 23:30 EDT (-4) on 03-08; read as EST (-5) it would end on 03-08 at 23:30.
			name: "New York after spring forward (2026-03-08)", header: "X-WR-TIMEZONE:America/New_York",
			events: []string{"SUMMARY:late call\nDTSTART:20260309T033000Z\nDTEND:20260309T043000Z"},
			opt:    ny2026, want: []string{"2026-03-08/2026-03-09"},
		},
		{
			name: "New York, the skipped hour of 2026-03-08", header: "X-WR-TIMEZONE:America/New_York",
			events: []string{"SUMMARY:gap\nDTSTART;TZID=America/New_York:20260308T013000\nDTEND;TZID=America/New_York:20260308T033000"},
			opt:    ny2026, want: []string{"2026-03-08"},
		},
		{
			// Weekly at 23:30 local: the wall time holds across the change, so each occurrence
			// covers its day and the next; a fixed offset would shift 03-08 to 03-09/03-10.
			name:   "New York, weekly 23:30-00:30 across spring forward",
			events: []string{"SUMMARY:weekly\nDTSTART;TZID=America/New_York:20260301T233000\nDTEND;TZID=America/New_York:20260302T003000\nRRULE:FREQ=WEEKLY;COUNT=3"},
			opt:    inZone(ny2026), want: []string{"2026-03-01/2026-03-02", "2026-03-08/2026-03-09", "2026-03-15/2026-03-16"},
		},
		{
			// DURATION's days are nominal: midnight to midnight even though 03-08 has 23 hours.
			name:   "New York, DURATION:P1D from midnight of 2026-03-08",
			events: []string{"SUMMARY:day\nDTSTART;TZID=America/New_York:20260308T000000\nDURATION:P1D"},
			opt:    inZone(ny2026), want: []string{"2026-03-08"},
		},
		{
			name:   "New York, DURATION:PT24H from midnight of 2026-03-08 is exact",
			events: []string{"SUMMARY:24h\nDTSTART;TZID=America/New_York:20260308T000000\nDURATION:PT24H"},
			opt:    inZone(ny2026), want: []string{"2026-03-08/2026-03-09"},
		},
		{
			// 04:30Z on 11-02 is 23:30 EST (-5) on 11-01; read as EDT it would be 00:30 on 11-02.
			name: "New York after fall back (2026-11-01)", header: "X-WR-TIMEZONE:America/New_York",
			events: []string{"SUMMARY:night\nDTSTART:20261102T043000Z\nDTEND:20261102T045000Z"},
			opt:    ny2026, want: []string{"2026-11-01"},
		},
		{
			name: "New York, the repeated hour of 2026-11-01, ending at midnight", header: "X-WR-TIMEZONE:America/New_York",
			events: []string{
				"SUMMARY:twice\nDTSTART;TZID=America/New_York:20261101T013000\nDTEND;TZID=America/New_York:20261101T023000",
				"SUMMARY:evening\nDTSTART;TZID=America/New_York:20261101T220000\nDTEND;TZID=America/New_York:20261102T000000",
			},
			opt: ny2026, want: []string{"2026-11-01"},
		},
		{
			// 22:30Z on 03-29 is 00:30 CEST (+2) on 03-30; as CET (+1) it would be 23:30 on 03-29.
			name: "Berlin after spring forward (2026-03-29)", header: "X-WR-TIMEZONE:Europe/Berlin",
			events: []string{"SUMMARY:after\nDTSTART:20260329T223000Z\nDTEND:20260329T230000Z"},
			opt:    berlin2026, want: []string{"2026-03-30"},
		},
		{
			name:   "Berlin, the skipped 02:30 of 2026-03-29 and a floating time",
			events: []string{"SUMMARY:gap\nDTSTART;TZID=Europe/Berlin:20260329T023000\nDTEND;TZID=Europe/Berlin:20260329T033000", "SUMMARY:floating\nDTSTART:20260329T230000\nDTEND:20260330T010000"},
			opt:    inZone(berlin2026), want: []string{"2026-03-29/2026-03-30"},
		},
		{
			name: "Shanghai all-day events are civil dates, a timed one is in +08:00", header: "X-WR-TIMEZONE:Asia/Shanghai",
			events: []string{
				"SUMMARY:国庆节\nDTSTART;VALUE=DATE:20261001\nDTEND;VALUE=DATE:20261008",
				"SUMMARY:one day\nDTSTART;VALUE=DATE:20261020",
				"SUMMARY:UTC evening\nDTSTART:20261024T160000Z\nDTEND:20261024T170000Z",
			},
			opt: sh2026, want: []string{"2026-10-01/2026-10-07", "2026-10-20", "2026-10-25"},
		},
		{
			name:   "zero-length timed event covers its start date",
			events: []string{"SUMMARY:instant\nDTSTART:20260505T120000Z"},
			opt:    utc2026, want: []string{"2026-05-05"},
		},
		{
			name: "duplicates removed, consecutive days merged, TRANSP:TRANSPARENT kept",
			events: []string{
				"SUMMARY:a\nDTSTART;VALUE=DATE:20260601\nDTEND;VALUE=DATE:20260603\nTRANSP:TRANSPARENT",
				"SUMMARY:b\nDTSTART;VALUE=DATE:20260602\nDTEND;VALUE=DATE:20260604",
				"SUMMARY:c\nDTSTART;VALUE=DATE:20260604",
				"SUMMARY:d\nDTSTART;VALUE=DATE:20260601",
				"SUMMARY:e\nDTSTART;VALUE=DATE:20260606",
			},
			opt: sh2026, want: []string{"2026-06-01/2026-06-04", "2026-06-06"},
		},
		{
			name:   "RDATE and EXDATE lists, DTSTART excluded",
			events: []string{"SUMMARY:bridge days\nDTSTART;VALUE=DATE:20260102\nRDATE;VALUE=DATE:20260515,20261224\nRDATE;VALUE=DATE:20261231\nEXDATE;VALUE=DATE:20260102,20261231"},
			opt:    sh2026, want: []string{"2026-05-15", "2026-12-24"},
		},
		{
			name: "a cancelled override removes one occurrence",
			events: []string{
				"SUMMARY:monthly maintenance\nUID:m@x\nDTSTART;TZID=Europe/Berlin:20260105T220000\nDTEND;TZID=Europe/Berlin:20260105T230000\nRRULE:FREQ=MONTHLY;BYDAY=1MO;UNTIL=20260401T000000Z",
				"SUMMARY:monthly maintenance\nUID:m@x\nRECURRENCE-ID;TZID=Europe/Berlin:20260202T220000\nDTSTART;TZID=Europe/Berlin:20260202T220000\nDTEND;TZID=Europe/Berlin:20260202T230000\nSTATUS:CANCELLED",
			},
			opt: inZone(berlin2026), want: []string{"2026-01-05", "2026-03-02"},
		},
		{
			name: "an override without a UID replaces nothing",
			events: []string{
				"SUMMARY:yearly\nDTSTART;VALUE=DATE:20250704\nRRULE:FREQ=YEARLY",
				"SUMMARY:moved\nRECURRENCE-ID;VALUE=DATE:20260704\nDTSTART;VALUE=DATE:20260703",
			},
			opt: utc2026, want: []string{"2026-07-03/2026-07-04"},
		},
		{
			name: "a recurrence starting long before From, with COUNT",
			events: []string{
				"SUMMARY:daily since 2000\nDTSTART;VALUE=DATE:20000101\nRRULE:FREQ=DAILY",
				"SUMMARY:counted\nDTSTART;VALUE=DATE:20250101\nRRULE:FREQ=YEARLY;COUNT=3",
			},
			opt: window(t, "2026-12-30", "2027-01-02", "UTC"), want: []string{"2026-12-30/2027-01-01"},
		},
		{
			name:   "an event begun before From is cut to the window",
			events: []string{"SUMMARY:long\nDTSTART;VALUE=DATE:20251220\nDTEND;VALUE=DATE:20260105"},
			opt:    utc2026, want: []string{"2026-01-01/2026-01-04"},
		},
		{
			name:   "nothing in the window",
			events: []string{"SUMMARY:old\nDTSTART;VALUE=DATE:20200101"},
			opt:    sh2026, want: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(calendar(tt.header, tt.events...)), tt.opt)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got.Exclude, tt.want) {
				t.Errorf("Exclude = %q, want %q", got.Exclude, tt.want)
			}
		})
	}
}

func TestParse_Input(t *testing.T) {
	opt := window(t, "2026-01-01", "2027-01-01", "UTC")
	one := calendar("", "SUMMARY:a\nDTSTART;VALUE=DATE:20260301")
	two := calendar("", "SUMMARY:b\nDTSTART;VALUE=DATE:20260302")
	tests := []struct {
		name, in    string
		want        []string
		wantSkipped []string
	}{
		{name: "UTF-8 byte order mark", in: "\ufeff" + one, want: []string{"2026-03-01"}},
		{name: "LF line ends", in: strings.ReplaceAll(one, "\r\n", "\n"), want: []string{"2026-03-01"}},
		{name: "two VCALENDARs", in: one + "\r\n" + two + "\r\n\r\n", want: []string{"2026-03-01/2026-03-02"}},
		{
			name: "a VTODO is noted",
			in:   strings.Replace(one, "END:VCALENDAR", "BEGIN:VTODO\r\nUID:t1\r\nSUMMARY:file taxes\r\nEND:VTODO\r\nEND:VCALENDAR", 1),
			want: []string{"2026-03-01"}, wantSkipped: []string{`VTODO "file taxes": not an event`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.in), opt)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got.Exclude, tt.want) || !reflect.DeepEqual(got.Skipped, tt.wantSkipped) {
				t.Errorf("Exclude = %q, Skipped = %q; want %q, %q", got.Exclude, got.Skipped, tt.want, tt.wantSkipped)
			}
		})
	}
}

func TestParse_Errors(t *testing.T) {
	opt := window(t, "2026-01-01", "2027-01-01", "UTC")
	century := window(t, "2000-01-01", "2100-01-01", "UTC")
	tests := []struct {
		name, in string
		opt      Options
		want     string
	}{
		{name: "no From", in: calendar(""), opt: Options{To: opt.To}, want: "ics: From and To are required"},
		{name: "To before From", in: calendar(""), opt: Options{From: opt.To, To: opt.From}, want: "ics: To (2026-01-01T00:00:00Z) must be after From (2027-01-01T00:00:00Z)"},
		{name: "empty", in: " \r\n", opt: opt, want: "ics: not an iCalendar file: it is empty"},
		{name: "not an iCalendar", in: "hello, world\n", opt: opt, want: "ics: not an iCalendar file: ical: malformed content line: missing colon"},
		{name: "JSON", in: `{"exclude": ["2026-12-25"]}`, opt: opt, want: `ics: not an iCalendar file: ical: malformed component: expected BEGIN property, got "{\"EXCLUDE\""`},
		{name: "a bare VEVENT", in: "BEGIN:VEVENT\r\nEND:VEVENT\r\n", opt: opt, want: `ics: not an iCalendar file: ical: invalid toplevel component name: expected "VCALENDAR", got "VEVENT"`},
		{name: "cut short", in: "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nSUMMARY:x\r\n", opt: opt, want: "ics: not an iCalendar file: it ends inside a component (an END line is missing)"},
		{name: "second calendar cut short", in: calendar("") + "BEGIN:VCALENDAR\r\n", opt: opt, want: "ics: not an iCalendar file: it ends inside a component (an END line is missing)"},
		{name: "a parameter without a colon (the decoder panics)", in: "BEGIN:VCALENDAR\r\nDTSTART;VALUE=DATE\r\nEND:VCALENDAR\r\n", opt: opt, want: "ics: not an iCalendar file: malformed input: runtime error: index out of range [0] with length 0"},
		{name: "mismatched END", in: "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nEND:VTODO\r\nEND:VCALENDAR\r\n", opt: opt, want: `ics: not an iCalendar file: ical: malformed component: expected END property for "VEVENT", got "VTODO"`},
		{name: "unknown X-WR-TIMEZONE", in: calendar("X-WR-TIMEZONE:Mars/Olympus_Mons"), opt: opt, want: `ics: X-WR-TIMEZONE "Mars/Olympus_Mons": unknown time zone Mars/Olympus_Mons`},
		{name: "no DTSTART", in: calendar("", "SUMMARY:Boxing Day\nUID:26@x"), opt: opt, want: `ics: event "Boxing Day": no DTSTART`},
		{name: "named by UID", in: calendar("", "UID:26@x"), opt: opt, want: `ics: event "26@x": no DTSTART`},
		{name: "named by position", in: calendar("", "SUMMARY:ok\nDTSTART;VALUE=DATE:20260101", "DTEND;VALUE=DATE:20260101"), opt: opt, want: `ics: event "VEVENT #2": no DTSTART`},
		{name: "unknown TZID", in: calendar("", "SUMMARY:Landing\nDTSTART;TZID=Mars/Olympus_Mons:20261225T100000"), opt: opt, want: `ics: event "Landing": DTSTART "20261225T100000": unknown time zone Mars/Olympus_Mons`},
		{name: "Windows zone name", in: calendar("", "SUMMARY:Meeting\nDTSTART;TZID=W. Europe Standard Time:20261225T100000"), opt: opt, want: `ics: event "Meeting": DTSTART "20261225T100000": unknown time zone W. Europe Standard Time`},
		{name: "date without VALUE=DATE", in: calendar("", "SUMMARY:Sloppy\nDTSTART:20261225"), opt: opt, want: `ics: event "Sloppy": DTSTART "20261225": parsing time "20261225" as "20060102T150405": cannot parse "" as "T"`},
		{name: "bad RRULE", in: calendar("", "SUMMARY:Often\nDTSTART;VALUE=DATE:20260101\nRRULE:FREQ=SOMETIMES"), opt: opt, want: `ics: event "Often": RRULE "FREQ=SOMETIMES": undefined frequency: SOMETIMES`},
		{name: "two RRULEs", in: calendar("", "SUMMARY:Twice\nDTSTART;VALUE=DATE:20260101\nRRULE:FREQ=YEARLY\nRRULE:FREQ=MONTHLY"), opt: opt, want: `ics: event "Twice": 2 RRULE lines; one is supported`},
		{name: "RDATE period", in: calendar("", "SUMMARY:Period\nDTSTART:20260101T100000Z\nRDATE;VALUE=PERIOD:20260201T100000Z/PT1H"), opt: opt, want: `ics: event "Period": RDATE "20260201T100000Z/PT1H": VALUE=PERIOD is not supported`},
		{name: "bad EXDATE", in: calendar("", "SUMMARY:Ex\nDTSTART;VALUE=DATE:20260101\nRRULE:FREQ=YEARLY\nEXDATE;VALUE=DATE:2026-12-25"), opt: opt, want: `ics: event "Ex": EXDATE "2026-12-25": parsing time "2026-12-25" as "20060102": cannot parse "-12-25" as "01"`},
		{name: "DTEND before DTSTART", in: calendar("", "SUMMARY:Backwards\nDTSTART;VALUE=DATE:20261226\nDTEND;VALUE=DATE:20261225"), opt: opt, want: `ics: event "Backwards": DTEND "20261225" is before DTSTART`},
		{name: "DTEND of another type", in: calendar("", "SUMMARY:Mixed\nDTSTART;VALUE=DATE:20261225\nDTEND:20261226T000000Z"), opt: opt, want: `ics: event "Mixed": DTEND "20261226T000000Z" and DTSTART must both be dates or both date-times`},
		{name: "bad DURATION", in: calendar("", "SUMMARY:Long\nDTSTART;VALUE=DATE:20261225\nDURATION:3 days"), opt: opt, want: `ics: event "Long": DURATION "3 days": ical: invalid duration: expected 'P'`},
		{name: "negative DURATION", in: calendar("", "SUMMARY:Neg\nDTSTART;VALUE=DATE:20261225\nDURATION:-P1D"), opt: opt, want: `ics: event "Neg": DURATION "-P1D": negative`},
		{name: "bad RECURRENCE-ID", in: calendar("", "SUMMARY:Moved\nUID:m\nRECURRENCE-ID;VALUE=DATE:soon\nDTSTART;VALUE=DATE:20261225"), opt: opt, want: `ics: event "Moved": RECURRENCE-ID "soon": parsing time "soon" as "20060102": cannot parse "soon" as "2006"`},
		{name: "a daily RRULE over a century", in: calendar("", "SUMMARY:Every day\nDTSTART;VALUE=DATE:19900101\nRRULE:FREQ=DAILY"), opt: century, want: `ics: event "Every day": more than 10000 dates (ics.MaxDates) between 2000-01-01 and 2099-12-31; narrow From and To`},
		{name: "a minutely RRULE", in: calendar("", "SUMMARY:Every minute\nDTSTART:20260101T000000Z\nRRULE:FREQ=MINUTELY"), opt: century, want: `ics: event "Every minute": more than 1000000 recurrence steps (ics.MaxSteps); narrow From and To`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.in), tt.opt)
			if err == nil {
				t.Fatalf("Parse = %+v, want error %q", got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q\nwant    %q", err, tt.want)
			}
		})
	}
}
