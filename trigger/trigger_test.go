package trigger

import (
	"errors"
	"testing"
	"time"
)

func TestInterval_Next(t *testing.T) {
	start := mustTime(t, "2025-05-17T10:00:00.25+02:00")
	tests := []struct {
		name  string
		every time.Duration
		start time.Time
		after string
		n     int
		want  []string
	}{
		{"before start fires at start", time.Hour, start, "2025-01-01T00:00:00Z", 2,
			[]string{"2025-05-17T10:00:00.25+02:00", "2025-05-17T11:00:00.25+02:00"}},
		{"at start is strictly after", time.Hour, start, "2025-05-17T10:00:00.25+02:00", 1,
			[]string{"2025-05-17T11:00:00.25+02:00"}},
		{"between fires", 90 * time.Minute, start, "2025-05-17T11:00:00+02:00", 2,
			[]string{"2025-05-17T11:30:00.25+02:00", "2025-05-17T13:00:00.25+02:00"}},
		{"sub-second period", 1500 * time.Millisecond, start, "2025-05-17T10:00:01+02:00", 2,
			[]string{"2025-05-17T10:00:01.75+02:00", "2025-05-17T10:00:03.25+02:00"}},
		{"far future beyond a Duration", 7 * time.Second, start, "2500-01-01T00:00:00Z", 1,
			[]string{"2500-01-01T02:00:01.25+02:00"}},
		{"zero start is the Unix epoch", time.Hour, time.Time{}, "2025-05-17T10:20:30Z", 1,
			[]string{"2025-05-17T11:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Interval(tt.every, tt.start)
			if err != nil {
				t.Fatalf("Interval: %v", err)
			}
			got := NextN(s, mustTime(t, tt.after), tt.n)
			if g := formatNano(got); !equalStrings(g, tt.want) {
				t.Errorf("got %q, want %q", g, tt.want)
			}
		})
	}
}

func TestInterval_Errors(t *testing.T) {
	tests := []struct {
		name    string
		every   time.Duration
		wantMsg string
	}{
		{"zero", 0, "must be at least 1s, got 0s"},
		{"negative", -time.Minute, "must be at least 1s, got -1m0s"},
		{"below 1s", 999 * time.Millisecond, "must be at least 1s, got 999ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Interval(tt.every, time.Time{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got error %v, want *Error", err)
			}
			if e.Field != FieldEvery || e.Message != tt.wantMsg {
				t.Errorf("got %q %q, want %q %q", e.Field, e.Message, FieldEvery, tt.wantMsg)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("got errors.Is(err, ErrInvalid) false, want true")
			}
		})
	}
}

func TestOnce_Next(t *testing.T) {
	at := mustTime(t, "2025-05-17T10:00:00Z")
	tests := []struct {
		name  string
		at    time.Time
		after time.Time
		want  time.Time
	}{
		{"before", at, at.Add(-time.Nanosecond), at},
		{"at", at, at, time.Time{}},
		{"after", at, at.Add(time.Hour), time.Time{}},
		{"zero never fires", time.Time{}, time.Time{}.Add(-time.Hour), time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Once(tt.at).Next(tt.after); !got.Equal(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBetween(t *testing.T) {
	hourly := mustParseCron(t, "0 * * * *", "")
	tests := []struct {
		name     string
		s        Schedule
		from, to string
		limit    int
		want     []string
	}{
		{"half-open range", hourly, "2025-05-17T10:00:00Z", "2025-05-17T13:00:00Z", 10,
			[]string{"2025-05-17T11:00:00Z", "2025-05-17T12:00:00Z", "2025-05-17T13:00:00Z"}},
		{"limit", hourly, "2025-05-17T10:00:00Z", "2025-05-18T10:00:00Z", 2,
			[]string{"2025-05-17T11:00:00Z", "2025-05-17T12:00:00Z"}},
		{"zero limit", hourly, "2025-05-17T10:00:00Z", "2025-05-18T10:00:00Z", 0, nil},
		{"empty range", hourly, "2025-05-17T10:00:00Z", "2025-05-17T10:59:59Z", 10, nil},
		{"to before from", hourly, "2025-05-17T10:00:00Z", "2025-05-17T09:00:00Z", 10, nil},
		{"once inside", Once(mustTime(t, "2025-05-17T10:30:00Z")), "2025-05-17T10:00:00Z", "2025-05-17T11:00:00Z", 10,
			[]string{"2025-05-17T10:30:00Z"}},
		{"impossible spec", mustParseCron(t, "0 0 30 2 *", ""), "2025-01-01T00:00:00Z", "2030-01-01T00:00:00Z", 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkTimes(t, Between(tt.s, mustTime(t, tt.from), mustTime(t, tt.to), tt.limit), tt.want)
		})
	}
}

func TestNextN(t *testing.T) {
	after := mustTime(t, "2025-05-17T10:00:00Z")
	tests := []struct {
		name string
		s    Schedule
		n    int
		want []string
	}{
		{"n times", mustParseCron(t, "@every 1m", ""), 3,
			[]string{"2025-05-17T10:01:00Z", "2025-05-17T10:02:00Z", "2025-05-17T10:03:00Z"}},
		{"zero n", mustParseCron(t, "@every 1m", ""), 0, nil},
		{"schedule ends", Once(after.Add(time.Minute)), 3, []string{"2025-05-17T10:01:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkTimes(t, NextN(tt.s, after, tt.n), tt.want)
		})
	}
}

func formatNano(ts []time.Time) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Format(time.RFC3339Nano))
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
