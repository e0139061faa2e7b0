package dispatch

import (
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// BenchmarkDispatcher_pick: a poll for 64 of 100,000 READY instances of
// its route (alone, or interleaved with as many of another route), each
// picked instance then leased and replaced. In the "served" cases the
// executor runs both routes, so every pick compares the two queues'
// heads: by age, or (priorities) by effective priority, the shell task
// at policy.priority 1 (its head, aged as long, goes first).
func BenchmarkDispatcher_pick(b *testing.B) {
	for _, c := range []struct {
		name                 string
		mixed, served, prios bool
	}{{"one-route", false, false, false}, {"two-routes-interleaved", true, false, false},
		{"two-routes-served", true, true, false}, {"two-routes-served-priorities", true, true, true}} {
		mixed := c.mixed
		b.Run(c.name, func(b *testing.B) {
			td := &testDispatcher{store: &fakeStore{tasks: map[string]*model.Task{}}, props: &proposals{}}
			td.store.put(task("sdk", greetAct, map[string]string{"kind": "sdk"}))
			sh := task("shell", shellAct, map[string]string{"kind": "shell"})
			if c.served {
				sh.Policy.ExecutorLabels = nil
			}
			if c.prios {
				sh.Policy.Priority = 1
			}
			td.store.put(sh)
			td.Dispatcher = New(Config{Lease: 10 * time.Second}, td.store, td.props.propose)
			id := uint64(0)
			add := func() {
				id++
				td.ready(id, "sdk")
				if mixed {
					id++
					td.ready(id, "shell")
				}
			}
			for i := 0; i < 100_000; i++ {
				add()
			}
			caps, labels := &model.Capabilities{Shell: c.served, Handlers: []string{"greet"}}, map[string]string{"kind": "sdk"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ids, _ := td.pick(caps, labels, 64)
				for _, x := range ids {
					td.InstanceChanged(fsm.InstanceChange{ID: x, State: model.StateRunning})
					delete(td.taken, x)
				}
				for range ids {
					add()
				}
			}
		})
	}
}
