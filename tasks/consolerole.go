package tasks

import (
	"context"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// ConsoleConfig configures the console's reads and live views.
type ConsoleConfig struct {
	// Clock is the node's time base (next fire times, calendars).
	Clock interface{ Now() time.Time }
	// Stopping is closed when the node shuts down: no new event stream.
	Stopping <-chan struct{}
	// What the overview asks of the other roles: the cluster status, the
	// leader's executors, the alerts only this node sees.
	Cluster      func(ctx context.Context) (*model.ClusterStatus, error)
	Executors    func(ctx context.Context) (*model.ExecutorList, error)
	QuorumAlerts func() []model.Alert
}

// ConsoleState is what the console reads of the state machine (*fsm.FSM).
type ConsoleState interface {
	Overview(nowMs int64) (*live.Overview, error)
	FiringAlerts() ([]model.Alert, error)
	NotificationsPending() int
	TaskSummaries(f model.TaskFilter, runs int) (*live.TaskSummaryList, error)
	TaskLinks() ([]fsm.TaskLink, error)
	LastRuns(names []string) (map[string]live.RunBrief, error)
	GetTask(name string) (*model.Task, error)
	ScanTask(task string, fn func(b fsm.Brief)) error
	SlotsBusy(task string) (int, error)
	TaskSchedules() ([]fsm.TaskSchedule, error)
	AppliedIndex() uint64
}

// Console answers the console's aggregate reads (api.ConsoleBackend) and
// its live views (api.LiveBackend): this node's applied changes as event
// streams, the upcoming fire times. Each works on any node from its own
// state.
type Console struct {
	cfg   ConsoleConfig
	state ConsoleState
	live  *liveHub // event-stream subscribers (live.go)
}

var (
	_ api.ConsoleBackend = (*Console)(nil)
	_ api.LiveBackend    = (*Console)(nil)
)

// NewConsole returns the console's reads.
func NewConsole(cfg ConsoleConfig, state ConsoleState) *Console {
	return &Console{cfg: cfg, state: state, live: newLiveHub()}
}
