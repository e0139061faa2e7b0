package live

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

func TestUpcomingFires(t *testing.T) {
	from := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := model.Time{Time: from.Add(10 * time.Minute)}
	tasks := []*model.Task{
		{Name: "hourly", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 * * * *"}},
		{Name: "paused", Paused: true, Trigger: model.Trigger{Type: model.TriggerCron, Expression: "* * * * *"}},
		{Name: "event", Trigger: model.Trigger{Type: model.TriggerEvent}},
		{Name: "every20m", Trigger: model.Trigger{Type: model.TriggerInterval, Every: model.Duration(20 * time.Minute)}},
		{Name: "once", Trigger: model.Trigger{Type: model.TriggerOnce, At: &at}},
	}
	render := func(u *Upcoming) string {
		var parts []string
		for _, f := range u.Fires {
			parts = append(parts, f.Task+"@"+f.Time.Format("15:04"))
		}
		return fmt.Sprintf("%s truncated=%v", strings.Join(parts, " "), u.Truncated)
	}
	tests := []struct {
		name string
		q    UpcomingQuery
		want string
	}{
		{"every unpaused schedule, by time", UpcomingQuery{From: from, To: from.Add(time.Hour), Limit: 100},
			"hourly@12:00 every20m@12:00 once@12:10 every20m@12:20 every20m@12:40 hourly@13:00 every20m@13:00 truncated=false"},
		{"limited", UpcomingQuery{From: from, To: from.Add(time.Hour), Limit: 4},
			"hourly@12:00 every20m@12:00 once@12:10 every20m@12:20 truncated=true"},
		{"one task", UpcomingQuery{From: from, To: from.Add(2 * time.Hour), Limit: 100, Task: "hourly"},
			"hourly@12:00 hourly@13:00 hourly@14:00 truncated=false"},
		{"a paused task alone", UpcomingQuery{From: from, To: from.Add(time.Hour), Limit: 100, Task: "paused"}, " truncated=false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := UpcomingFires(tasks, tt.q)
			if got := render(u); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if u.Fires == nil || !u.From.Equal(tt.q.From) || !u.To.Equal(tt.q.To) {
				t.Errorf("from/to/fires: %+v", u)
			}
		})
	}
}

func TestLiveFilter_Match(t *testing.T) {
	in := &Event{Type: TypeInstance, Instance: &Instance{ID: "0000000000000007", Task: "a"}}
	task := &Event{Type: TypeTask, Task: &Task{Name: "a"}}
	tests := []struct {
		f            Filter
		wantInstance bool
		wantTask     bool
	}{
		{Filter{}, true, true},
		{Filter{Task: "a"}, true, true},
		{Filter{Task: "b"}, false, false},
		{Filter{Instance: "0000000000000007"}, true, false},
		{Filter{Instance: "0000000000000008"}, false, false},
		{Filter{Task: "b", Instance: "0000000000000007"}, false, false},
	}
	for _, tt := range tests {
		if got := tt.f.Match(in); got != tt.wantInstance {
			t.Errorf("%+v on an instance event: got %v, want %v", tt.f, got, tt.wantInstance)
		}
		if got := tt.f.Match(task); got != tt.wantTask {
			t.Errorf("%+v on a task event: got %v, want %v", tt.f, got, tt.wantTask)
		}
	}
}

func TestParseWithin(t *testing.T) {
	for in, want := range map[string]time.Duration{"1h": time.Hour, "90m": 90 * time.Minute, "2d": 48 * time.Hour, "0d": 0} {
		if got, ok := ParseWithin(in); !ok || got != want {
			t.Errorf("ParseWithin(%q): got %v %v, want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "abc", "1.5d", "d", "-1d", "1w"} {
		if _, ok := ParseWithin(in); ok {
			t.Errorf("ParseWithin(%q): accepted", in)
		}
	}
}

// BenchmarkUpcomingFires: 1,000 every-minute cron tasks, a day ahead,
// limit 500 (schedules parsed on every call, as the agent does).
func BenchmarkUpcomingFires(b *testing.B) {
	tasks := make([]*model.Task, 1000)
	for i := range tasks {
		tasks[i] = &model.Task{Name: fmt.Sprintf("task-%04d", i), Trigger: model.Trigger{Type: model.TriggerCron, Expression: "* * * * *", Timezone: "Europe/Berlin"}}
	}
	from := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	q := UpcomingQuery{From: from, To: from.Add(24 * time.Hour), Limit: 500}
	b.ReportAllocs()
	for b.Loop() {
		if u := UpcomingFires(tasks, q); len(u.Fires) != 500 || !u.Truncated {
			b.Fatalf("got %d fires", len(u.Fires))
		}
	}
}
