package dispatch

import (
	"reflect"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// TestDispatcher_ReadyDepth: the READY depth per route follows instances
// becoming READY, leaving it and moving with a task's changed route.
func TestDispatcher_ReadyDepth(t *testing.T) {
	td := newTestDispatcher(t, task("sh", shellAct, nil), task("greet", greetAct, map[string]string{"zone": "b", "pool": "x"}))
	td.ready(1, "sh")
	td.ready(2, "sh")
	td.ready(3, "greet")
	td.ready(3, "greet") // already READY: counted once
	want := []RouteDepth{{Action: "sdk", Handler: "greet", Labels: "pool=x,zone=b", Ready: 1}, {Action: "shell", Ready: 2}}
	if got := td.ReadyDepth(); !reflect.DeepEqual(got, want) {
		t.Fatalf("depth %+v, want %+v", got, want)
	}
	td.InstanceChanged(fsm.InstanceChange{ID: 1, Task: "sh", State: model.StateRunning})
	td.InstanceChanged(fsm.InstanceChange{ID: 3, Task: "greet", State: model.StateCanceled})
	td.store.put(task("sh", shellAct, map[string]string{"pool": "y"}))
	td.TaskChanged("sh")
	td.ready(4, "sh") // reads the new route, moving 2 along
	want = []RouteDepth{{Action: "shell", Labels: "pool=y", Ready: 2}}
	if got := td.ReadyDepth(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after changes: depth %+v, want %+v", got, want)
	}
}

// TestDispatcher_Started: the dispatch latency is the time between the
// committed READY and RUNNING changes; instances loaded READY (no commit
// time) are not reported.
func TestDispatcher_Started(t *testing.T) {
	type obs struct {
		task   string
		waited time.Duration
	}
	var got []obs
	td := newTestDispatcher(t, task("sh", shellAct, nil))
	td.cfg.Started = func(task string, waited time.Duration) { got = append(got, obs{task, waited}) }
	td.InstanceChanged(fsm.InstanceChange{ID: 1, Task: "sh", State: model.StateReady, At: 1_000})
	td.InstanceChanged(fsm.InstanceChange{ID: 2, Task: "sh", State: model.StateReady})
	td.InstanceChanged(fsm.InstanceChange{ID: 1, Task: "sh", State: model.StateRunning, Attempt: 1, At: 1_250})
	td.InstanceChanged(fsm.InstanceChange{ID: 2, Task: "sh", State: model.StateRunning, Attempt: 1, At: 1_300})
	if want := []obs{{"sh", 250 * time.Millisecond}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("observed %+v, want %+v", got, want)
	}
}
