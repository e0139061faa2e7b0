package trigger

import (
	"errors"
	"testing"
)

func TestParseCron_Errors(t *testing.T) {
	tests := []struct {
		name      string
		expr      string
		tz        string
		wantField string
		wantMsg   string
	}{
		{"second out of range", "61 * * * * *", "", FieldExpression, `second field "61": end of range (61) above maximum (59)`},
		{"minute out of range", "61 * * * *", "", FieldExpression, `minute field "61": end of range (61) above maximum (59)`},
		{"hour out of range", "0 24 * * *", "", FieldExpression, `hour field "24": end of range (24) above maximum (23)`},
		{"hour in a list", "0 5,61 * * *", "", FieldExpression, `hour field "5,61": end of range (61) above maximum (23)`},
		{"day-of-month zero", "0 0 0 * *", "", FieldExpression, `day-of-month field "0": beginning of range (0) below minimum (1)`},
		{"day-of-month 32", "0 0 32 * *", "", FieldExpression, `day-of-month field "32": end of range (32) above maximum (31)`},
		{"month 13", "0 0 1 13 *", "", FieldExpression, `month field "13": end of range (13) above maximum (12)`},
		{"month name", "0 0 1 foo *", "", FieldExpression, `month field "foo": invalid value "foo"`},
		{"day-of-week 7", "0 0 * * 7", "", FieldExpression, `day-of-week field "7": end of range (7) above maximum (6)`},
		{"day-of-week reversed names", "0 0 * * mon-sun", "", FieldExpression, `day-of-week field "mon-sun": beginning of range (1) beyond end of range (0)`},
		{"day-of-week in 6 fields", "0 0 0 * * 8", "", FieldExpression, `day-of-week field "8": end of range (8) above maximum (6)`},
		{"zero step", "*/0 * * * *", "", FieldExpression, `minute field "*/0": step of range should be a positive number`},
		{"negative step", "*/-5 * * * *", "", FieldExpression, `minute field "*/-5": negative number (-5) not allowed`},
		{"leading minus", "-5 * * * *", "", FieldExpression, `minute field "-5": missing number`},
		{"too many hyphens", "1-2-3 * * * *", "", FieldExpression, `minute field "1-2-3": too many hyphens`},
		{"too many slashes", "1/2/3 * * * *", "", FieldExpression, `minute field "1/2/3": too many slashes`},
		{"empty list", ", * * * *", "", FieldExpression, `minute field ",": no values`},
		{"first bad field wins", "x y * * *", "", FieldExpression, `minute field "x": invalid value "x"`},
		{"4 fields", "* * * *", "", FieldExpression, "expected 5 or 6 fields, got 4"},
		{"7 fields", "0 0 0 * * * *", "", FieldExpression, "expected 5 or 6 fields, got 7"},
		{"empty", "", "", FieldExpression, "empty expression"},
		{"blank", "   ", "", FieldExpression, "empty expression"},
		{"CRON_TZ prefix", "CRON_TZ=UTC 0 * * * *", "", FieldExpression, "TZ= and CRON_TZ= prefixes are not allowed; set the timezone field instead"},
		{"TZ prefix", "TZ=Europe/Berlin 0 * * * *", "", FieldExpression, "TZ= and CRON_TZ= prefixes are not allowed; set the timezone field instead"},
		{"unknown descriptor", "@fortnightly", "", FieldExpression, `unknown descriptor "@fortnightly"`},
		{"descriptor with fields", "@daily 5", "", FieldExpression, `unknown descriptor "@daily 5"`},
		{"everyday", "@everyday", "", FieldExpression, `unknown descriptor "@everyday"`},
		{"every without duration", "@every", "", FieldExpression, `@every needs a duration, e.g. "@every 5m"`},
		{"every bad duration", "@every 1d", "", FieldExpression, `@every duration "1d" is not a Go duration such as 90s, 5m or 1h30m`},
		{"every below 1s", "@every 500ms", "", FieldExpression, "@every duration 500ms is below the minimum of 1s"},
		{"every zero", "@every 0s", "", FieldExpression, "@every duration 0s is below the minimum of 1s"},
		{"every negative", "@every -1m", "", FieldExpression, "@every duration -1m0s is below the minimum of 1s"},
		{"every fractional seconds", "@every 1500ms", "", FieldExpression, "@every duration 1.5s is not a whole number of seconds"},
		{"unknown timezone", "0 * * * *", "Mars/Olympus", FieldTimezone, `unknown timezone "Mars/Olympus"`},
		{"Local timezone", "0 * * * *", "Local", FieldTimezone, `"Local" is not allowed; use an IANA name such as "Europe/Berlin"`},
		{"timezone with every", "@every 1m", "Nowhere/City", FieldTimezone, `unknown timezone "Nowhere/City"`},
		{"timezone with descriptor", "@daily", "Nowhere/City", FieldTimezone, `unknown timezone "Nowhere/City"`},
		{"expression reported before timezone", "61 * * * *", "Nowhere/City", FieldExpression, `minute field "61": end of range (61) above maximum (59)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseCron(tt.expr, tt.tz)
			if err == nil {
				t.Fatalf("got schedule %v, want error", s)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got error %T %v, want *Error", err, err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("got errors.Is(err, ErrInvalid) false, want true")
			}
			if e.Field != tt.wantField {
				t.Errorf("got field %q, want %q", e.Field, tt.wantField)
			}
			if e.Message != tt.wantMsg {
				t.Errorf("got message %q, want %q", e.Message, tt.wantMsg)
			}
			if want := "invalid " + tt.wantField + ": " + tt.wantMsg; err.Error() != want {
				t.Errorf("got Error() %q, want %q", err.Error(), want)
			}
		})
	}
}

func TestParseCron_Valid(t *testing.T) {
	tests := []struct {
		name string
		expr string
		tz   string
	}{
		{"5 fields", "0 2 * * *", ""},
		{"6 fields", "30 0 2 * * *", "UTC"},
		{"names upper case", "0 9 * JAN-MAR MON-FRI", "Europe/Berlin"},
		{"question mark", "0 0 ? * *", ""},
		{"surrounding blanks", "  0 0 * * *  ", ""},
		{"tabs between fields", "0\t0\t*\t*\t*", ""},
		{"ranges steps lists", "1-59/2 0,12 1-15 */3 1-5", "Asia/Shanghai"},
		{"yearly", "@yearly", ""},
		{"annually", "@annually", ""},
		{"monthly", "@monthly", ""},
		{"weekly", "@weekly", ""},
		{"daily", "@daily", ""},
		{"midnight", "@midnight", ""},
		{"hourly", "@hourly", "America/New_York"},
		{"every", "@every 1h30m", ""},
		{"every 1s", "@every 1s", ""},
		{"explicit UTC", "0 0 * * *", "UTC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseCron(tt.expr, tt.tz); err != nil {
				t.Errorf("got error %v, want nil", err)
			}
		})
	}
}
