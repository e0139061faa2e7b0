package dispatch

import (
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// BenchmarkDispatcher_pick: a poll for 64 of 100,000 READY instances of
// its route (alone, or interleaved with as many of another route), each
// picked instance then leased and replaced.
func BenchmarkDispatcher_pick(b *testing.B) {
	for _, mixed := range []bool{false, true} {
		name := "one-route"
		if mixed {
			name = "two-routes-interleaved"
		}
		b.Run(name, func(b *testing.B) {
			td := &testDispatcher{store: &fakeStore{tasks: map[string]*model.Task{}}, props: &proposals{}}
			td.store.put(task("sdk", greetAct, map[string]string{"kind": "sdk"}))
			td.store.put(task("shell", shellAct, map[string]string{"kind": "shell"}))
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
			caps, labels := &model.Capabilities{Handlers: []string{"greet"}}, map[string]string{"kind": "sdk"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ids, _ := td.pick(caps, labels, 64)
				for _, x := range ids {
					td.InstanceChanged(fsm.InstanceChange{ID: x, Task: "sdk", State: model.StateRunning})
					delete(td.taken, x)
				}
				for range ids {
					add()
				}
			}
		})
	}
}
