package chaos

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
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
	if h.Slots, err = collectSlots(ctx, cl); err != nil {
		return nil, err
	}
	var p model.Pool
	if err := cl.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/pools/" + chaosPool, Query: url.Values{"consistent": {"true"}}}, &p); err != nil {
		return nil, fmt.Errorf("pool %s: %w", chaosPool, err)
	}
	h.Pools = []PoolCount{{Pool: chaosPool, Task: taskPooled, Busy: int(p.Busy), Queued: int(p.Queued)}}
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
	h.Launched = map[string]string{}
	for _, name := range executors {
		lf, err := os.Open(filepath.Join(e.dir, name+".log"))
		if err != nil {
			return nil, err
		}
		err = ParseLaunched(lf, h.Launched)
		lf.Close()
		if err != nil {
			return nil, err
		}
	}
	return h, nil
}

// collectSlots reads, per workload task, its busy concurrency slots and
// the instances that hold one: a listing between two counts, until the
// counts agree with each other and with the listing (work still moving
// at the end makes them differ for a moment; a leaked slot for good),
// at most 10 s per task; then the last reading stands.
func collectSlots(ctx context.Context, cl *client.Client) ([]SlotCount, error) {
	var out []SlotCount
	for _, task := range workloadTasks {
		var last SlotCount
		var lastErr error
		read := func() bool {
			before, err := cl.TaskCounts(ctx, task, live.CountFilter{}, client.Consistent())
			if err != nil || before.Slots == nil {
				lastErr = fmt.Errorf("counts of %s: %v (slots %v)", task, err, before)
				return false
			}
			var holders []string
			for _, state := range []string{model.StateReady, model.StateRunning, model.StateRetrying, model.StateWaitingApproval} {
				page, err := cl.ListInstances(ctx, model.InstanceFilter{Task: task, State: state, Limit: 1000}, client.Consistent())
				if err != nil {
					lastErr = err
					return false
				}
				for _, in := range page.Instances {
					if state != model.StateWaitingApproval || in.Attempts > 0 { // approval before the run holds none
						holders = append(holders, in.ID+" "+in.State)
					}
				}
			}
			after, err := cl.TaskCounts(ctx, task, live.CountFilter{}, client.Consistent())
			if err != nil || after.Slots == nil {
				lastErr = fmt.Errorf("counts of %s: %v", task, err)
				return false
			}
			last, lastErr = SlotCount{Task: task, Busy: after.Slots.Busy, Holders: holders}, nil
			return before.Slots.Busy == after.Slots.Busy && after.Slots.Busy == len(holders)
		}
		if err := waitUntil(ctx, time.Now().Add(10*time.Second), read); err != nil {
			return nil, err
		}
		if last.Task == "" {
			return nil, fmt.Errorf("could not read the slots of %s: %v", task, lastErr)
		}
		out = append(out, last)
	}
	return out, nil
}

// listAll lists every instance of the workload's tasks, linearizably,
// and the shards of those that fanned out (after them).
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
	for _, in := range out {
		if in.Shards == nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := cl.Shards(cctx, in.ID, client.Consistent())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("shards of %s: %w", in.ID, err)
		}
		out = append(out, l.Shards...)
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
