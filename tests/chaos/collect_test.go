package chaos

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/localcluster"
	"github.com/ax-scheduler/ax/model"
)

// collect waits for the cluster to finish what was due before end (at
// most until end+stuckFor), then reads the final state linearizably from
// the cluster and from each node, and the action log, into a History.
// The cron's span ends b.Firing before the collection: a later second
// may legitimately not have fired yet.
func collect(ctx context.Context, w *workload, end time.Time, b Bounds, stuckFor time.Duration) (*History, error) {
	e := w.e
	cl := client.New(client.Config{Addrs: e.c.Addrs(), RetryFor: 10 * time.Second})
	var insts []model.Instance
	var lastErr error
	err := waitUntil(ctx, end.Add(stuckFor), func() bool {
		got, err := listAll(ctx, cl)
		if err != nil {
			lastErr = err
			return false
		}
		insts = got
		for _, in := range got {
			if !Terminal(in.State) && in.ScheduledAt.Before(end) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if insts == nil {
		return nil, fmt.Errorf("could not list the instances: %v", lastErr)
	}
	h := &History{Start: w.start, End: end, Collected: time.Now(), Faults: e.recordedFaults(), Leaders: e.leaderships(),
		Replicas: map[string]map[string]string{}}
	for i, in := range insts {
		if in.Attempts == 1 && in.State == model.StateSuccess {
			continue
		}
		full, err := cl.GetInstance(ctx, in.ID, client.Consistent())
		if err != nil {
			return nil, fmt.Errorf("get instance %s: %w", in.ID, err)
		}
		insts[i] = *full
	}
	h.Instances = insts
	for _, n := range e.c.Nodes {
		var got []model.Instance
		err := localcluster.WaitFor(ctx, 30*time.Second, func() (err error) {
			got, err = listAll(ctx, n.Client())
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading node %s after the run: %w", n.ID, err)
		}
		states := map[string]string{}
		for _, in := range got {
			states[in.ID] = in.State
		}
		h.Replicas[n.ID] = states
	}
	w.mu.Lock()
	h.Acks, h.Unknown, h.Refused = append([]Ack(nil), w.acks...), w.unknown, w.refused
	w.mu.Unlock()
	to := end
	if last := h.Collected.Add(-b.Firing); last.Before(to) {
		to = last
	}
	h.Crons = []Cron{{Task: taskTick, From: w.created.Truncate(time.Second).Add(time.Second), To: to.Truncate(time.Second)}}
	f, err := os.Open(e.logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	runs, bad, err := ParseRuns(f)
	if err != nil {
		return nil, err
	}
	if bad > 0 {
		e.t.Logf("action log: %d lines cut short (a process killed mid-write)", bad)
	}
	h.Runs = runs
	return h, nil
}

// listAll lists every instance of the workload's tasks, linearizably.
func listAll(ctx context.Context, cl *client.Client) ([]model.Instance, error) {
	var out []model.Instance
	for _, task := range workloadTasks {
		f := model.InstanceFilter{Task: task, Limit: 1000}
		for {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			page, err := cl.ListInstances(cctx, f, client.Consistent())
			cancel()
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", task, err)
			}
			out = append(out, page.Instances...)
			if page.NextCursor == "" {
				break
			}
			f.Cursor = page.NextCursor
		}
	}
	return out, nil
}

// waitUntil polls cond every 250 ms until it holds or deadline passes
// (which is not an error: the caller judges what it got).
func waitUntil(ctx context.Context, deadline time.Time, cond func() bool) error {
	for !cond() {
		if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}
