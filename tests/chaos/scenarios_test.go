package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/ax-scheduler/ax/internal/localcluster"
)

// scenario is one kind of fault. cycle injects it once, holds it for
// hold and heals it; the runner repeats cycles (with a gap to recover)
// until the scenario's time is up: one cycle in the short mode.
type scenario struct {
	name   string
	proves string
	cycle  func(ctx context.Context, e *env, hold time.Duration) error
	// short and long are the hold of one cycle in each mode.
	short, long time.Duration
	// shortTotal and longTotal are how long each mode repeats cycles: 0
	// is one cycle in the short mode, 2 minutes in the long one.
	shortTotal, longTotal time.Duration
	// longRun, if set, is how long a run of the long task lasts at least.
	longRun time.Duration
	// starve runs CPU hogs (stress-ng, a worker per core) for the whole
	// scenario (AX_CHAOS_STARVE=1 does it for every scenario).
	starve bool
}

var scenarios = []scenario{
	{
		name:   "leader-isolated",
		proves: "the leader cut off both ways: the majority elects a new leader, firing and dispatch resume within an election plus a second, the old leader's attempts are not run twice",
		cycle:  cutLeader("isolate", (*Net).Isolate),
		short:  5 * time.Second, long: 15 * time.Second,
	},
	{
		name:   "follower-isolated",
		proves: "a follower's cable pulled: nothing stalls, nothing is lost, it catches up after",
		cycle: func(ctx context.Context, e *env, hold time.Duration) error {
			lead, err := e.leader(ctx, 15*time.Second)
			if err != nil {
				return err
			}
			f := e.follower(lead)
			return e.inject("pull "+f.ID+"'s cable", func() error { return e.net.PortUp(f.ID, false) },
				holdFor(ctx, hold), func() error { return e.net.PortUp(f.ID, true) })
		},
		short: 5 * time.Second, long: 15 * time.Second,
	},
	{
		name:   "leader-cut-inbound",
		proves: "one-way cut, the leader can send but not receive: it must step down and a new leader take over",
		cycle:  cutLeader("cut inbound of", (*Net).CutIn),
		short:  5 * time.Second, long: 15 * time.Second,
	},
	{
		name:   "leader-cut-outbound",
		proves: "one-way cut, the leader can receive but not send: the others elect a new leader, the old one follows it",
		cycle:  cutLeader("cut outbound of", (*Net).CutOut),
		short:  5 * time.Second, long: 15 * time.Second,
	},
	{
		name:   "leader-flapping",
		proves: "the leader's link flaps (down and up every 0.3–1.5 s): at most elections, no duplicates, no overlap",
		cycle:  flapLeader,
		short:  6 * time.Second, long: 20 * time.Second,
	},
	{
		name:   "leader-sigstop",
		proves: "the leader frozen with SIGSTOP then thawed with SIGCONT: a paused leader must not act on stale leadership when it wakes",
		cycle:  stopLeader,
		short:  4 * time.Second, long: 15 * time.Second,
	},
	{
		name:   "kill-loop",
		proves: "kill -9 of a random agent (the leader first) every few seconds, restarted each time: no acknowledged write lost, no duplicate, resume within bounds",
		cycle:  killOne,
		short:  time.Second, long: time.Second, shortTotal: 10 * time.Second, longTotal: 10 * time.Minute,
	},
	{
		name:   "clock-ahead",
		proves: "a node whose clock is 10 min fast (AX_FAULT_CLOCK_OFFSET=+10m) is made leader: no early fire, no duplicate key, no silence after",
		cycle:  skewNode("+10m"),
		short:  5 * time.Second, long: 20 * time.Second,
	},
	{
		name:   "clock-behind",
		proves: "a node whose clock is 10 min slow (-10m) is made leader: no silenced cron, no stuck lease",
		cycle:  skewNode("-10m"),
		short:  5 * time.Second, long: 20 * time.Second,
	},
	{
		name:   "leader-churn",
		proves: "leadership forced to move every ~2.5 s, alternately by freezing the leader (SIGSTOP for 1.2 s) and by a transfer: attempt numbers only grow, no attempt charged that never ran, no overlap",
		cycle:  churnLeader,
		short:  12 * time.Second, long: time.Minute,
	},
	{
		name:   "starved-churn",
		proves: "the leader churn on a starved machine (stress-ng hogging every core): the promises hold under CPU contention",
		cycle:  churnLeader, starve: true,
		short: 12 * time.Second, long: time.Minute,
	},
	{
		name:   "shard-kills",
		proves: "kill -9 of an executor running shards of a sharded instance, then of the leader, mid-run: every shard of a successful instance has exactly one successful attempt, no two attempts of a shard overlap, and each instance's outcome is its shards'",
		cycle:  killShards,
		short:  2 * time.Second, long: 5 * time.Second, longRun: 2 * lease,
	},
	{
		name:   "executor-cut",
		proves: "an executor cut off mid-attempt: it stops the attempt before the leader re-leases it (no overlap), the instance finishes elsewhere",
		cycle:  cutExecutor,
		short:  2 * lease, long: 3 * lease, longRun: 2 * lease, // the cut attempt must outlive its lease
	},
}

// holdFor returns a hold that keeps a fault on for d (or until ctx ends).
func holdFor(ctx context.Context, d time.Duration) func() {
	return func() {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
}

// cutLeader cuts the current leader with cut, then heals it.
func cutLeader(verb string, cut func(*Net, string) error) func(context.Context, *env, time.Duration) error {
	return func(ctx context.Context, e *env, hold time.Duration) error {
		lead, err := e.leader(ctx, 15*time.Second)
		if err != nil {
			return err
		}
		return e.inject(verb+" leader "+lead.ID, func() error { return cut(e.net, lead.ID) },
			holdFor(ctx, hold), func() error { return e.net.Heal(lead.ID) })
	}
}

// flapLeader takes the leader's switch port down and up at random
// intervals.
func flapLeader(ctx context.Context, e *env, hold time.Duration) error {
	lead, err := e.leader(ctx, 15*time.Second)
	if err != nil {
		return err
	}
	var flaps int
	var flapErr error
	err = e.inject("flap leader "+lead.ID+"'s link", func() error { return nil }, func() {
		end := time.Now().Add(hold)
		up := true
		for time.Now().Before(end) && ctx.Err() == nil && flapErr == nil {
			up = !up
			flapErr = e.net.PortUp(lead.ID, up)
			flaps++
			holdFor(ctx, 300*time.Millisecond+rand.N(1200*time.Millisecond))()
		}
	}, func() error { return e.net.PortUp(lead.ID, true) })
	e.t.Logf("flapped %s's link %d times", lead.ID, flaps)
	return errors.Join(err, flapErr)
}

// stopLeader freezes the leader with SIGSTOP and thaws it.
func stopLeader(ctx context.Context, e *env, hold time.Duration) error {
	lead, err := e.leader(ctx, 15*time.Second)
	if err != nil {
		return err
	}
	return e.inject("SIGSTOP leader "+lead.ID, func() error { return lead.Signal(syscall.SIGSTOP) },
		holdFor(ctx, hold), func() error { return lead.Signal(syscall.SIGCONT) })
}

// killOne kills an agent with SIGKILL (the leader on the first cycle, a
// random one after), keeps it down for hold, restarts it and waits until
// it has caught up.
func killOne(ctx context.Context, e *env, hold time.Duration) error {
	var victim *localcluster.Node
	e.mu.Lock()
	first := len(e.faults) == 0
	e.mu.Unlock()
	if first {
		lead, err := e.leader(ctx, 15*time.Second)
		if err != nil {
			return err
		}
		victim = lead
	} else {
		victim = e.c.Nodes[rand.IntN(len(e.c.Nodes))]
	}
	err := e.inject("kill -9 "+victim.ID, func() error { victim.Kill(); return nil },
		holdFor(ctx, hold), victim.Start)
	if err != nil {
		return err
	}
	return e.caughtUp(ctx, victim, 30*time.Second)
}

// skewNode restarts a follower with its clock offset by off (through
// the faults build's hook), makes it the leader, holds, and restarts it
// with a true clock.
func skewNode(off string) func(context.Context, *env, time.Duration) error {
	return func(ctx context.Context, e *env, hold time.Duration) error {
		lead, err := e.leader(ctx, 15*time.Second)
		if err != nil {
			return err
		}
		n := e.follower(lead)
		restart := func(offset string) error {
			n.Stop()
			e.setOffset(n.ID, offset)
			if err := n.Start(); err != nil {
				return err
			}
			return e.caughtUp(ctx, n, 30*time.Second)
		}
		return e.inject(fmt.Sprintf("clock of %s %s, made leader", n.ID, off), func() error {
			if err := restart(off); err != nil {
				return err
			}
			// The node holds its clock to the cluster's: its /healthz names
			// the offset it measured (the fault hook's), not its time.
			want, _ := time.ParseDuration(off)
			err := localcluster.WaitFor(ctx, 15*time.Second, func() error {
				h, err := n.Client().Health(ctx)
				if err != nil {
					return err
				}
				if h.ClockOffset == nil {
					return errors.New("no clock offset measured yet")
				}
				if d := h.ClockOffset.Std() - want; d < -5*time.Second || d > 5*time.Second {
					return fmt.Errorf("%s measured its clock %s off the cluster's, want about %s (is the faults build's hook absent?)", n.ID, h.ClockOffset.Std(), want)
				}
				return nil
			})
			if err != nil {
				return err
			}
			e.t.Logf("%s measured its clock %s off the cluster's", n.ID, want)
			tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := n.Client().Transfer(tctx, n.ID); err != nil {
				e.t.Logf("transfer to the skewed %s refused: %v", n.ID, err)
			}
			return nil
		}, holdFor(ctx, hold), func() error { return restart("") })
	}
}

// churnLeader moves leadership every churnEvery for hold: alternately it
// freezes the leader with SIGSTOP for 1.2 s (the others elect a new one;
// the old one wakes up deposed) and transfers leadership to a follower.
func churnLeader(ctx context.Context, e *env, hold time.Duration) error {
	var stopped *localcluster.Node
	var moves int
	var churnErr error
	err := e.inject("churn leadership", func() error { return nil }, func() {
		end := time.Now().Add(hold)
		for i := 0; time.Now().Before(end) && ctx.Err() == nil && churnErr == nil; i++ {
			next := time.Now().Add(churnEvery)
			lead, err := e.leader(ctx, 15*time.Second)
			if err != nil {
				churnErr = err
				return
			}
			if i%2 == 0 {
				if churnErr = lead.Signal(syscall.SIGSTOP); churnErr != nil {
					return
				}
				stopped = lead
				holdFor(ctx, 1200*time.Millisecond)()
				churnErr, stopped = lead.Signal(syscall.SIGCONT), nil
			} else {
				to := e.follower(lead)
				tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				if err := lead.Client().Transfer(tctx, to.ID); err != nil {
					e.t.Logf("transfer %s → %s: %v", lead.ID, to.ID, err)
				}
				cancel()
			}
			moves++
			holdFor(ctx, time.Until(next))()
		}
	}, func() error {
		if stopped != nil {
			return stopped.Signal(syscall.SIGCONT)
		}
		return nil
	})
	e.t.Logf("moved leadership %d times", moves)
	return errors.Join(err, churnErr)
}

// killShards waits for a shard of the sharded task that has run for a
// moment, kills its executor with SIGKILL and then the leader, holds,
// and restarts both.
func killShards(ctx context.Context, e *env, hold time.Duration) error {
	var victim string
	err := localcluster.WaitFor(ctx, 30*time.Second, func() error {
		for _, r := range e.runs() {
			if r.Task == taskSharded && r.Ended == "" && time.Since(r.Start) > 300*time.Millisecond && time.Since(r.Last) < time.Second {
				victim = r.Executor
				return nil
			}
		}
		return errors.New("no shard running")
	})
	if err != nil {
		return err
	}
	lead, err := e.leader(ctx, 15*time.Second)
	if err != nil {
		return err
	}
	ex := e.execs[victim]
	if ex == nil {
		return fmt.Errorf("a shard runs on unknown executor %q", victim)
	}
	err = e.inject("kill -9 executor "+victim+" mid-shard, then leader "+lead.ID,
		func() error { ex.Kill(); lead.Kill(); return nil },
		holdFor(ctx, hold),
		func() error { return errors.Join(ex.Start(), lead.Start()) })
	if err != nil {
		return err
	}
	return e.caughtUp(ctx, lead, 30*time.Second)
}

// churnEvery is how often churnLeader moves leadership.
const churnEvery = 2500 * time.Millisecond

// cutExecutor waits for an attempt of the long task that has run for half
// a second, then cuts its executor off both ways for hold (longer than a
// lease, so that the leader re-leases the instance) and heals it.
func cutExecutor(ctx context.Context, e *env, hold time.Duration) error {
	var victim string
	err := localcluster.WaitFor(ctx, 30*time.Second, func() error {
		for _, r := range e.runs() {
			if r.Task == taskLong && r.Ended == "" && time.Since(r.Start) > 500*time.Millisecond && time.Since(r.Last) < time.Second {
				victim = r.Executor
				return nil
			}
		}
		return errors.New("no long attempt running")
	})
	if err != nil {
		return err
	}
	return e.inject("isolate executor "+victim+" mid-attempt", func() error { return e.net.Isolate(victim) },
		holdFor(ctx, hold), func() error { return e.net.Heal(victim) })
}
