package dispatch

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// canaryFake is a store that knows canary rollouts: CanaryTask answers
// what a task's canaries run.
type canaryFake struct {
	*fakeStore
	mu     sync.Mutex
	canary map[string]*model.Task
}

func (s *canaryFake) CanaryTask(name string) (*model.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.canary[name]; ok {
		return t, nil
	}
	return s.GetTask(name)
}

// TestDispatcher_canaryRoute: a task's canary instances are routed by
// what its canary runs (here: its testLabels), its other instances by
// the task; once the rollout ends (TaskChanged), READY canaries follow
// the task.
func TestDispatcher_canaryRoute(t *testing.T) {
	fs := &fakeStore{tasks: map[string]*model.Task{}}
	fs.put(task("job", shellAct, nil))
	cs := &canaryFake{fakeStore: fs, canary: map[string]*model.Task{"job": task("job", shellAct, map[string]string{"env": "test"})}}
	td := &testDispatcher{store: fs, props: &proposals{}, now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	td.Dispatcher = New(Config{Lease: 10 * time.Second, Now: func() time.Time { return td.now }}, cs, td.props.propose)
	td.ready(1, "job")
	td.InstanceChanged(fsm.InstanceChange{ID: 2, Task: "job", State: model.StateReady, Canary: true})
	td.ready(3, "job")
	if got, _ := td.pick(nil, nil, 10); !slices.Equal(got, []uint64{1, 3}) {
		t.Fatalf("a production executor picked %v, want 1 and 3 (not the canary)", got)
	}
	if got, _ := td.pick(nil, map[string]string{"env": "test"}, 10); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("a test executor picked %v, want the canary, 2", got)
	}
	delete(td.taken, 2)
	cs.mu.Lock()
	delete(cs.canary, "job")
	cs.mu.Unlock()
	td.TaskChanged("job")
	if got, _ := td.pick(nil, nil, 10); !slices.Equal(got, []uint64{2}) {
		t.Errorf("after the rollout ended a production executor picked %v, want 2", got)
	}
}

// TestDispatcher_canaryShards: a canary instance fans out as its
// rollout's canary says (here the canary makes the task sharded), the
// task's other instances as the task does.
func TestDispatcher_canaryShards(t *testing.T) {
	fs := &fakeStore{tasks: map[string]*model.Task{}}
	fs.put(task("job", shellAct, nil))
	sharded := task("job", shellAct, nil)
	sharded.Policy.Shards = 3
	cs := &canaryFake{fakeStore: fs, canary: map[string]*model.Task{"job": sharded}}
	td := &testDispatcher{store: fs, props: &proposals{}, now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	td.Dispatcher = New(Config{Lease: 10 * time.Second, Now: func() time.Time { return td.now }}, cs, td.props.propose)
	td.ready(1, "job")
	td.InstanceChanged(fsm.InstanceChange{ID: 2, Task: "job", State: model.StateReady, Canary: true})
	td.fanOut(context.Background())
	var bodies []command.Shard
	for _, c := range ofType(td.props.cmds, command.TypeShard) {
		var s command.Shard
		if err := json.Unmarshal(c.Body, &s); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, s)
	}
	if len(bodies) != 1 || bodies[0].ID != 2 || bodies[0].Total != 3 {
		t.Fatalf("shard commands %+v, want the canary (2) in 3 shards", bodies)
	}
	if got, _ := td.pick(nil, nil, 10); !slices.Equal(got, []uint64{1}) {
		t.Errorf("picked %v, want the stable instance 1 leased as it is", got)
	}
}
