package agent

import (
	"context"

	"github.com/ax-scheduler/ax/alerts"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/replica"
)

// establish lists a term's services (see replica.Config.Establish), made
// once its barrier is done: a leader whose clock is off hands leadership
// over before any of them starts (the clock guard), then each role makes
// what it leads the term with (the dispatcher, the scheduler).
func (a *Agent) establish(t *replica.Term) []replica.Service {
	guard := a.cl.Guard(t.Context())
	if t.Context().Err() != nil {
		return nil
	}
	services := []replica.Service{{Name: "record-self", Run: a.cl.RecordSelf}, a.exec.StartTerm(t)}
	services = append(services, a.tasks.StartTerm(t)...)
	services = append(services,
		replica.Service{Name: "alerts", Run: a.al.RunFailures},
		replica.Service{Name: "watchdog", Run: a.al.RunWatchdog},
		replica.Service{Name: "alert-notify", Run: a.al.RunNotify},
		a.tasks.RetentionService(),
		replica.Service{Name: "cluster-state", Run: a.cl.EnsureClusterState},
		replica.Service{Name: "seal-channels", Run: a.chans.RunSealing},
		replica.Service{Name: "clock-guard", Run: guard.Run},
	)
	return append(services, a.cfg.testServices...)
}

// The state machine's observer: every node's roles learn of each change
// (fsm.Observer), with the term the changes feed (nil while following).
var _ fsm.RestoreObserver = (*Agent)(nil)

// TaskChanged implements fsm.Observer.
func (a *Agent) TaskChanged(name string) {
	t := a.rep.Observed()
	a.console.TaskChanged(name)
	a.tasks.TaskChanged(name, t)
	a.exec.TaskChanged(name, t)
}

// InstanceChanged implements fsm.Observer.
func (a *Agent) InstanceChanged(c fsm.InstanceChange) {
	t := a.rep.Observed()
	a.tasks.InstanceChanged(&c, t)
	a.console.InstanceChanged(&c)
	a.al.InstanceChanged(&c, t != nil)
	a.exec.InstanceChanged(&c, t)
	if t != nil {
		a.trace.InstanceChanged(&c)
	}
}

// Scheduled implements fsm.Observer.
func (a *Agent) Scheduled(id uint64, dueMs int64) { a.tasks.Scheduled(id, dueMs, a.rep.Observed()) }

// Restored implements fsm.RestoreObserver: a snapshot replaced the state.
func (a *Agent) Restored() { a.tasks.Restored() }

// executorCount is how many executors the leader hears from, for /healthz.
func (a *Agent) executorCount() (int, bool) {
	if d := a.exec.Dispatcher(); d != nil {
		return len(d.Executors()), true
	}
	return 0, false
}

// leaderExecutors is what this term's dispatcher knows of the executors,
// for the watchdog's executor_lost; nil when this node does not lead.
func (a *Agent) leaderExecutors() alerts.Executors {
	if d := a.exec.Dispatcher(); d != nil {
		return d
	}
	return nil
}

// Health is this node's /healthz answer (cluster.Cluster.Health).
func (a *Agent) Health(ctx context.Context) *member.Health { return a.cl.Health(ctx) }
