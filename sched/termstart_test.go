package sched

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/wheel"
)

// populateTasks puts n cron and interval tasks that fire rarely (as
// ax-bench scale makes them: daily crons spread over the day, intervals
// of 6 to 30 hours) and an event task "timer" with one delayed instance
// due 1 s after now, in batches of 1,000 log entries.
func populateTasks(tb testing.TB, f *fsm.FSM, n int, now time.Time) {
	tb.Helper()
	index := f.AppliedIndex()
	var logs []*raft.Log
	flush := func() {
		for _, r := range f.ApplyBatch(logs) {
			if r, ok := r.(*fsm.Result); ok && r.Err != nil {
				tb.Fatal(r.Err)
			}
		}
		logs = logs[:0]
	}
	add := func(c *command.Command) {
		index++
		c.Now, c.Node = now.UnixMilli(), "n1"
		logs = append(logs, &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode()})
		if len(logs) == 1000 {
			flush()
		}
	}
	put := func(name string, trig model.Trigger) {
		c, err := command.New(command.TypePutTask, "", "bench", command.PutTask{Task: model.Task{Name: name, Trigger: trig,
			Action: model.Action{Type: model.ActionSDK, Handler: "noop"},
			Policy: model.Policy{MaxConcurrency: 1_000_000, ExecutorLabels: map[string]string{"kind": "scale"}}}})
		if err != nil {
			tb.Fatal(err)
		}
		add(c)
	}
	for i := range n {
		trig := model.Trigger{Type: model.TriggerCron, Expression: fmt.Sprintf("%d %d * * *", i%60, (i/60)%24)}
		if i%2 == 1 {
			trig = model.Trigger{Type: model.TriggerInterval, Every: model.Duration(6*time.Hour + time.Duration(i%1440)*time.Minute)}
		}
		put(fmt.Sprintf("scale-task-%06d", i), trig)
	}
	put("timer", model.Trigger{Type: model.TriggerEvent})
	s := command.Submit{Task: "timer", Items: []command.SubmitItem{{DelayMs: 1000}}}
	add(&command.Command{Type: command.TypeSubmit, Body: command.EncodeSubmit(&s)})
	flush()
}

// firstFire runs a new term's scheduler on f at now and returns how long
// until it proposes its first fire of a delayed instance, and how long
// until it has loaded every task.
func firstFire(tb testing.TB, f *fsm.FSM, now time.Time) (fired, loaded time.Duration) {
	tb.Helper()
	got := make(chan time.Duration, 1)
	var start time.Time
	s := New(Config{Clock: wheel.NewFakeClock(now)}, f, func(c *command.Command) Future {
		var fire command.Fire
		if err := json.Unmarshal(c.Body, &fire); err == nil && len(fire.Instances) > 0 {
			select {
			case got <- time.Since(start):
			default:
			}
		}
		return nopFuture{}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start = time.Now()
	go func() { defer close(done); _ = s.Run(ctx) }()
	select {
	case fired = <-got:
	case <-time.After(time.Minute):
		tb.Fatal("no fire within a minute")
	}
	for s.Stats().Loaded == 0 {
		time.Sleep(time.Millisecond)
	}
	loaded = s.Stats().Loaded
	cancel()
	<-done
	return fired, loaded
}

// BenchmarkScheduler_TermStart100kTasks measures a new leader's start of
// term with 100,000 cron and interval tasks: the time from Run to the
// first fire of a delayed instance already due, and to every task loaded.
//
//	go test -run xxx -bench TermStart -benchtime 3x ./sched/
func BenchmarkScheduler_TermStart100kTasks(b *testing.B) {
	now := time.Now()
	f, err := fsm.Open(fsm.Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	populateTasks(b, f, 100_000, now)
	b.ResetTimer()
	var fired, loaded time.Duration
	for i := 0; i < b.N; i++ {
		fi, lo := firstFire(b, f, now.Add(5*time.Second))
		fired += fi
		loaded += lo
	}
	b.ReportMetric(float64(fired.Milliseconds())/float64(b.N), "ms/first-fire")
	b.ReportMetric(float64(loaded.Milliseconds())/float64(b.N), "ms/loaded")
}

// heldStore calls before ahead of each page of the scheduler's load of
// tasks, with the page's number from 1.
type heldStore struct {
	Store
	pages  atomic.Int32
	before func(page int32)
}

func (s *heldStore) TaskSchedulePage(after string, limit int, fn func(*fsm.TaskSchedule)) (string, error) {
	s.before(s.pages.Add(1))
	return s.Store.TaskSchedulePage(after, limit, fn)
}

// TestScheduler_Run_FiresWhileLoadingTasks: a delayed instance due when
// a term starts fires while the term's tasks are still loading (Run used
// to read and arm every task before it fired anything: with 100,000
// tasks the first fire after a leader's kill came seconds late).
func TestScheduler_Run_FiresWhileLoadingTasks(t *testing.T) {
	h := newHarness(t)
	const page, tasks = 2, 5 // three pages
	for i := range tasks {
		h.putTask(cronTask(fmt.Sprintf("daily-%d", i), "0 0 0 * * *", "latest"))
	}
	h.putTask(model.Task{Name: "timer", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: shellAction()})
	id := h.submit("timer", time.Second)[0]
	h.advance(2 * time.Second) // the leader changed; the instance is due

	var s *Scheduler
	release := make(chan struct{})
	store := &heldStore{Store: h.fsm, before: func(page int32) {
		switch page {
		case 2: // once the wheel has expired the instance, Run serves it after this page if not already
			h.await(func() bool { return len(s.expired) > 0 || s.Stats().Proposed > 0 })
		case 3: // held until the instance has fired
			<-release
		}
	}}
	s = New(Config{Clock: h.clock, Logger: h.log, TaskPage: page}, store, h.propose)
	ctx, cancel := context.WithCancel(context.Background())
	done := runUntilReturn(t, ctx, s)
	defer func() {
		cancel()
		if err := waitReturn(t, done); err != nil {
			t.Errorf("Run() = %v", err)
		}
	}()
	held := sync.OnceFunc(func() { close(release) })
	defer held()

	h.waitFor("the due instance to fire while the last page of tasks is held", func() bool { return fired(h.state(id)) })
	if st := s.Stats(); st.Loaded != 0 || st.Tasks > 2*page {
		t.Errorf("at the fire: %d tasks loaded, Loaded %v; want at most the first two pages' %d, loading", st.Tasks, st.Loaded, 2*page)
	}
	held()
	h.waitFor("every task to load", func() bool { return s.Stats().Loaded != 0 })
	if st := s.Stats(); st.Tasks != tasks {
		t.Errorf("loaded %d tasks, want %d", st.Tasks, tasks)
	}
}
