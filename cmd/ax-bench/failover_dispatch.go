package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// dispatchTask is the task the dispatch failover runs: a shell "true"
// that any number of instances may run at once; dispatchCron fires every
// second, to see when firing resumes; dispatchTimers holds the delayed
// instances due every timerStep across each kill (for an executor label
// no executor has: they are fired, never run).
const (
	dispatchTask   = "bench-dispatch"
	dispatchCron   = "bench-dispatch-cron"
	dispatchTimers = "bench-dispatch-timers"
)

// The timers submitted before each kill: due from timerFirst after the
// submission, one every timerStep, timerCount of them.
const (
	timerFirst = 100 * time.Millisecond
	timerStep  = 10 * time.Millisecond
	timerCount = 1000
)

// dispatchOptions are the failover -dispatch scenario's flags.
type dispatchOptions struct {
	tries, executors int
	transfer, kill   bool // the leader changes to measure (-how)
}

// benchFailoverDispatch measures how soon executors start work again
// after the leader changes, over tries: after a leadership transfer, from
// a trigger sent to the former leader as the transfer returns (of a task
// written just before it) to the start of its instance;
// after a kill -9 of the leader (temporary cluster only), from the kill to
// a new leader seen and to the first instance started (a trigger goes out
// every 50 ms meanwhile). The killed node is restarted and caught up
// before the next try.
func benchFailoverDispatch(ctx context.Context, t *target, o dispatchOptions) error {
	if o.kill {
		if err := t.needLocal("failover: -how kill"); err != nil {
			return err
		}
	}
	if t.local != nil {
		for i := 0; i < o.executors; i++ {
			if _, err := t.local.StartExecutor(fmt.Sprintf("bench-exec-%d", i), "-capacity", "16", "-log-level", "warn"); err != nil {
				return err
			}
		}
	}
	cl := t.cl
	if err := benchTask(ctx, cl, dispatchTask); err != nil {
		return err
	}
	// A per-second cron (catch-up all, so the seconds of the election are
	// fired by the new leader) tells when firing resumes after a kill, to
	// the second; delayed instances due every 10 ms across the kill tell
	// it to 10 ms.
	if o.kill {
		_, err := cl.PutTask(ctx, &model.Task{Name: dispatchCron, Trigger: model.Trigger{Type: model.TriggerCron, Expression: "* * * * * *"},
			Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{Catchup: "all", MaxConcurrency: 1_000_000}})
		if err != nil {
			return err
		}
		_, err = cl.PutTask(ctx, &model.Task{Name: dispatchTimers, Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "true"},
			Policy: model.Policy{MaxConcurrency: 1_000_000, ExecutorLabels: map[string]string{"ax-bench": "no-executor"}}})
		if err != nil {
			return err
		}
	}
	var transfer, killStart, killElected, electedStart, killFired, killTimer, electedTimer []time.Duration
	for try := 1; try <= o.tries; try++ {
		if o.transfer {
			d, err := dispatchAfterTransfer(ctx, t, try)
			if err != nil {
				return fmt.Errorf("try %d (transfer): %w", try, err)
			}
			transfer = append(transfer, d)
			fmt.Printf("try %2d transfer: trigger -> start %s\n", try, d.Round(time.Millisecond))
		}
		if o.kill {
			k, err := dispatchAfterKill(ctx, t)
			if err != nil {
				return fmt.Errorf("try %d (kill): %w", try, err)
			}
			killElected, killStart, electedStart = append(killElected, k.elected), append(killStart, k.started), append(electedStart, k.started-k.elected)
			killFired, killTimer, electedTimer = append(killFired, k.fired), append(killTimer, k.timer), append(electedTimer, k.timer-k.elected)
			fmt.Printf("try %2d kill -9: new leader seen %s, next timer fired %s, cron firing again %s, first start %s (%s after the election)\n", try,
				k.elected.Round(time.Millisecond), k.timer.Round(time.Millisecond), k.fired.Round(time.Millisecond), k.started.Round(time.Millisecond),
				(k.started - k.elected).Round(time.Millisecond))
		}
	}
	fmt.Printf("%-52s %8s %8s %8s %8s\n", "measure", "tries", "p50", "p99", "max")
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{
		{"transfer: trigger -> instance started", transfer},
		{"kill -9 leader -> new leader seen", killElected},
		{"kill -9 leader -> next timer fired (due every 10ms)", killTimer},
		{"new leader seen -> next timer fired", electedTimer},
		{"kill -9 leader -> firing again (per-second cron)", killFired},
		{"kill -9 leader -> first instance started", killStart},
		{"new leader seen -> first instance started", electedStart},
	} {
		if len(m.d) > 0 {
			p50, p99, mx := benchkit.Percentiles(m.d)
			fmt.Printf("%-52s %8d %8s %8s %8s\n", m.name, len(m.d), p50, p99, mx)
		}
	}
	return nil
}

// warmDispatch triggers the task and waits for its instance to start, so
// that every executor is polling the current leader.
func warmDispatch(ctx context.Context, cl *client.Client) error {
	sub, err := cl.Trigger(ctx, dispatchTask, model.TriggerRequest{})
	if err != nil {
		return err
	}
	_, err = waitStarted(ctx, cl, sub.ID, 30*time.Second)
	return err
}

// waitStarted waits until instance id has started and returns when (the
// leader's lease time).
func waitStarted(ctx context.Context, cl *client.Client, id string, within time.Duration) (time.Time, error) {
	var at time.Time
	err := localcluster.WaitFor(ctx, within, func() error {
		in, err := cl.GetInstance(ctx, id)
		if err != nil {
			return err
		}
		if in.StartedAt.IsZero() {
			return fmt.Errorf("instance %s is %s", id, in.State)
		}
		at = in.StartedAt.Time
		return nil
	})
	return at, err
}

// dispatchAfterTransfer writes a new task to the leader, transfers
// leadership, triggers the task on the former leader as soon as the
// transfer returns (the new leader must have applied the task by then)
// and answers how long its instance took to start.
func dispatchAfterTransfer(ctx context.Context, t *target, try int) (time.Duration, error) {
	if err := warmDispatch(ctx, t.cl); err != nil {
		return 0, err
	}
	old, err := t.leaderHealth(ctx)
	if err != nil {
		return 0, err
	}
	former := t.nodeClient(old.LeaderHTTP, 10*time.Second)
	task := fmt.Sprintf("%s-%d", dispatchTask, try)
	if _, err := former.PutTask(ctx, &model.Task{Name: task, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}}); err != nil {
		return 0, err
	}
	if err := former.Transfer(ctx, ""); err != nil {
		return 0, fmt.Errorf("transfer: %w", err)
	}
	sent := time.Now()
	sub, err := former.Trigger(ctx, task, model.TriggerRequest{})
	if err != nil {
		return 0, fmt.Errorf("trigger %s, written before the transfer, on the former leader: %w", task, err)
	}
	started, err := waitStarted(ctx, t.cl, sub.ID, 60*time.Second)
	if err != nil {
		return 0, err
	}
	return started.Sub(sent), nil
}

// killFigures are one kill's times, from the SIGKILL.
type killFigures struct {
	elected time.Duration // a survivor answers that it leads (polled every 25 ms)
	timer   time.Duration // the first delayed instance due after the kill is fired (its firedAt)
	fired   time.Duration // the per-second cron fires (its firedAt)
	started time.Duration // the first triggered instance starts on an executor
}

// dispatchAfterKill submits delayed instances due every 10 ms from 100 ms
// on, kills the leader with SIGKILL while a trigger goes out every 50 ms,
// and answers how long until a survivor leads, until the first timer due
// after the kill fires, until the cron fires and until the first instance
// started after the kill. It then restarts the node and waits until it
// has caught up.
func dispatchAfterKill(ctx context.Context, t *target) (killFigures, error) {
	var k killFigures
	if err := warmDispatch(ctx, t.cl); err != nil {
		return k, err
	}
	old, err := t.leaderHealth(ctx)
	if err != nil {
		return k, err
	}
	timers := make([]model.SubmitRequest, timerCount)
	for i := range timers {
		timers[i] = model.SubmitRequest{Delay: model.Duration(timerFirst + time.Duration(i)*timerStep)}
	}
	sub, err := t.cl.SubmitBatch(ctx, dispatchTimers, timers)
	if err != nil {
		return k, fmt.Errorf("submit the timers: %w", err)
	}
	var victim *localcluster.Node
	var survivors []string
	for _, n := range t.local.Nodes {
		if n.ID == old.Node {
			victim = n
		} else {
			survivors = append(survivors, n.HTTPAddr)
		}
	}
	if victim == nil {
		return k, fmt.Errorf("leader %s is not a node of the temporary cluster", old.Node)
	}
	surv := client.New(client.Config{Addrs: survivors, TLS: t.tls, Token: t.token})
	probes := map[string]*client.Client{}
	for _, a := range survivors {
		probes[a] = t.nodeClient(a, time.Second)
	}
	tctx, stopTriggers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tctx.Done():
				return
			case <-tick.C:
				go func() {
					c, cancel := context.WithTimeout(tctx, 5*time.Second)
					defer cancel()
					_, _ = surv.Trigger(c, dispatchTask, model.TriggerRequest{})
				}()
			}
		}
	}()
	defer func() { stopTriggers(); wg.Wait() }()
	kill := time.Now()
	victim.Kill()
	err = localcluster.WaitFor(ctx, 60*time.Second, func() error {
		for _, a := range survivors {
			if h, err := probes[a].Health(ctx); err == nil && h.Role == member.RoleLeader {
				k.elected = time.Since(kill)
				return nil
			}
		}
		return errors.New("no new leader yet")
	})
	if err != nil {
		return k, err
	}
	if k.timer, err = benchkit.NextFired(ctx, surv, sub.Instances, kill); err != nil {
		return k, err
	}
	k.started, err = firstSince(ctx, surv, dispatchTask, kill, "started", func(in *model.Instance) time.Time { return in.StartedAt.Time })
	if err != nil {
		return k, err
	}
	// Firing resumed when the new leader fired its first cron second
	// (firedAt is the leader's stamp). Within a second of the kill that
	// may be the next second rather than the first the new leader could
	// fire: the timers tell that.
	k.fired, err = firstSince(ctx, surv, dispatchCron, kill, "fired", func(in *model.Instance) time.Time { return in.FiredAt.Time })
	if err != nil {
		return k, err
	}
	stopTriggers()
	if err := victim.Start(); err != nil {
		return k, err
	}
	err = localcluster.WaitFor(ctx, 60*time.Second, func() error {
		h, err := t.nodeClient(victim.HTTPAddr, time.Second).Health(ctx)
		if err != nil {
			return err
		}
		if h.Leader == "" {
			return errors.New("restarted node has no leader yet")
		}
		return nil
	})
	return k, err
}

// firstSince waits until an instance of task has a stamp (its start, its
// firing) after since, and returns how long after since the earliest one
// is; what names the stamp in the error.
func firstSince(ctx context.Context, cl *client.Client, task string, since time.Time, what string, stamp func(*model.Instance) time.Time) (time.Duration, error) {
	var d time.Duration
	err := localcluster.WaitFor(ctx, 60*time.Second, func() error {
		l, err := cl.ListInstances(ctx, model.InstanceFilter{Task: task, Limit: 200})
		if err != nil {
			return err
		}
		var first time.Time
		for i := range l.Instances {
			if s := stamp(&l.Instances[i]); s.After(since) && (first.IsZero() || s.Before(first)) {
				first = s
			}
		}
		if first.IsZero() {
			return fmt.Errorf("nothing %s since the kill", what)
		}
		d = first.Sub(since)
		return nil
	})
	return d, err
}
