package execution

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// calendarChecks runs calendars and blackout windows through real
// agents (issue 23, items 2 and 6), writing and reading through a
// follower: a calendar's days are skipped in a task's next fires, a
// calendar in use cannot be deleted, and a window holds a per-second
// task's fires for five seconds of every ten, the misfires naming it.
func calendarChecks(t *testing.T, ctx context.Context, c *localcluster.Cluster) {
	follower, _, err := c.Follower(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fc := client.New(client.Config{Addrs: []string{follower.HTTPAddr}})
	sh, _ := time.LoadLocation("Asia/Shanghai")
	tomorrow := time.Now().In(sh).AddDate(0, 0, 1).Format(time.DateOnly)

	t.Run("calendar", func(t *testing.T) {
		cal := calendar.Calendar{Timezone: "Asia/Shanghai", Exclude: []string{tomorrow, "sat", "sun"}}
		var out calendar.Calendar
		testkit.Eventually(t, 30*time.Second, func() error { // protocol 8
			return fc.Do(ctx, client.Request{Method: http.MethodPut, Path: "/v1/calendars/workdays", Body: cal}, &out)
		})
		task := &model.Task{Name: "workday-9", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 9 * * *",
			Timezone: "Asia/Shanghai", Calendars: []string{"workdays"}}, Action: model.Action{Type: model.ActionShell, Command: "true"}}
		if _, err := fc.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		got, err := fc.GetTask(ctx, "workday-9")
		if err != nil || len(got.NextFireTimes) < 5 {
			t.Fatalf("workday-9: %+v %v, want its next fires", got, err)
		}
		for _, f := range got.NextFireTimes {
			d := f.In(sh)
			if d.Weekday() == time.Saturday || d.Weekday() == time.Sunday || d.Format(time.DateOnly) == tomorrow || d.Hour() != 9 {
				t.Errorf("fire %s: on a day the calendar excludes", d)
			}
		}
		err = fc.Do(ctx, client.Request{Method: http.MethodDelete, Path: "/v1/calendars/workdays"}, nil)
		var apiErr *model.Error
		if !errors.As(err, &apiErr) || apiErr.Code != model.CodePrecondition || !strings.Contains(err.Error(), "workday-9") {
			t.Errorf("deleting a calendar in use: %v, want failed_precondition naming workday-9", err)
		}
	})

	t.Run("blackout window", func(t *testing.T) {
		w := calendar.Window{Cron: "0/10 * * * * *", Duration: model.Duration(5 * time.Second), Selector: map[string]string{"hold": "yes"}}
		var out calendar.Window
		if err := fc.Do(ctx, client.Request{Method: http.MethodPut, Path: "/v1/windows/half", Body: w}, &out); err != nil {
			t.Fatal(err)
		}
		task := &model.Task{Name: "held-tick", Labels: map[string]string{"hold": "yes"},
			Trigger: model.Trigger{Type: model.TriggerCron, Expression: "* * * * * *"},
			Action:  model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{Catchup: "none"}}
		if _, err := fc.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		var read calendar.Window
		if err := fc.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/windows/half"}, &read); err != nil ||
			read.Status == nil || !slices.Contains(read.Status.Tasks, "held-tick") || read.Status.NextFrom == nil {
			t.Fatalf("window read through the follower: %+v %v, want its status naming held-tick", read.Status, err)
		}
		// Until a hold has begun and ended after the task's first fire.
		testkit.Eventually(t, 40*time.Second, func() error {
			ev, err := fc.TaskEvents(ctx, "held-tick")
			if err != nil {
				return err
			}
			for _, e := range ev.Events {
				if e.Type == "misfire" && strings.Contains(e.Message, "held back by blackout window half") {
					return nil
				}
			}
			return errors.New("no misfire naming the window yet")
		})
		for _, in := range instancesOf(t, fc, "held-tick") {
			if s := in.ScheduledAt.UTC().Second() % 10; s < 5 {
				t.Errorf("instance %s scheduled at %s: inside the window (second %% 10 = %d)", in.ID, in.ScheduledAt, s)
			}
		}
		if _, err := fc.PauseTask(ctx, "held-tick"); err != nil {
			t.Fatal(err)
		}
	})
}
