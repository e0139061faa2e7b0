package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/worker"
)

func eventTask(name string) *model.Task {
	return &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionShell, Command: "true"}}
}

func countInstances(t *testing.T, a *Agent, task string) int {
	t.Helper()
	l, err := a.fsm.ListInstances(model.InstanceFilter{Task: task, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Instances)
}

// TestAgent_ForwardedWriteToUnreachableLeader: a write forwarded to a
// leader that never answers is answered 503 within the leader wait, naming
// its request id and saying its outcome is unknown; a retry with the same
// request id returns the first outcome, once the leader can be reached.
func TestAgent_ForwardedWriteToUnreachableLeader(t *testing.T) {
	tc := startCluster(t, 3, nil)
	ctx := context.Background()
	l := tc.leader()
	f := tc.follower(l)
	if _, err := l.tasks.PutTask(ctx, api.Caller{Actor: "tester"}, eventTask("job"), api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	wait := f.cfg.LeaderWait
	for _, tt := range []struct {
		mode    proxyMode
		reqID   string
		applied int // instances of job once the try is over
	}{
		{proxyBlackhole, "req-blackhole", 0}, // never reaches the leader
		{proxySwallow, "req-swallow", 1},     // applied; the answer is lost
	} {
		tc.proxyOf(l).set(tt.mode)
		start := time.Now()
		_, err := f.tasks.Trigger(ctx, api.Caller{Actor: "tester", RequestID: tt.reqID}, "job", model.TriggerRequest{})
		took := time.Since(start)
		var me *model.Error
		if !errors.As(err, &me) || me.Code != model.CodeUnavailable || !strings.Contains(me.Message, tt.reqID) || !strings.Contains(me.Message, "outcome unknown") {
			t.Fatalf("%s: got %v, want unavailable naming %s with an unknown outcome", tt.reqID, err, tt.reqID)
		}
		if took > wait+time.Second {
			t.Fatalf("%s: answered after %s, want within the leader wait %s", tt.reqID, took, wait)
		}
		if got := countInstances(t, l, "job"); got != tt.applied {
			t.Fatalf("%s: the leader holds %d instances, want %d", tt.reqID, got, tt.applied)
		}
	}
	tc.proxyOf(l).set(proxyPass)
	first, err := f.tasks.Trigger(ctx, api.Caller{Actor: "tester", RequestID: "req-swallow"}, "job", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.tasks.Trigger(ctx, api.Caller{Actor: "tester", RequestID: "req-swallow"}, "job", model.TriggerRequest{})
	if err != nil || again.ID != first.ID {
		t.Fatalf("a second retry: %+v, %v; want the first outcome %s", again, err, first.ID)
	}
	if got := countInstances(t, l, "job"); got != 1 {
		t.Fatalf("after retrying the applied write: %d instances, want 1", got)
	}
	if _, err := f.tasks.Trigger(ctx, api.Caller{Actor: "tester", RequestID: "req-blackhole"}, "job", model.TriggerRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := countInstances(t, l, "job"); got != 2 {
		t.Fatalf("after retrying the write that never arrived: %d instances, want 2", got)
	}
}

// TestAgent_ReadYourWritesAcrossTransfer: a write acknowledged by one
// leader is seen by the checks of the next write, sent to the former
// leader right after a transfer.
func TestAgent_ReadYourWritesAcrossTransfer(t *testing.T) {
	tc := startCluster(t, 3, nil)
	ctx := context.Background()
	c := api.Caller{Actor: "tester"}
	for i := 0; i < 6; i++ {
		l := tc.leader()
		if l == nil {
			l = tc.waitLeader(t, nil)
		}
		name := fmt.Sprintf("quick-%d", i)
		if _, err := l.tasks.PutTask(ctx, c, eventTask(name), api.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := l.cl.Transfer(ctx, ""); err != nil {
			t.Fatalf("transfer %d: %v", i, err)
		}
		if _, err := l.tasks.Trigger(ctx, c, name, model.TriggerRequest{}); err != nil {
			t.Fatalf("trigger on the former leader right after transfer %d: %v", i, err)
		}
		tc.waitLeader(t, l)
	}
}

// TestAgent_TermsHaveOneOwner: a term's services start after its barrier
// and a new term starts only once every service of the previous one has
// returned, however quickly leadership moves.
func TestAgent_TermsHaveOneOwner(t *testing.T) {
	var mu sync.Mutex
	active := map[string]int{}
	var problems []string
	tc := startCluster(t, 3, func(cfg *Config) {
		node := cfg.NodeID
		cfg.testServices = []replica.Service{{Name: "slow-stop", Run: func(ctx context.Context) error {
			mu.Lock()
			active[node]++
			if active[node] > 1 {
				problems = append(problems, node+": two terms' services at once")
			}
			mu.Unlock()
			<-ctx.Done()
			time.Sleep(300 * time.Millisecond) // a service slow to stop
			mu.Lock()
			active[node]--
			mu.Unlock()
			return nil
		}}}
	})
	ctx := context.Background()
	l := tc.leader()
	for i := 0; i < 6; i++ {
		// Back and forth between two nodes: each regains leadership
		// while its previous term is still stopping.
		next := tc.agents[0]
		if l == next {
			next = tc.agents[1]
		}
		if err := l.cl.Transfer(ctx, next.cfg.NodeID); err != nil {
			t.Fatalf("transfer %d: %v", i, err)
		}
		l = tc.waitLeader(t, l)
	}
	testkit.Until(t, 10*time.Second, "one term's services, on the leader", func() bool {
		mu.Lock()
		defer mu.Unlock()
		l := tc.leader()
		if l == nil || !hasScheduler(l) || l.exec.Dispatcher() == nil {
			return false
		}
		for _, a := range tc.agents {
			want := 0
			if a == l {
				want = 1
			}
			if active[a.cfg.NodeID] != want {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatal(strings.Join(problems, "; "))
	}
}

// pollResult is what a poll answered, and when.
type pollResult struct {
	resp *model.PollResponse
	err  error
	at   time.Time
}

func startPoll(a *Agent, executor string) <-chan pollResult {
	out := make(chan pollResult, 1)
	go func() {
		resp, err := a.exec.Poll(context.Background(), model.PollRequest{Executor: executor, Free: 1, WaitMs: 20_000})
		out <- pollResult{resp, err, time.Now()}
	}()
	return out
}

// TestAgent_PollsFollowLeadership: a poll parked on any node (the leader,
// or a follower that forwarded it) is served by the new leader within a
// second of a trigger after a transfer, whether the new leader is the node
// it is parked on or another one.
func TestAgent_PollsFollowLeadership(t *testing.T) {
	tc := startCluster(t, 3, nil)
	ctx := context.Background()
	c := api.Caller{Actor: "tester"}
	for i, tt := range []struct {
		name    string
		parked  func(l *Agent) *Agent // where the poll waits
		transTo func(l, parked *Agent) *Agent
	}{
		{"parked on the leader", func(l *Agent) *Agent { return l }, func(l, p *Agent) *Agent { return tc.follower(l) }},
		{"parked on a follower that becomes leader", func(l *Agent) *Agent { return tc.follower(l) }, func(l, p *Agent) *Agent { return p }},
		{"parked on a follower, another one leads", func(l *Agent) *Agent { return tc.follower(l) },
			func(l, p *Agent) *Agent { return tc.follower2(l, p) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := tc.waitLeader(t, nil)
			task := fmt.Sprintf("job-%d", i) // one at a time: a task runs one instance at once
			if _, err := l.tasks.PutTask(ctx, c, eventTask(task), api.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			parked := tt.parked(l)
			next := tt.transTo(l, parked)
			executor := fmt.Sprintf("e%d", i)
			polled := startPoll(parked, executor)
			// Let the poll park (at the leader, forwarded or not).
			testkit.Until(t, 5*time.Second, "the poll to park", func() bool {
				for _, e := range l.exec.Dispatcher().Executors() {
					if e.Name == executor {
						return true
					}
				}
				return false
			})
			if err := l.cl.Transfer(ctx, next.cfg.NodeID); err != nil {
				t.Fatal(err)
			}
			testkit.Until(t, 10*time.Second, "the new leader's term", func() bool { return next.rep.Current() != nil })
			in, err := next.tasks.Trigger(ctx, c, task, model.TriggerRequest{})
			if err != nil {
				t.Fatal(err)
			}
			triggered := time.Now()
			select {
			case r := <-polled:
				if r.err != nil || len(r.resp.Jobs) != 1 || r.resp.Jobs[0].InstanceID != in.ID {
					t.Fatalf("poll answered %+v, %v; want the job of %s", r.resp, r.err, in.ID)
				}
				if took := r.at.Sub(triggered); took > time.Second {
					t.Fatalf("trigger -> job handed out took %s, want within 1s", took)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the parked poll was not served by the new leader")
			}
		})
	}
}

// hasScheduler reports whether a leads a term with its scheduler made.
func hasScheduler(a *Agent) bool {
	_, _, ok := a.tasks.Wheel()
	return ok
}

// TestAgent_ShutdownEndsTheTermFirst: a node that shuts down ends its
// term (its services stop: the dispatcher releases its parked polls, the
// scheduler stops firing) as soon as it begins to, not once its HTTP
// server has shut down, which waits for the requests in flight (here an
// executor's long poll, parked for 8 s) up to 5 s.
func TestAgent_ShutdownEndsTheTermFirst(t *testing.T) {
	ended := make(chan time.Time, 1)
	a := startAgent(t, func(c *Config) {
		c.testServices = []replica.Service{{Name: "watch", Run: func(ctx context.Context) error {
			<-ctx.Done()
			ended <- time.Now()
			return nil
		}}}
	})
	cl := client.New(client.Config{Addrs: []string{a.HTTPAddr()}})
	polled := make(chan error, 1)
	go func() {
		_, err := worker.NewProtocol(cl).Poll(context.Background(), model.PollRequest{Executor: "e1", Free: 1, WaitMs: 8_000})
		polled <- err
	}()
	testkit.Until(t, 5*time.Second, "the poll to park", func() bool {
		for _, e := range a.exec.Dispatcher().Executors() {
			if e.Name == "e1" {
				return true
			}
		}
		return false
	})
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
	}()
	select {
	case at := <-ended:
		if took := at.Sub(start); took > time.Second {
			t.Fatalf("the term's services stopped %s after the shutdown began, want at once (before the HTTP server's shutdown)", took.Round(time.Millisecond))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the term's services did not stop")
	}
	<-polled
}
