package sched

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/wheel"
)

// populate fills a state machine with n SCHEDULED instances due within
// the next 50 minutes, in submit commands of 10,000.
func populate(b *testing.B, f *fsm.FSM, n int, now time.Time) {
	b.Helper()
	index := f.AppliedIndex()
	apply := func(c *command.Command) {
		index++
		c.Now, c.Node = now.UnixMilli(), "n1"
		out := f.ApplyBatch([]*raft.Log{{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}})
		if r, ok := out[0].(*fsm.Result); ok && r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	c, err := command.New(command.TypePutTask, "", "bench", command.PutTask{Task: model.Task{Name: "t",
		Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionShell, Command: "true"}}})
	if err != nil {
		b.Fatal(err)
	}
	apply(c)
	for done := 0; done < n; {
		s := command.Submit{Task: "t"}
		for i := 0; i < 10000 && done < n; i, done = i+1, done+1 {
			s.Items = append(s.Items, command.SubmitItem{DelayMs: int64(time.Minute/time.Millisecond) + int64(done%(49*60_000)), Payload: []byte(`{"order":1}`)})
		}
		apply(&command.Command{Type: command.TypeSubmit, Body: command.EncodeSubmit(&s)})
	}
}

type nopFuture struct{}

func (nopFuture) Wait() (*fsm.Result, error) { return &fsm.Result{}, nil }

// BenchmarkScheduler_Rebuild1M measures what a new leader pays to load
// 1M pending delayed instances into its wheel: time from Run to loaded,
// and heap bytes per pending instance held by the scheduler.
//
//	go test -run xxx -bench Rebuild -benchtime 3x ./sched/
func BenchmarkScheduler_Rebuild1M(b *testing.B) {
	const n = 1_000_000
	now := time.Now()
	f, err := fsm.Open(fsm.Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	populate(b, f, n, now)
	if got := f.Pending(); got != n {
		b.Fatalf("pending %d, want %d", got, n)
	}
	b.ResetTimer()
	var perInst float64
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		s := New(Config{Clock: wheel.NewFakeClock(now)}, f, func(*command.Command) Future { return nopFuture{} })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		start := time.Now()
		go func() { defer close(done); _ = s.Run(ctx) }()
		for s.Stats().WheelSize < n {
			runtime.Gosched()
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/rebuild")
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		perInst = float64(after.HeapAlloc-before.HeapAlloc) / n
		cancel()
		<-done
	}
	b.ReportMetric(perInst, "B/pending")
}
