package model

import (
	"testing"
	"time"
)

// TestDeadline_At: within, by and both, across the DST changes of
// America/New_York, Europe/Berlin and Asia/Shanghai (none): a by in a
// spring-forward gap moves forward by the gap, one repeated by a
// fall-back is its first.
func TestDeadline_At(t *testing.T) {
	zone := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	ny, berlin, shanghai := zone("America/New_York"), zone("Europe/Berlin"), zone("Asia/Shanghai")
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name  string
		d     Deadline
		fired string
		loc   *time.Location
		want  string
	}{
		{"within", Deadline{Within: Duration(90 * time.Minute)}, "2026-06-01T10:00:00Z", time.UTC, "2026-06-01T11:30:00Z"},
		{"by, same day", Deadline{By: "06:00"}, "2026-06-01T01:00:00Z", shanghai, "2026-06-01T22:00:00Z"}, // 09:00 CST fire, next 06:00 is tomorrow's
		{"by, the earlier of both", Deadline{Within: Duration(8 * time.Hour), By: "12:00"}, "2026-06-01T02:00:00Z", shanghai, "2026-06-01T04:00:00Z"},
		{"by at the fire time", Deadline{By: "10:00"}, "2026-06-01T08:00:00Z", berlin, "2026-06-01T08:00:00Z"},
		{"berlin spring gap", Deadline{By: "02:30"}, "2026-03-29T00:00:00Z", berlin, "2026-03-29T01:30:00Z"}, // 03:30 CEST
		{"berlin fall-back: the first 02:30", Deadline{By: "02:30"}, "2026-10-24T23:00:00Z", berlin, "2026-10-25T00:30:00Z"},
		{"new york spring gap", Deadline{By: "02:30"}, "2026-03-08T05:00:00Z", ny, "2026-03-08T07:30:00Z"}, // 03:30 EDT
		{"new york fall-back: the first 01:30", Deadline{By: "01:30"}, "2026-11-01T04:00:00Z", ny, "2026-11-01T05:30:00Z"},
		{"within across the fall-back is elapsed time", Deadline{Within: Duration(2 * time.Hour)}, "2026-11-01T04:00:00Z", ny, "2026-11-01T06:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.d.At(utc(tc.fired), tc.loc)
			if !got.Equal(utc(tc.want)) {
				t.Fatalf("At(%s) = %s (%s), want %s", tc.fired, got.UTC().Format(time.RFC3339), got, tc.want)
			}
		})
	}
	for _, bad := range []Deadline{{}, {By: "24:00"}, {By: "6:00"}, {Within: Duration(-time.Second)}, {Within: Duration(time.Millisecond)}} {
		if err := bad.validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
