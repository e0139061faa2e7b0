package fsm

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/model"
)

// finishBench drives a state machine through the execution path for the
// finish and prune benchmarks.
type finishBench struct {
	b     testing.TB
	f     *FSM
	index uint64
	now   int64
}

func newFinishBench(b testing.TB) *finishBench {
	f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	fb := &finishBench{b: b, f: f, now: t0}
	task := model.Task{Name: "t", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1 << 30}}
	c, err := NewCommand(CmdPutTask, "", "bench", PutTask{Task: task})
	if err != nil {
		b.Fatal(err)
	}
	fb.apply(c)
	return fb
}

func (fb *finishBench) apply(c *Command) *Result {
	fb.index++
	fb.now++
	c.Now, c.Node = fb.now, "n1"
	out := fb.f.ApplyBatch([]*raft.Log{{Index: fb.index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}})
	r, ok := out[0].(*Result)
	if !ok || r.Err != nil {
		fb.b.Fatalf("apply %s: %v", c.Type, out[0])
	}
	return r
}

// ready submits n instances due now: READY at once.
func (fb *finishBench) ready(n int) []uint64 {
	return submittedIDs(fb.b, fb.apply(&Command{Type: CmdSubmit, Body: EncodeSubmit(&Submit{Task: "t", Items: make([]SubmitItem, n)})}))
}

// submittedIDs returns the instance ids a submit command's result lists.
func submittedIDs(tb testing.TB, r *Result) []uint64 {
	tb.Helper()
	res, err := DecodeSubmitResult(r)
	if err != nil {
		tb.Fatal(err)
	}
	ids := make([]uint64, len(res.Instances))
	for i, it := range res.Instances {
		ids[i], _ = model.ParseID(it.ID)
	}
	return ids
}

// run leases ids to one executor and ends every attempt with success in
// one complete_batch entry.
func (fb *finishBench) run(ids []uint64) {
	c, err := NewCommand(CmdLease, "", "bench", Lease{Executor: "e1", IDs: ids, LeaseMs: 30_000})
	if err != nil {
		fb.b.Fatal(err)
	}
	fb.apply(c)
	cs := make([]Complete, len(ids))
	for i, id := range ids {
		cs[i] = Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: true}}
	}
	fb.apply(&Command{Type: CmdCompleteBatch, Body: EncodeCompleteBatch(cs)})
}

// BenchmarkApplyFinish measures the state machine's cost per instance of
// leasing READY instances and completing them (ns/op per instance; 256 to
// an entry, as an executor with free slots polls and reports).
func BenchmarkApplyFinish(b *testing.B) {
	const group = 256
	fb := newFinishBench(b)
	var ids []uint64
	for len(ids) < b.N {
		ids = append(ids, fb.ready(min(10_000, b.N-len(ids)))...)
	}
	b.ResetTimer()
	defer cpuTimer(b)()
	for i := 0; i < b.N; i += group {
		fb.run(ids[i:min(i+group, b.N)])
	}
}

// BenchmarkApplyPrune measures the cost per instance of pruning finished
// instances, 1,000 to an entry (as the leader's retention proposes them).
func BenchmarkApplyPrune(b *testing.B) {
	const group = 1000
	fb := newFinishBench(b)
	var ids []uint64
	for len(ids) < b.N {
		got := fb.ready(group)
		fb.run(got)
		ids = append(ids, got...)
	}
	b.ResetTimer()
	defer cpuTimer(b)()
	for i := 0; i < b.N; i += group {
		c, err := NewCommand(CmdPrune, "", "bench", Prune{IDs: ids[i:min(i+group, b.N)]})
		if err != nil {
			b.Fatal(err)
		}
		var res struct{ Pruned int }
		if err := fb.apply(c).Decode(&res); err != nil || res.Pruned != min(group, b.N-i) {
			b.Fatalf("pruned %d (%v)", res.Pruned, err)
		}
	}
}

// cpuTimer starts counting the process's CPU time (user and system, GC
// included); the function it returns reports it per operation as
// cpu-ns/op. On a shared machine ns/op also counts the time spent waiting
// for a core; CPU time much less so.
func cpuTimer(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
