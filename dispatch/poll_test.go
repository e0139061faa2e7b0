package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// machine stands in for the state machine behind a dispatcher: it is the
// dispatcher's Store and Proposer, applies leases and expiries to its
// instances, and tells the dispatcher of each change before the proposal
// returns, as the agent's observer does.
type machine struct {
	d   *Dispatcher
	now time.Time

	mu        sync.Mutex
	cmds      []*command.Command
	tasks     map[string]*model.Task
	inst      map[uint64]*fsm.Active
	failLease int                 // refuse the next n leases
	gone      map[uint64]bool     // no longer READY when a lease arrives
	stop      []model.StopAttempt // the answer to heartbeats
	outcomes  []model.CompleteOutcome
	overlap   func(id uint64, attempt int, ranMs int64) string // Store.Overlap's answer
	// ignoreExpire: expiries change nothing (the state machine's stamp
	// is not past the deadline).
	ignoreExpire bool
	// proto is the state's protocol; 0: command.ProtoVersion.
	proto   int
	onLease func() // called as a lease applies
}

// newMachine returns a dispatcher (10s leases, the machine's clock) over a
// machine holding tasks.
func newMachine(t *testing.T, tasks ...*model.Task) *machine {
	t.Helper()
	m := &machine{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), tasks: map[string]*model.Task{},
		inst: map[uint64]*fsm.Active{}, gone: map[uint64]bool{}}
	for _, tk := range tasks {
		m.tasks[tk.Name] = tk
	}
	m.d = New(Config{Lease: 10 * time.Second, Now: m.clock}, m, m.propose)
	return m
}

func (m *machine) clock() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *machine) advance(d time.Duration) {
	m.mu.Lock()
	m.now = m.now.Add(d)
	m.mu.Unlock()
}

// ready makes instance id of task READY.
func (m *machine) ready(id uint64, task string) {
	m.mu.Lock()
	a := m.inst[id]
	if a == nil {
		a = &fsm.Active{ID: id, Task: task}
		m.inst[id] = a
	}
	a.State, a.Executor, a.LeaseUntil = model.StateReady, "", 0
	m.mu.Unlock()
	m.d.InstanceChanged(fsm.InstanceChange{ID: id, Task: task, State: model.StateReady, Attempt: a.Attempt})
}

func (m *machine) ActiveInstances(fn func(fsm.Active)) error {
	m.mu.Lock()
	var all []fsm.Active
	for _, a := range m.inst {
		all = append(all, *a)
	}
	m.mu.Unlock()
	for _, a := range all {
		fn(a)
	}
	return nil
}

func (m *machine) Jobs(refs []command.AttemptRef) ([]model.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []model.Job
	for _, ref := range refs {
		a := m.inst[ref.ID]
		if a.State != model.StateRunning || a.Attempt != ref.Attempt {
			continue
		}
		out = append(out, model.Job{InstanceID: model.FormatID(ref.ID), Task: a.Task, Attempt: ref.Attempt,
			ExecutionID: fmt.Sprintf("%s-%d", model.FormatID(ref.ID), ref.Attempt)})
	}
	return out, nil
}

func (m *machine) Proto() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proto != 0 {
		return m.proto
	}
	return command.ProtoVersion
}

func (m *machine) Running(id uint64) (int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a := m.inst[id]; a != nil && a.State == model.StateRunning {
		return a.Attempt, true
	}
	return 0, false
}

func (m *machine) Overlap(id uint64, attempt int, ranMs int64) (string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.overlap == nil {
		return "", ""
	}
	return m.inst[id].Task, m.overlap(id, attempt, ranMs)
}

func (m *machine) GetTask(name string) (*model.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.tasks[name]; ok {
		c := *t
		return &c, nil
	}
	return nil, model.ErrNotFound
}

func (m *machine) propose(ctx context.Context, c *command.Command) (*fsm.Result, error) {
	m.mu.Lock()
	m.cmds = append(m.cmds, c)
	var changes []fsm.InstanceChange
	var out any = struct{}{}
	switch c.Type {
	case command.TypeLease:
		if m.failLease > 0 {
			m.failLease--
			m.mu.Unlock()
			return nil, errors.New("leadership lost")
		}
		var l command.Lease
		if err := json.Unmarshal(c.Body, &l); err != nil {
			m.mu.Unlock()
			return nil, err
		}
		if m.onLease != nil {
			m.onLease()
		}
		var res fsm.LeaseResult
		for _, id := range l.IDs {
			a := m.inst[id]
			if m.gone[id] || a == nil || a.State != model.StateReady {
				continue
			}
			a.State, a.Attempt, a.Executor = model.StateRunning, a.Attempt+1, l.Executor
			a.LeaseUntil = m.now.UnixMilli() + l.LeaseMs
			res.IDs, res.Attempts = append(res.IDs, id), append(res.Attempts, a.Attempt)
			changes = append(changes, fsm.InstanceChange{ID: id, Task: a.Task, State: a.State, Attempt: a.Attempt,
				LeaseUntil: a.LeaseUntil, Executor: a.Executor, Parent: a.Parent, Pin: a.Pin})
		}
		out = res
	case command.TypeShard:
		changes = m.shard(c)
	case command.TypeExpire:
		// Every lost attempt is retried at once.
		var e command.Expire
		if err := json.Unmarshal(c.Body, &e); err != nil {
			m.mu.Unlock()
			return nil, err
		}
		n := 0
		for _, it := range e.Items {
			if a := m.inst[it.ID]; !m.ignoreExpire && a != nil && a.State == model.StateRunning && a.Attempt == it.Attempt {
				a.State, a.Executor, a.LeaseUntil = model.StateReady, "", 0
				changes = append(changes, fsm.InstanceChange{ID: a.ID, Task: a.Task, State: a.State, Attempt: a.Attempt})
				n++
			}
		}
		out = map[string]int{"expired": n}
	case command.TypeHeartbeat:
		out = fsm.HeartbeatResult{Stop: m.stop}
	case command.TypeComplete:
		out = map[string]string{"state": model.StateSuccess}
	case command.TypeCompleteBatch:
		out = m.outcomes
	}
	m.mu.Unlock()
	for _, ch := range changes {
		m.d.InstanceChanged(ch)
	}
	b, err := json.Marshal(out)
	return &fsm.Result{Data: b}, err
}

// of returns the proposed commands of type t.
func (m *machine) of(t command.Type) []*command.Command {
	m.mu.Lock()
	defer m.mu.Unlock()
	return ofType(m.cmds, t)
}

// leased decodes a lease command.
func leased(t *testing.T, c *command.Command) command.Lease {
	t.Helper()
	var l command.Lease
	if err := json.Unmarshal(c.Body, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func instanceIDs(jobs []model.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.InstanceID)
	}
	return out
}

// TestDispatcher_PollLeasesReadyInstances: a poll leases up to Free READY
// instances, oldest first, in one Lease command, and hands out their jobs
// (prepared) with the lease's timings; leased instances are not offered
// again, and a poll with nothing to run proposes nothing.
func TestDispatcher_PollLeasesReadyInstances(t *testing.T) {
	m := newMachine(t, task("sh", shellAct, nil))
	prepared := 0
	m.d.cfg.Prepare = func(j *model.Job) { prepared++; j.Secrets = map[string]string{"k": "v"} }
	ctx := context.Background()
	for id := uint64(1); id <= 3; id++ {
		m.ready(id, "sh")
	}
	resp, err := m.d.Poll(ctx, model.PollRequest{Executor: "e1", Host: "h1", Free: 2, WaitMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := instanceIDs(resp.Jobs), []string{model.FormatID(1), model.FormatID(2)}; !slices.Equal(got, want) {
		t.Fatalf("jobs %v, want %v", got, want)
	}
	if resp.LeaseMs != 10_000 || resp.HeartbeatMs != 2_500 || resp.HeldMs < 1 || resp.Released || prepared != 2 || resp.Jobs[0].Secrets["k"] != "v" {
		t.Fatalf("response %+v (prepared %d), want 10s leases, 2.5s heartbeats, HeldMs, prepared jobs", resp, prepared)
	}
	leases := m.of(command.TypeLease)
	if len(leases) != 1 {
		t.Fatalf("%d lease commands, want 1", len(leases))
	}
	if l := leased(t, leases[0]); !reflect.DeepEqual(l, command.Lease{Executor: "e1", Host: "h1", IDs: []uint64{1, 2}, LeaseMs: 10_000}) || leases[0].Actor != "executor:e1" {
		t.Fatalf("lease %+v by %q", l, leases[0].Actor)
	}
	if ex := m.d.Executors(); len(ex) != 1 || ex[0].Name != "e1" || ex[0].Running != 2 || ex[0].Free != 2 || ex[0].Host != "h1" {
		t.Fatalf("executors %+v, want e1 running 2", ex)
	}
	resp, err = m.d.Poll(ctx, model.PollRequest{Executor: "e1", Free: 2, WaitMs: 1})
	if err != nil || !slices.Equal(instanceIDs(resp.Jobs), []string{model.FormatID(3)}) {
		t.Fatalf("second poll: %+v, %v; want only instance 3", resp, err)
	}
	resp, err = m.d.Poll(ctx, model.PollRequest{Executor: "e1", Free: 2, WaitMs: 20})
	if err != nil || len(resp.Jobs) != 0 || resp.Jobs == nil || resp.Released {
		t.Fatalf("a poll with nothing READY: %+v, %v; want an empty job list", resp, err)
	}
	if n := len(m.of(command.TypeLease)); n != 2 {
		t.Fatalf("%d lease commands, want 2 (none for an empty poll)", n)
	}
}

// TestDispatcher_PollWakesOnReady: a parked poll is answered as soon as
// an instance it can run becomes READY.
func TestDispatcher_PollWakesOnReady(t *testing.T) {
	m := newMachine(t, task("sh", shellAct, nil))
	type answer struct {
		resp *model.PollResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := m.d.Poll(context.Background(), model.PollRequest{Executor: "e1", Free: 1, WaitMs: 20_000})
		done <- answer{resp, err}
	}()
	testkit.Until(t, 5*time.Second, "the poll to park", func() bool {
		m.d.mu.Lock()
		defer m.d.mu.Unlock()
		return m.d.waiting > 0
	})
	start := time.Now()
	m.ready(5, "sh")
	select {
	case a := <-done:
		if a.err != nil || !slices.Equal(instanceIDs(a.resp.Jobs), []string{model.FormatID(5)}) {
			t.Fatalf("poll answered %+v, %v; want instance 5", a.resp, a.err)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("READY -> job took %s", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the parked poll was not woken")
	}
}

// TestDispatcher_PollAnswersTheCurrentProtocol: a poll that parked
// before the cluster reached a protocol and is answered with jobs after
// says the protocol of its answer, not of its arrival: the executor
// reports those jobs by it (a result is dropped below protocol 8).
func TestDispatcher_PollAnswersTheCurrentProtocol(t *testing.T) {
	m := newMachine(t, task("sh", shellAct, nil))
	m.mu.Lock()
	m.proto = 7
	m.mu.Unlock()
	done := make(chan *model.PollResponse, 1)
	go func() {
		resp, err := m.d.Poll(context.Background(), model.PollRequest{Executor: "e1", Free: 1, WaitMs: 20_000})
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	testkit.Until(t, 5*time.Second, "the poll to park", func() bool {
		m.d.mu.Lock()
		defer m.d.mu.Unlock()
		return m.d.waiting > 0
	})
	m.mu.Lock()
	m.proto = 8
	m.mu.Unlock()
	m.ready(5, "sh")
	select {
	case resp := <-done:
		if resp == nil || len(resp.Jobs) != 1 || resp.Protocol != 8 {
			t.Fatalf("poll answered %+v, want a job and protocol 8", resp)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the parked poll was not woken")
	}
}

// TestDispatcher_PollsNeverShareAnInstance: concurrent polls lease every
// READY instance exactly once.
func TestDispatcher_PollsNeverShareAnInstance(t *testing.T) {
	m := newMachine(t, task("sh", shellAct, nil))
	const n = 60
	for id := uint64(1); id <= n; id++ {
		m.ready(id, "sh")
	}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for e := 0; e < 8; e++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				resp, err := m.d.Poll(context.Background(), model.PollRequest{Executor: fmt.Sprintf("e%d", e), Free: 3, WaitMs: 1})
				if err != nil || len(resp.Jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range resp.Jobs {
					got[j.InstanceID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != n {
		t.Fatalf("%d instances handed out, want %d", len(got), n)
	}
	for id, c := range got {
		if c != 1 {
			t.Errorf("instance %s handed out %d times", id, c)
		}
	}
	seen := map[uint64]bool{}
	for _, c := range m.of(command.TypeLease) {
		for _, id := range leased(t, c).IDs {
			if seen[id] {
				t.Errorf("instance %d proposed in two leases", id)
			}
			seen[id] = true
		}
	}
}

// TestDispatcher_LeaseNotApplied: a lease that fails leaves its instances
// READY for the next poll; one the state machine leased only in part
// hands out only what it leased.
func TestDispatcher_LeaseNotApplied(t *testing.T) {
	m := newMachine(t, task("sh", shellAct, nil))
	ctx := context.Background()
	m.ready(1, "sh")
	m.failLease = 1
	if resp, err := m.d.Poll(ctx, model.PollRequest{Executor: "e1", Free: 1, WaitMs: 1}); err == nil {
		t.Fatalf("poll with a failing lease: %+v, want its error", resp)
	}
	resp, err := m.d.Poll(ctx, model.PollRequest{Executor: "e2", Free: 1, WaitMs: 1})
	if err != nil || !slices.Equal(instanceIDs(resp.Jobs), []string{model.FormatID(1)}) {
		t.Fatalf("the next poll: %+v, %v; want instance 1 again", resp, err)
	}
	m.ready(2, "sh")
	m.ready(3, "sh")
	m.gone[2] = true // canceled meanwhile: the state machine does not lease it
	resp, err = m.d.Poll(ctx, model.PollRequest{Executor: "e2", Free: 2, WaitMs: 1})
	if err != nil || !slices.Equal(instanceIDs(resp.Jobs), []string{model.FormatID(3)}) {
		t.Fatalf("a partly applied lease: %+v, %v; want only instance 3", resp, err)
	}
}

// TestDispatcher_ExpiredLeaseRequeues: an attempt whose lease ran out
// (plus the grace) is expired through the state machine, which retries
// it: the instance is READY again and goes to the next poll as attempt 2;
// nothing is expired twice.
func TestDispatcher_ExpiredLeaseRequeues(t *testing.T) {
	m := newMachine(t, task("sh", shellAct, nil))
	ctx := context.Background()
	m.ready(1, "sh")
	if resp, err := m.d.Poll(ctx, model.PollRequest{Executor: "e1", Free: 1, WaitMs: 1}); err != nil || len(resp.Jobs) != 1 || resp.Jobs[0].Attempt != 1 {
		t.Fatalf("first poll: %+v, %v", resp, err)
	}
	m.advance(10*time.Second + m.d.cfg.ExpireGrace - time.Millisecond)
	m.d.reap(ctx)
	if n := len(m.of(command.TypeExpire)); n != 0 {
		t.Fatalf("%d expiries within the grace, want none", n)
	}
	m.advance(time.Millisecond)
	m.d.reap(ctx)
	expires := m.of(command.TypeExpire)
	if len(expires) != 1 {
		t.Fatalf("%d expiries, want 1", len(expires))
	}
	var e command.Expire
	if err := json.Unmarshal(expires[0].Body, &e); err != nil || !reflect.DeepEqual(e.Items, []command.ExpireItem{{ID: 1, Attempt: 1}}) {
		t.Fatalf("expired %+v, %v; want attempt 1 of instance 1", e.Items, err)
	}
	resp, err := m.d.Poll(ctx, model.PollRequest{Executor: "e2", Free: 1, WaitMs: 1})
	if err != nil || len(resp.Jobs) != 1 || resp.Jobs[0].InstanceID != model.FormatID(1) || resp.Jobs[0].Attempt != 2 {
		t.Fatalf("poll after the expiry: %+v, %v; want attempt 2 of instance 1", resp, err)
	}
	m.d.reap(ctx)
	if n := len(m.of(command.TypeExpire)); n != 1 {
		t.Fatalf("%d expiries after the retry leased, want still 1", n)
	}
	for _, ex := range m.d.Executors() {
		if want := map[string]int{"e1": 0, "e2": 1}[ex.Name]; ex.Running != want {
			t.Errorf("executor %s runs %d, want %d", ex.Name, ex.Running, want)
		}
	}
}

// TestDispatcher_Heartbeat: a heartbeat renews the executor's attempts in
// one command and answers the attempts to stop; the output it carries is
// kept per attempt (the newest liveMax bytes) until the attempt ends.
func TestDispatcher_Heartbeat(t *testing.T) {
	m := newMachine(t, task("sh", shellAct, nil))
	ctx := context.Background()
	m.stop = []model.StopAttempt{{InstanceID: model.FormatID(2), Attempt: 1, Reason: "canceled"}}
	resp, err := m.d.Heartbeat(ctx, model.HeartbeatRequest{Executor: "e1", Running: []model.RunningAttempt{
		{InstanceID: model.FormatID(1), Attempt: 1, Output: "abc"}, {InstanceID: model.FormatID(2), Attempt: 1}}})
	if err != nil || !reflect.DeepEqual(resp.Stop, m.stop) {
		t.Fatalf("heartbeat: %+v, %v; want stop %+v", resp, err, m.stop)
	}
	hbs := m.of(command.TypeHeartbeat)
	var h command.Heartbeat
	if len(hbs) != 1 || json.Unmarshal(hbs[0].Body, &h) != nil ||
		!reflect.DeepEqual(h, command.Heartbeat{Executor: "e1", Items: []command.AttemptRef{{ID: 1, Attempt: 1}, {ID: 2, Attempt: 1}}, LeaseMs: 10_000}) {
		t.Fatalf("heartbeat commands %d: %+v", len(hbs), h)
	}
	if _, err := m.d.Heartbeat(ctx, model.HeartbeatRequest{Executor: "e1", Running: []model.RunningAttempt{{InstanceID: model.FormatID(1), Attempt: 1, Output: "def"}}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		offset    int64
		wantStart int64
		want      string
	}{{0, 0, "abcdef"}, {2, 2, "cdef"}, {100, 6, ""}} {
		if att, start, out, ok := m.d.Live(1, tt.offset); !ok || att != 1 || start != tt.wantStart || out != tt.want {
			t.Errorf("Live(1, %d) = %d, %d, %q, %v; want attempt 1 from %d: %q", tt.offset, att, start, out, ok, tt.wantStart, tt.want)
		}
	}
	if _, err := m.d.Heartbeat(ctx, model.HeartbeatRequest{Executor: "e1", Running: []model.RunningAttempt{
		{InstanceID: model.FormatID(1), Attempt: 1, Output: strings.Repeat("x", liveMax)}}}); err != nil {
		t.Fatal(err)
	}
	if _, start, out, _ := m.d.Live(1, 0); start != 6 || len(out) != liveMax {
		t.Errorf("after %d more bytes: output from %d, %d bytes; want the newest %d from 6", liveMax, start, len(out), liveMax)
	}
	resp, err = m.d.Heartbeat(ctx, model.HeartbeatRequest{Executor: "e2"})
	if err != nil || resp.Stop == nil || len(resp.Stop) != 0 || len(m.of(command.TypeHeartbeat)) != 3 {
		t.Fatalf("a heartbeat with nothing running: %+v, %v; want an empty stop list and no command", resp, err)
	}
	if _, err := m.d.Heartbeat(ctx, model.HeartbeatRequest{Executor: "e1", Running: []model.RunningAttempt{{InstanceID: "nope", Attempt: 1}}}); err == nil {
		t.Fatal("a heartbeat with a bad instance id was accepted")
	}
	m.d.InstanceChanged(fsm.InstanceChange{ID: 1, Task: "sh", State: model.StateRetrying, Attempt: 1})
	if _, _, _, ok := m.d.Live(1, 0); !ok {
		t.Error("the live output was dropped while the instance waits to retry")
	}
	m.d.InstanceChanged(fsm.InstanceChange{ID: 1, Task: "sh", State: model.StateFailed, Attempt: 1})
	if _, _, _, ok := m.d.Live(1, 0); ok {
		t.Error("the live output outlived the instance's end")
	}
}

func TestParseExecutionID(t *testing.T) {
	for _, tt := range []struct {
		in      string
		id      uint64
		attempt int
		ok      bool
	}{
		{"0000000000000010-3", 16, 3, true},
		{"00000000000000ff-12", 255, 12, true},
		{"0000000000000010", 0, 0, false},
		{"0000000000000010-0", 0, 0, false},
		{"0000000000000010-x", 0, 0, false},
		{"nothex-1", 0, 0, false},
		{"", 0, 0, false},
	} {
		id, attempt, err := ParseExecutionID(tt.in)
		if tt.ok != (err == nil) || id != tt.id || attempt != tt.attempt {
			t.Errorf("ParseExecutionID(%q) = %d, %d, %v; want %d, %d, ok %v", tt.in, id, attempt, err, tt.id, tt.attempt, tt.ok)
		}
		var me *model.Error
		if err != nil && (!errors.As(err, &me) || me.Field != "executionId") {
			t.Errorf("ParseExecutionID(%q): error %v does not name executionId", tt.in, err)
		}
	}
}

// TestDispatcher_Complete: reports go to the state machine with their
// request id; a report whose execution id does not parse is answered
// without a command (alone), or on its own line (in a batch).
func TestDispatcher_Complete(t *testing.T) {
	m := newMachine(t)
	ctx := context.Background()
	if _, err := m.d.Complete(ctx, "r0", "bad", model.CompleteRequest{Executor: "e1"}); err == nil {
		t.Fatal("a report with a bad execution id was accepted")
	}
	state, err := m.d.Complete(ctx, "r1", "0000000000000001-1", model.CompleteRequest{Executor: "e1", Success: true})
	if err != nil || state != model.StateSuccess {
		t.Fatalf("complete: %q, %v", state, err)
	}
	if cs := m.of(command.TypeComplete); len(cs) != 1 || cs[0].ReqID != "r1" || cs[0].Actor != "executor:e1" {
		t.Fatalf("complete commands: %+v, want one with request id r1", cs)
	}
	m.outcomes = []model.CompleteOutcome{{State: model.StateSuccess}, {Code: model.CodeConflict, Error: "not current"}}
	out, err := m.d.CompleteBatch(ctx, "r2", []model.CompleteItem{
		{ExecutionID: "bad", Report: model.CompleteRequest{Executor: "e1"}},
		{ExecutionID: "0000000000000002-1", Report: model.CompleteRequest{Executor: "e1"}},
		{ExecutionID: "0000000000000003-1", Report: model.CompleteRequest{Executor: "e1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].ExecutionID != "bad" || !strings.Contains(out[0].Error, "bad") || out[1].State != model.StateSuccess ||
		out[2].Code != model.CodeConflict || out[2].ExecutionID != "0000000000000003-1" {
		t.Fatalf("batch outcomes %+v", out)
	}
	if bs := m.of(command.TypeCompleteBatch); len(bs) != 1 || bs[0].ReqID != "r2" {
		t.Fatalf("batch commands: %+v, want one with request id r2", bs)
	}
	if out, err := m.d.CompleteBatch(ctx, "r3", []model.CompleteItem{{ExecutionID: "bad"}}); err != nil || out[0].Error == "" || len(m.of(command.TypeCompleteBatch)) != 1 {
		t.Fatalf("a batch of bad ids: %+v, %v; want its errors and no command", out, err)
	}
}

// TestDispatcher_RunLoadsActiveInstances: a new term's dispatcher queues
// the READY instances it finds and keeps the running ones' replicated
// lease deadlines (a new term does not restart them): one that ran out
// under the earlier leader is expired at once, marked interrupted, and
// one still running is expired only MaxSkew after its grace.
func TestDispatcher_RunLoadsActiveInstances(t *testing.T) {
	m := newMachine(t, task("sh", shellAct, nil))
	m.inst[1] = &fsm.Active{ID: 1, Task: "sh", State: model.StateReady}
	m.inst[2] = &fsm.Active{ID: 2, Task: "sh", State: model.StateRunning, Attempt: 1, Executor: "e1",
		LeaseUntil: m.now.Add(-time.Minute).UnixMilli()}
	m.inst[3] = &fsm.Active{ID: 3, Task: "sh", State: model.StateRunning, Attempt: 2, Executor: "e1",
		LeaseUntil: m.now.Add(3 * time.Second).UnixMilli()}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.d.Run(ctx) }()
	resp, err := m.d.Poll(context.Background(), model.PollRequest{Executor: "e2", Free: 2, WaitMs: 5_000})
	if err != nil || !slices.Equal(instanceIDs(resp.Jobs), []string{model.FormatID(1)}) {
		t.Fatalf("poll: %+v, %v; want the loaded READY instance", resp, err)
	}
	testkit.Until(t, 5*time.Second, "the running attempts' leases", func() bool {
		m.d.mu.Lock()
		defer m.d.mu.Unlock()
		return m.d.leases[2].executor != "" && m.d.leases[3].executor != ""
	})
	m.d.mu.Lock()
	l := m.d.leases[2]
	m.d.mu.Unlock()
	if want := m.now.Add(-time.Minute).UnixMilli(); l.until != want || !l.inherited {
		t.Fatalf("running attempt's lease %+v, want the replicated deadline, inherited", l)
	}
	expired := func() []command.ExpireItem {
		var out []command.ExpireItem
		for _, c := range m.of(command.TypeExpire) {
			var e command.Expire
			if err := json.Unmarshal(c.Body, &e); err != nil {
				t.Fatal(err)
			}
			out = append(out, e.Items...)
		}
		return out
	}
	m.d.reap(context.Background())
	if got, want := expired(), []command.ExpireItem{{ID: 2, Attempt: 1, Interrupted: true}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first reap of the term expired %+v, want %+v", got, want)
	}
	// Lease 3: until + grace (5s) + MaxSkew (1s) = 9s from now.
	m.advance(9*time.Second - time.Millisecond)
	m.d.reap(context.Background())
	if n := len(expired()); n != 1 {
		t.Fatalf("%d expiries before an inherited lease's grace and skew passed, want 1", n)
	}
	m.advance(time.Millisecond)
	m.d.reap(context.Background())
	if got := expired(); len(got) != 2 || got[1] != (command.ExpireItem{ID: 3, Attempt: 2, Interrupted: true}) {
		t.Fatalf("expired %+v, want lease 3 interrupted after its grace and skew", got)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}

// TestDispatcher_ReapMarksRestartedExecutors: a lease whose executor has
// polled as a new process (another session) since it was granted is
// expired marked Restarted; one whose executor polls as the same process,
// or says no session, is not.
func TestDispatcher_ReapMarksRestartedExecutors(t *testing.T) {
	for _, tc := range []struct {
		name             string
		leased, nextPoll string
		want             bool
	}{
		{"a new process", "s1", "s2", true},
		{"the same process", "s1", "s1", false},
		{"no session on the lease", "", "s2", false},
		{"no session after", "s1", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, task("sh", shellAct, nil))
			ctx := context.Background()
			m.ready(1, "sh")
			if resp, err := m.d.Poll(ctx, model.PollRequest{Executor: "e1", Free: 1, WaitMs: 1, Session: tc.leased}); err != nil || len(resp.Jobs) != 1 {
				t.Fatalf("poll: %+v, %v", resp, err)
			}
			if _, err := m.d.Poll(ctx, model.PollRequest{Executor: "e1", Free: 1, WaitMs: 1, Session: tc.nextPoll}); err != nil {
				t.Fatal(err)
			}
			m.advance(10*time.Second + m.d.cfg.ExpireGrace)
			m.d.reap(ctx)
			var e command.Expire
			if cs := m.of(command.TypeExpire); len(cs) != 1 || json.Unmarshal(cs[0].Body, &e) != nil || len(e.Items) != 1 {
				t.Fatalf("expiries %+v, want one of attempt 1", cs)
			}
			if e.Items[0].Restarted != tc.want {
				t.Fatalf("expired %+v, want restarted %v", e.Items[0], tc.want)
			}
		})
	}
}

// TestDispatcher_ReapIsMonotonic: leases expire on the monotonic clock,
// so a forward step of the wall clock (the time base) expires none early.
func TestDispatcher_ReapIsMonotonic(t *testing.T) {
	m := newMachine(t, task("sh", shellAct, nil))
	wall := m.now
	m.d = New(Config{Lease: 10 * time.Second, Now: func() time.Time { return wall }, Mono: m.clock}, m, m.propose)
	ctx := context.Background()
	m.ready(1, "sh")
	if resp, err := m.d.Poll(ctx, model.PollRequest{Executor: "e1", Free: 1, WaitMs: 1}); err != nil || len(resp.Jobs) != 1 {
		t.Fatalf("poll: %+v, %v", resp, err)
	}
	wall = wall.Add(10 * time.Minute) // the wall clock steps
	m.d.reap(ctx)
	if n := len(m.of(command.TypeExpire)); n != 0 {
		t.Fatalf("%d expiries after a wall-clock step, want none", n)
	}
	m.advance(10*time.Second + m.d.cfg.ExpireGrace)
	m.d.reap(ctx)
	if n := len(m.of(command.TypeExpire)); n != 1 {
		t.Fatalf("%d expiries a lease and its grace later on the monotonic clock, want 1", n)
	}
}

// TestDispatcher_ReapRetriesWhatWasLeftAlone: an Expire the state machine
// left alone while the attempt still runs (its stamp not past the
// replicated deadline) keeps the lease, proposed again a second later.
func TestDispatcher_ReapRetriesWhatWasLeftAlone(t *testing.T) {
	m := newMachine(t, task("sh", shellAct, nil))
	ctx := context.Background()
	m.ready(1, "sh")
	if resp, err := m.d.Poll(ctx, model.PollRequest{Executor: "e1", Free: 1, WaitMs: 1}); err != nil || len(resp.Jobs) != 1 {
		t.Fatalf("poll: %+v, %v", resp, err)
	}
	m.mu.Lock()
	m.ignoreExpire = true
	m.mu.Unlock()
	m.advance(10*time.Second + m.d.cfg.ExpireGrace)
	m.d.reap(ctx)
	m.d.reap(ctx)
	if n := len(m.of(command.TypeExpire)); n != 1 {
		t.Fatalf("%d expiries, want 1 (the next one a second later)", n)
	}
	m.mu.Lock()
	m.ignoreExpire = false
	m.mu.Unlock()
	m.advance(time.Second)
	m.d.reap(ctx)
	if n := len(m.of(command.TypeExpire)); n != 2 {
		t.Fatalf("%d expiries a second later, want 2", n)
	}
	if a := m.inst[1]; a.State != model.StateReady {
		t.Fatalf("instance %+v, want READY after the second expiry", a)
	}
}

// TestDispatcher_GivesBackLeasesOfAGonePoll: a lease that commits after
// its poll's caller went away is given back at once, interrupted (the
// answer cannot reach the executor), instead of lapsing.
func TestDispatcher_GivesBackLeasesOfAGonePoll(t *testing.T) {
	m := newMachine(t, task("sh", shellAct, nil))
	m.ready(1, "sh")
	ctx, cancel := context.WithCancel(context.Background())
	m.onLease = cancel // the executor hangs up while the lease commits
	m.outcomes = []model.CompleteOutcome{{ExecutionID: model.FormatID(1) + "-1", State: model.StateReady}}
	resp, err := m.d.Poll(ctx, model.PollRequest{Executor: "e1", Free: 1, WaitMs: 1000})
	if err != nil || len(resp.Jobs) != 0 {
		t.Fatalf("poll: %+v, %v; want no jobs", resp, err)
	}
	bs := m.of(command.TypeCompleteBatch)
	if len(bs) != 1 {
		t.Fatalf("%d complete batches, want one giving the attempt back", len(bs))
	}
	items, err := command.DecodeCompleteBatch(bs[0].Body)
	if err != nil || len(items) != 1 || items[0].ID != 1 || items[0].Attempt != 1 || !items[0].Report.Interrupted || items[0].Report.Executor != "e1" {
		t.Fatalf("given back %+v, %v; want attempt 1 of instance 1, interrupted, from e1", items, err)
	}
}
