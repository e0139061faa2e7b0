package model

import (
	"encoding/json"
	"testing"
	"time"
)

func TestSubmitResult_AppendJSONMatchesEncodingJSON(t *testing.T) {
	at := Time{time.Date(2026, 11, 30, 4, 5, 6, 789_000_000, time.UTC)}
	for _, tc := range []struct {
		name string
		r    SubmitResult
	}{
		{"nil", SubmitResult{}},
		{"empty", SubmitResult{Instances: []Submitted{}}},
		{"one", SubmitResult{Instances: []Submitted{{ID: "00000000000000a1", ScheduledAt: at, State: StateScheduled}}}},
		{"existing and zero time", SubmitResult{Instances: []Submitted{
			{ID: "1", ScheduledAt: at, State: StateReady, Existing: true},
			{ID: "2", State: StateScheduled},
		}}},
		{"escapes", SubmitResult{Instances: []Submitted{{ID: "a\"b\\c<d>&\u00e9\n", ScheduledAt: at, State: "x\ty"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type plain SubmitResult // no AppendJSON: what encoding/json writes
			want, err := json.Marshal(plain(tc.r))
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.r.AppendJSON(nil); string(got) != string(want) {
				t.Fatalf("AppendJSON\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestTimeAndDuration_FastPathsMatchSlowPaths(t *testing.T) {
	for _, in := range []string{`"2026-11-30T04:05:06.789Z"`, `"2026-11-30T05:05:06+01:00"`, `"2026-11-30T04:05:06.789\u005a"`, `null`, `""`, `12`, `"bogus"`} {
		var tm Time
		err := json.Unmarshal([]byte(in), &tm)
		var s string
		slowErr := json.Unmarshal([]byte(in), &s)
		if in == "null" {
			if err != nil || !tm.IsZero() {
				t.Errorf("%s: got %v, %v", in, tm, err)
			}
			continue
		}
		if slowErr != nil {
			if err == nil {
				t.Errorf("%s: accepted as %v, want an error", in, tm)
			}
			continue
		}
		want, perr := time.Parse(time.RFC3339Nano, s)
		switch {
		case s == "":
			if err != nil || !tm.IsZero() {
				t.Errorf("%s: got %v, %v", in, tm, err)
			}
		case perr != nil:
			if err == nil {
				t.Errorf("%s: accepted as %v, want an error", in, tm)
			}
		case err != nil || !tm.Equal(want):
			t.Errorf("%s: got %v, %v; want %v", in, tm, err, want)
		}
	}
	for in, want := range map[string]time.Duration{`"90s"`: 90 * time.Second, `"1h\u0033\u0030m"`: 90 * time.Minute, `""`: 0} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.Std() != want {
			t.Errorf("%s: got %v, %v; want %v", in, d.Std(), err, want)
		}
	}
	for _, in := range []string{`90`, `"ninety"`, `"1h\"`} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("%s: accepted as %v, want an error", in, d.Std())
		}
	}
	b, _ := json.Marshal(Time{time.Date(2026, 11, 30, 5, 5, 6, 0, time.FixedZone("x", 3600))})
	if string(b) != `"2026-11-30T04:05:06.000Z"` {
		t.Errorf("Time marshals as %s", b)
	}
}
