package ceiling

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/internal/benchkit/scale"
	"github.com/ax-scheduler/ax/model"
)

// TaskRow is one step of the tasks phase.
type TaskRow struct {
	Tasks     int
	Made      int           // made in this step
	MadeTook  time.Duration // with 64 clients, each a Raft commit
	WheelSize int           // timers in the leader's wheel
	// List is GET /v1/tasks?limit=100 (the first page), Get one task by
	// name, each 20 times through the leader.
	ListP50, ListP99, GetP50, GetP99 time.Duration
	// Idle is a 20 s window with no other load: the timers' upkeep.
	Idle []Proc
	// Transfer is a leadership transfer: the call -> the first of the
	// timers due every 10 ms after it fired; WheelLoad the new leader's
	// own figure for loading its wheel.
	Transfer, WheelLoad time.Duration
	NewLeader           string
}

const timerTask = "ceiling-timers"

// tasks makes cron and interval tasks up to each count and measures.
func tasks(ctx context.Context, c scale.Cluster, o Options, counts []int) ([]TaskRow, error) {
	if err := putTask(ctx, c.Client, timerTask, "ceiling-nobody", model.Trigger{Type: model.TriggerEvent}); err != nil {
		return nil, err
	}
	var rows []TaskRow
	made := 0
	for _, n := range counts {
		row := TaskRow{Tasks: n}
		if n > made {
			next := atomic.Int64{}
			next.Store(int64(made))
			stop := benchkit.Every(10*time.Second, func() { logf(o, "tasks: %d of %d made", next.Load(), n) })
			r, err := benchkit.RunLoad(ctx, 64, n-made, func() error {
				i := int(next.Add(1) - 1)
				// As in ax-bench scale: daily crons at minutes spread over the
				// day, and intervals of 6 to 30 hours.
				trig := model.Trigger{Type: model.TriggerCron, Expression: fmt.Sprintf("%d %d * * *", i%60, (i/60)%24)}
				if i%2 == 1 {
					trig = model.Trigger{Type: model.TriggerInterval, Every: model.Duration(6*time.Hour + time.Duration(i%1440)*time.Minute)}
				}
				return putTask(ctx, c.Client, fmt.Sprintf("ceiling-task-%07d", i), "ceiling-nobody", trig)
			})
			stop()
			if err != nil {
				rows = append(rows, row)
				return rows, err
			}
			row.Made, row.MadeTook = n-made, r.Elapsed
			made = n
		}
		if err := measureTasks(ctx, c, o, &row); err != nil {
			rows = append(rows, row)
			return rows, err
		}
		rows = append(rows, row)
		logf(o, "%d tasks (made %d in %s): wheel %d, list p99 %s, get p99 %s, transfer -> first fire %s (wheel load %s); idle CPU %s",
			n, row.Made, row.MadeTook.Round(time.Millisecond), row.WheelSize, row.ListP99, row.GetP99, row.Transfer, row.WheelLoad, cores(row.Idle))
	}
	return rows, nil
}

func measureTasks(ctx context.Context, c scale.Cluster, o Options, row *TaskRow) error {
	var list, get []time.Duration
	for i := range 20 {
		t := time.Now()
		if _, err := c.Client.ListTasks(ctx, model.TaskFilter{Limit: 100}); err != nil {
			return err
		}
		list = append(list, time.Since(t))
		t = time.Now()
		if _, err := c.Client.GetTask(ctx, fmt.Sprintf("ceiling-task-%07d", i*997%max(row.Tasks, 1))); err != nil {
			return err
		}
		get = append(get, time.Since(t))
	}
	row.ListP50, row.ListP99, _ = benchkit.Percentiles(list)
	row.GetP50, row.GetP99, _ = benchkit.Percentiles(get)
	h, err := health(ctx, c)
	if err != nil {
		return err
	}
	row.WheelSize = h.WheelSize
	win := startWindow(c, h.Node)
	if err := benchkit.Sleep(ctx, 20*time.Second); err != nil {
		return err
	}
	row.Idle = win.end(c)
	// Timers due every 10 ms from 1 s on, then the transfer.
	reqs := make([]model.SubmitRequest, 3000)
	base := time.Now().Add(time.Second)
	for i := range reqs {
		at := model.Time{Time: base.Add(time.Duration(i) * 10 * time.Millisecond)}
		reqs[i] = model.SubmitRequest{At: &at}
	}
	res, err := c.Client.SubmitBatch(ctx, timerTask, reqs)
	if err != nil {
		return err
	}
	if err := benchkit.Sleep(ctx, time.Until(base)); err != nil {
		return err
	}
	t := time.Now()
	if err := c.Client.Transfer(ctx, ""); err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	if row.Transfer, err = benchkit.NextFired(ctx, c.Client, res.Instances, t); err != nil {
		logf(o, "after the transfer: %v", err)
		row.Transfer = -1 // not within NextFired's minute
	}
	if h, err = health(ctx, c); err == nil {
		row.WheelLoad, row.NewLeader = time.Duration(h.WheelLoad), h.Node
	}
	return nil
}

func printTasks(w io.Writer, rows []TaskRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nTasks: cron and interval tasks (half daily crons at minutes spread over the day, half intervals of 6-30 h), made with 64 clients (each a Raft commit). List is the first page of 100, get one task by name, 20 each. Idle is 20 s without other load (the timers' upkeep): CPU cores busy per process (* the leader). Transfer is a leadership transfer -> the first timer due after it fired (timers due every 10 ms); wheel load is the new leader's own figure.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| tasks | made/s in the step | wheel | list p50 / p99 | get p50 / p99 | leader RSS MB (anon) | fsm.db MB (leader) | idle CPU cores | transfer -> first fire | wheel load |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		ld := leaderProc(r.Idle)
		rate := "-"
		if r.Made > 0 {
			rate = fmt.Sprintf("%.0f", float64(r.Made)/r.MadeTook.Seconds())
		}
		fired := r.Transfer.Round(time.Millisecond).String()
		if r.Transfer < 0 {
			fired = "not within 1 min"
		}
		fmt.Fprintf(w, "| %d | %s | %d | %s / %s | %s / %s | %s (%s) | %s | %s | %s | %s |\n",
			r.Tasks, rate, r.WheelSize, r.ListP50, r.ListP99, r.GetP50, r.GetP99, benchkit.MB(ld.RSSKB<<10), benchkit.MB(ld.AnonKB<<10),
			benchkit.MB(ld.StateB), cores(r.Idle), fired, r.WheelLoad.Round(time.Millisecond))
	}
}
