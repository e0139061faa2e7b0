package dispatch

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// fakeStore holds task definitions; jobs are made up from ids.
type fakeStore struct {
	mu    sync.Mutex
	tasks map[string]*model.Task
}

func (s *fakeStore) ActiveInstances(func(fsm.Active)) error { return nil }

func (s *fakeStore) Jobs(refs []command.AttemptRef) ([]model.Job, error) {
	var out []model.Job
	for _, r := range refs {
		out = append(out, model.Job{InstanceID: model.FormatID(r.ID), ExecutionID: model.FormatID(r.ID) + "-" + strconv.Itoa(r.Attempt), Attempt: r.Attempt})
	}
	return out, nil
}

func (s *fakeStore) Proto() int { return command.ProtoVersion }

func (s *fakeStore) Running(uint64) (int, bool) { return 0, false }

func (s *fakeStore) Overlap(uint64, int, int64) (string, string) { return "", "" }

func (s *fakeStore) GetTask(name string) (*model.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[name]
	if !ok {
		return nil, model.ErrNotFound
	}
	c := *t
	return &c, nil
}

func (s *fakeStore) put(t *model.Task) {
	s.mu.Lock()
	s.tasks[t.Name] = t
	s.mu.Unlock()
}

func task(name string, a model.Action, labels map[string]string) *model.Task {
	return &model.Task{Name: name, Action: a, Policy: model.Policy{ExecutorLabels: labels}}
}

var (
	shellAct = model.Action{Type: model.ActionShell, Command: "true"}
	httpAct  = model.Action{Type: model.ActionHTTP, URL: "http://x"}
	greetAct = model.Action{Type: model.ActionSDK, Handler: "greet"}
)

// proposals records the commands a dispatcher proposes and answers them
// as the state machine would for lease, note and expire.
type proposals struct {
	mu   sync.Mutex
	cmds []*command.Command
}

func (p *proposals) propose(ctx context.Context, c *command.Command) (*fsm.Result, error) {
	p.mu.Lock()
	p.cmds = append(p.cmds, c)
	p.mu.Unlock()
	var data any = struct{}{}
	if c.Type == command.TypeLease {
		var l command.Lease
		if err := json.Unmarshal(c.Body, &l); err != nil {
			return nil, err
		}
		res := fsm.LeaseResult{IDs: l.IDs}
		for range l.IDs {
			res.Attempts = append(res.Attempts, 1)
		}
		data = res
	}
	b, _ := json.Marshal(data)
	return &fsm.Result{Data: b}, nil
}

func (p *proposals) of(t command.Type) []*command.Command {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ofType(p.cmds, t)
}

// ofType returns the commands of type t.
func ofType(cmds []*command.Command, t command.Type) []*command.Command {
	var out []*command.Command
	for _, c := range cmds {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

type testDispatcher struct {
	*Dispatcher
	store *fakeStore
	props *proposals
	now   time.Time
}

func newTestDispatcher(t *testing.T, tasks ...*model.Task) *testDispatcher {
	t.Helper()
	td := &testDispatcher{store: &fakeStore{tasks: map[string]*model.Task{}}, props: &proposals{},
		now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	for _, tk := range tasks {
		td.store.put(tk)
	}
	td.Dispatcher = New(Config{Lease: 10 * time.Second, Now: func() time.Time { return td.now }}, td.store, td.props.propose)
	return td
}

// ready makes instance id of task READY.
func (td *testDispatcher) ready(id uint64, task string) {
	td.InstanceChanged(fsm.InstanceChange{ID: id, Task: task, State: model.StateReady})
}

// TestDispatcher_pickByCapability: a poll gets only instances whose
// action its executor runs and whose labels it has, oldest first.
func TestDispatcher_pickByCapability(t *testing.T) {
	tasks := []*model.Task{
		task("sh", shellAct, nil), task("web", httpAct, nil), task("greet", greetAct, nil),
		task("gpu", shellAct, map[string]string{"pool": "gpu"}),
	}
	order := []string{"greet", "sh", "gpu", "web", "greet", "sh"} // ids 1..6
	tests := []struct {
		name   string
		caps   *model.Capabilities
		labels map[string]string
		want   []uint64
	}{
		{"old executor: shell and http", nil, nil, []uint64{2, 4, 6}},
		{"sdk worker", &model.Capabilities{Handlers: []string{"greet", "other"}}, nil, []uint64{1, 5}},
		{"shell only, gpu", &model.Capabilities{Shell: true}, map[string]string{"pool": "gpu"}, []uint64{2, 3, 6}},
		{"nothing it can run", &model.Capabilities{Handlers: []string{"other"}}, map[string]string{"pool": "gpu"}, nil},
		{"everything", &model.Capabilities{Shell: true, HTTP: true, Handlers: []string{"greet"}}, map[string]string{"pool": "gpu"}, []uint64{1, 2, 3, 4, 5, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			td := newTestDispatcher(t, tasks...)
			for i, task := range order {
				td.ready(uint64(i+1), task)
			}
			got, _ := td.pick(tt.caps, tt.labels, 10)
			if !slices.Equal(got, tt.want) {
				t.Errorf("picked %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDispatcher_pickSkipsOtherRoutesCheaply: 200,000 instances waiting
// for a handler nobody has cost a shell executor's poll nothing.
func TestDispatcher_pickSkipsOtherRoutesCheaply(t *testing.T) {
	td := newTestDispatcher(t, task("greet", greetAct, nil), task("sh", shellAct, nil))
	for id := uint64(1); id <= 200_000; id++ {
		td.ready(id, "greet")
	}
	td.ready(200_001, "sh")
	start := time.Now()
	for i := 0; i < 1000; i++ {
		got, _ := td.pick(nil, nil, 16)
		if len(got) != 1 || got[0] != 200_001 {
			t.Fatalf("picked %v, want the shell instance", got)
		}
		delete(td.taken, 200_001)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("1000 polls took %s: they scan the instances they cannot run", took)
	}
}

// TestDispatcher_taskChangeReroutes: READY instances follow their task's
// new action and labels.
func TestDispatcher_taskChangeReroutes(t *testing.T) {
	td := newTestDispatcher(t, task("flip", shellAct, nil), task("sh", shellAct, nil))
	td.ready(1, "flip")
	td.ready(2, "sh")
	td.ready(3, "flip")
	td.store.put(task("flip", greetAct, nil))
	td.TaskChanged("flip")
	if got, _ := td.pick(nil, nil, 10); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("shell executor picked %v, want only 2 (flip is sdk now)", got)
	}
	delete(td.taken, 2)
	if got, _ := td.pick(&model.Capabilities{Handlers: []string{"greet"}}, nil, 10); !slices.Equal(got, []uint64{1, 3}) {
		t.Fatalf("greet worker picked %v, want 1 and 3", got)
	}
}

// TestDispatcher_notesUnrunnableOnce: an instance no executor can run is
// noted once after NoteAfter, stays READY, and goes to the first capable
// executor.
func TestDispatcher_notesUnrunnableOnce(t *testing.T) {
	td := newTestDispatcher(t, task("greet", greetAct, map[string]string{"zone": "a"}), task("sh", shellAct, nil))
	ctx := context.Background()
	td.ready(1, "greet")
	td.ready(2, "sh")
	if _, err := td.Poll(ctx, model.PollRequest{Executor: "shell-box", Free: 1, WaitMs: 1}); err != nil {
		t.Fatal(err)
	}
	td.note(ctx)
	if n := len(td.props.of(command.TypeNote)); n != 0 {
		t.Fatalf("%d notes before NoteAfter, want none", n)
	}
	td.now = td.now.Add(td.cfg.NoteAfter)
	for i := 0; i < 3; i++ {
		td.note(ctx)
	}
	notes := td.props.of(command.TypeNote)
	if len(notes) != 1 {
		t.Fatalf("%d notes, want 1", len(notes))
	}
	var n command.Note
	if err := json.Unmarshal(notes[0].Body, &n); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.IDs, []uint64{1}) || n.Type != command.NoteNoExecutor ||
		!strings.Contains(n.Message, `the sdk handler "greet" and the labels zone=a`) || !strings.Contains(n.Message, "none of the 1 executor(s)") {
		t.Fatalf("note %+v, want instance 1 and why", n)
	}
	resp, err := td.Poll(ctx, model.PollRequest{Executor: "greeter", Labels: map[string]string{"zone": "a"},
		Capabilities: &model.Capabilities{Handlers: []string{"greet"}}, Free: 4, WaitMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Jobs) != 1 || resp.Jobs[0].InstanceID != model.FormatID(1) || resp.HeldMs < 1 {
		t.Fatalf("greeter got %+v, want instance 1 with HeldMs", resp)
	}
}

// TestDispatcher_reapWaitsExpireGrace: a lease is expired only once its
// length plus ExpireGrace has passed since the dispatcher saw it applied.
func TestDispatcher_reapWaitsExpireGrace(t *testing.T) {
	td := newTestDispatcher(t)
	stamp := td.now.UnixMilli()
	until := stamp + 10_000
	td.InstanceChanged(fsm.InstanceChange{ID: 7, Task: "x", State: model.StateRunning, Attempt: 1, LeaseUntil: until, Executor: "e", At: stamp})
	ctx := context.Background()
	for _, tc := range []struct {
		at   time.Duration
		want int
	}{{0, 0}, {td.cfg.ExpireGrace - time.Millisecond, 0}, {td.cfg.ExpireGrace, 1}} {
		td.now = time.UnixMilli(until).Add(tc.at)
		td.reap(ctx)
		if got := len(td.props.of(command.TypeExpire)); got != tc.want {
			t.Fatalf("%s past the lease: %d expire commands, want %d", tc.at, got, tc.want)
		}
	}
	if td.cfg.ExpireGrace != 5*time.Second {
		t.Errorf("ExpireGrace %s, want half the 10s lease", td.cfg.ExpireGrace)
	}
}

// TestDispatcher_pickByPriority: executors are handed the highest
// policy.priority first, FIFO within a priority and across routes of the
// same priority; aging raises a waiting instance by one a second, so an
// old low-priority instance goes before newer high-priority ones.
func TestDispatcher_pickByPriority(t *testing.T) {
	prio := func(name string, p int, labels map[string]string) *model.Task {
		tk := task(name, shellAct, labels)
		tk.Policy.Priority = p
		return tk
	}
	tasks := []*model.Task{prio("low", -5, nil), prio("mid", 0, nil), prio("mid2", 0, map[string]string{"zone": "a"}),
		prio("high", 10, nil)}
	ready := func(td *testDispatcher, id uint64, task string, at time.Time) {
		td.InstanceChanged(fsm.InstanceChange{ID: id, Task: task, State: model.StateReady, At: at.UnixMilli()})
	}
	t.Run("highest first, FIFO within a priority", func(t *testing.T) {
		td := newTestDispatcher(t, tasks...)
		for i, name := range []string{"low", "mid", "high", "mid2", "low", "high", "mid"} { // ids 1..7
			ready(td, uint64(i+1), name, td.now)
		}
		got, _ := td.pick(nil, map[string]string{"zone": "a"}, 10)
		if want := []uint64{3, 6, 2, 4, 7, 1, 5}; !slices.Equal(got, want) {
			t.Errorf("picked %v, want %v", got, want)
		}
	})
	t.Run("aging", func(t *testing.T) {
		td := newTestDispatcher(t, tasks...)
		ready(td, 1, "low", td.now.Add(-16*time.Second)) // -5 + 16 s = 11
		ready(td, 2, "high", td.now.Add(-time.Second))   // 10 + 1 = 11: the older wins the tie
		ready(td, 3, "high", td.now)                     // 10
		ready(td, 4, "mid", td.now.Add(-9*time.Second))  // 9
		got, _ := td.pick(nil, nil, 10)
		if want := []uint64{1, 2, 3, 4}; !slices.Equal(got, want) {
			t.Errorf("picked %v, want %v", got, want)
		}
	})
	t.Run("a priority change moves READY instances", func(t *testing.T) {
		td := newTestDispatcher(t, tasks...)
		ready(td, 1, "high", td.now)
		ready(td, 2, "mid", td.now)
		td.store.put(prio("mid", 20, nil))
		td.TaskChanged("mid")
		if got, _ := td.pick(nil, nil, 10); !slices.Equal(got, []uint64{2, 1}) {
			t.Errorf("picked %v, want the raised task first", got)
		}
	})
}
