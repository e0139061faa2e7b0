package trigger

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// counting wraps a schedule and counts its Next calls.
type counting struct {
	Schedule
	n int
}

func (c *counting) Next(after time.Time) time.Time { c.n++; return c.Schedule.Next(after) }

func TestMerge(t *testing.T) {
	from := mustTime(t, "2026-03-01T12:00:00Z")
	every := func(d time.Duration, start string) Schedule {
		s, err := Interval(d, mustTime(t, start))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	render := func(fs []Fire) string {
		var parts []string
		for _, f := range fs {
			parts = append(parts, fmt.Sprintf("%d@%s", f.Index, f.Time.UTC().Format("15:04")))
		}
		return strings.Join(parts, " ")
	}
	tests := []struct {
		name          string
		scheds        []Schedule
		to            time.Duration
		limit         int
		want          string
		wantTruncated bool
	}{
		{"merged by time, ties by index", []Schedule{every(20*time.Minute, "2026-01-01T00:00:00Z"), mustParseCron(t, "*/30 * * * *", "UTC")},
			time.Hour, 100, "0@12:00 1@12:00 0@12:20 1@12:30 0@12:40 0@13:00 1@13:00", false},
		{"truncated at the limit", []Schedule{every(20*time.Minute, "2026-01-01T00:00:00Z"), mustParseCron(t, "*/30 * * * *", "UTC")},
			time.Hour, 3, "0@12:00 1@12:00 0@12:20", true},
		{"exactly the limit is not truncated", []Schedule{mustParseCron(t, "*/30 * * * *", "UTC")}, time.Hour, 3, "0@12:00 0@12:30 0@13:00", false},
		{"once, ended schedules and nil", []Schedule{Once(from.Add(-time.Minute)), nil, Once(from.Add(5 * time.Minute))}, time.Hour, 10, "2@12:05", false},
		{"nothing in range", []Schedule{Once(from.Add(2 * time.Hour))}, time.Hour, 10, "", false},
		{"zero limit", []Schedule{mustParseCron(t, "* * * * *", "UTC")}, time.Hour, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, truncated := Merge(tt.scheds, from, from.Add(tt.to), tt.limit)
			if render(got) != tt.want || truncated != tt.wantTruncated {
				t.Errorf("got %q truncated=%v, want %q truncated=%v", render(got), truncated, tt.want, tt.wantTruncated)
			}
		})
	}
}

// TestMerge_BoundedWork: a schedule is iterated only as far as its fires
// are returned, not to the end of the range.
func TestMerge_BoundedWork(t *testing.T) {
	from := mustTime(t, "2026-03-01T12:00:00Z")
	var scheds []Schedule
	var counts []*counting
	for range 100 {
		c := &counting{Schedule: mustParseCron(t, "* * * * *", "UTC")}
		counts = append(counts, c)
		scheds = append(scheds, c)
	}
	fires, truncated := Merge(scheds, from, from.Add(7*24*time.Hour), 500)
	if len(fires) != 500 || !truncated {
		t.Fatalf("got %d fires truncated=%v, want 500 and truncated", len(fires), truncated)
	}
	total := 0
	for _, c := range counts {
		total += c.n
	}
	if total > 500+100 {
		t.Errorf("Next called %d times, want at most %d", total, 600)
	}
}
