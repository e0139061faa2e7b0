package tasks

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
	"github.com/ax-scheduler/ax/trigger"
)

// overviewWait bounds what the overview waits for the cluster's status
// and the leader's executor list; what does not answer in time is
// reported as an error in the overview.
const overviewWait = 2 * time.Second

// Overview implements api.ConsoleBackend: this node's state machine
// aggregates, its clock, and the cluster's and executors' status asked
// at the same time.
func (c *Console) Overview(ctx context.Context) (*live.Overview, error) {
	now := c.cfg.Clock.Now()
	o, err := c.state.Overview(now.UnixMilli())
	if err != nil {
		return nil, err
	}
	o.Time = model.Time{Time: now.UTC()}
	firing, err := c.state.FiringAlerts()
	if err != nil {
		return nil, err
	}
	for _, al := range c.cfg.QuorumAlerts() { // this node's quorum_lost
		if al.State == model.AlertFiring {
			firing = append(firing, al)
		}
	}
	slices.SortFunc(firing, func(x, y model.Alert) int {
		if (x.Severity == model.SeverityCritical) != (y.Severity == model.SeverityCritical) {
			if x.Severity == model.SeverityCritical {
				return -1
			}
			return 1
		}
		return y.LastSeen.Compare(x.LastSeen.Time)
	})
	o.AlertsFiring, o.Alerts = len(firing), firing[:min(len(firing), 20)]
	o.NotificationsPending = c.state.NotificationsPending()
	ctx, cancel := context.WithTimeout(ctx, overviewWait)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if st, err := c.cfg.Cluster(ctx); err != nil {
			o.ClusterError = err.Error()
		} else {
			o.Cluster = st
		}
	}()
	go func() {
		defer wg.Done()
		if l, err := c.cfg.Executors(ctx); err != nil {
			o.ExecutorsError = err.Error()
		} else {
			o.Executors = l.Executors
		}
	}()
	wg.Wait()
	return o, nil
}

// TaskSummaries implements api.ConsoleBackend. The next fire time is
// computed from this node's clock, as GetTask's are.
func (c *Console) TaskSummaries(ctx context.Context, f model.TaskFilter, runs int) (*live.TaskSummaryList, error) {
	l, err := c.state.TaskSummaries(f, runs)
	if err != nil {
		return nil, err
	}
	now := c.cfg.Clock.Now()
	for i := range l.Tasks {
		t := &l.Tasks[i]
		if next := t.NextFires(now, 1); !t.Paused && len(next) > 0 {
			t.Summary.NextFire = &next[0]
		}
		t.Completed = completed(&t.Task, now)
	}
	return l, nil
}

// taskZone returns the task's timezone name ("UTC" when none) and
// location.
func taskZone(t *model.Task) (string, *time.Location) {
	tz := t.Trigger.Timezone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return "UTC", time.UTC
	}
	return tz, loc
}

// TaskCalendar implements api.ConsoleBackend: the task's instances by
// scheduled date in its timezone, from days-1 days before today (this
// node's clock) to today.
func (c *Console) TaskCalendar(ctx context.Context, name string, days int) (*live.TaskCalendar, error) {
	t, err := c.state.GetTask(name)
	if err != nil {
		return nil, err
	}
	tz, loc := taskZone(t)
	now := c.cfg.Clock.Now().In(loc)
	y, m, d := now.Date()
	lo := time.Date(y, m, d-days+1, 0, 0, 0, 0, loc).UnixMilli()
	hi := time.Date(y, m, d+1, 0, 0, 0, 0, loc).UnixMilli()
	byDate := map[string]map[string]int{}
	var day dayCache
	err = c.state.ScanTask(name, func(b fsm.Brief) {
		if b.ScheduledAt < lo || b.ScheduledAt >= hi {
			return
		}
		date := day.of(b.ScheduledAt, loc)
		c := byDate[date]
		if c == nil {
			c = map[string]int{}
			byDate[date] = c
		}
		c[b.State]++
	})
	if err != nil {
		return nil, err
	}
	out := &live.TaskCalendar{Task: name, Timezone: tz, Days: []live.CalendarDay{}}
	for date, c := range byDate {
		out.Days = append(out.Days, live.CalendarDay{Date: date, Counts: c})
	}
	slices.SortFunc(out.Days, func(x, y live.CalendarDay) int { return strings.Compare(x.Date, y.Date) })
	return out, nil
}

// dayCache remembers the last local day a time fell in, so that a scan of
// instances in time order formats a date once a day, not once each.
type dayCache struct {
	lo, hi int64
	date   string
}

func (c *dayCache) of(ms int64, loc *time.Location) string {
	if c.date != "" && ms >= c.lo && ms < c.hi {
		return c.date
	}
	t := time.UnixMilli(ms).In(loc)
	y, m, d := t.Date()
	c.lo = time.Date(y, m, d, 0, 0, 0, 0, loc).UnixMilli()
	c.hi = time.Date(y, m, d+1, 0, 0, 0, 0, loc).UnixMilli()
	c.date = t.Format("2006-01-02")
	return c.date
}

// TaskFires implements api.ConsoleBackend: the next n fire times from
// this node's clock, as the trigger package computes them, no more than
// the task's maxRuns leaves (paused tasks too; none for event triggers),
// and why there are none when its trigger completed.
func (c *Console) TaskFires(ctx context.Context, name string, n int, from live.FireCursor) (*live.TaskFires, error) {
	t, err := c.state.GetTask(name)
	if err != nil {
		return nil, err
	}
	tz, loc := taskZone(t)
	now := c.cfg.Clock.Now()
	out := &live.TaskFires{Timezone: tz, Fires: []live.FirePreview{}, Completed: completed(t, now)}
	sc, err := t.Schedule()
	if err != nil || sc == nil {
		return out, nil // no fire times (an event trigger; a once trigger not resolved)
	}
	if left := trigger.RunsLeft(t.Trigger.MaxRuns, t.Runs); left >= 0 {
		n = max(min(n, left-from.Shown), 0)
	}
	after := now
	if !from.After.IsZero() { // a later page: the fires after the last one listed
		after = from.After
	}
	_, prev := after.In(loc).Zone()
	for _, ft := range trigger.NextN(sc, after, n) {
		local := ft.In(loc)
		zone, off := local.Zone()
		out.Fires = append(out.Fires, live.FirePreview{Time: model.Time{Time: ft.UTC()}, Local: local.Format(time.RFC3339),
			Zone: zone, Offset: off, DSTChange: off != prev})
		prev = off
	}
	return out, nil
}

// TaskCounts implements api.ConsoleBackend.
func (c *Console) TaskCounts(ctx context.Context, name string, f live.CountFilter) (*live.InstanceCounts, error) {
	from, to := f.From.Millis(), f.To.Millis()
	out := &live.InstanceCounts{Counts: map[string]int{}}
	err := c.state.ScanTask(name, func(b fsm.Brief) {
		if f.Source != "" && b.Source != f.Source || !f.From.IsZero() && b.ScheduledAt < from || !f.To.IsZero() && b.ScheduledAt > to {
			return
		}
		out.Total++
		out.Counts[b.State]++
	})
	if err != nil {
		return nil, err
	}
	if t, err := c.state.GetTask(name); err == nil {
		busy, err := c.state.SlotsBusy(name)
		if err != nil {
			return nil, err
		}
		out.Slots = &live.SlotUse{Busy: busy, Limit: max(t.Policy.MaxConcurrency, 1)}
	}
	return out, nil
}
