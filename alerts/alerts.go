package alerts

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/clock"
	"github.com/ax-scheduler/ax/dispatch"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	axmetrics "github.com/ax-scheduler/ax/metrics"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/notify"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/wheel"
)

// Config configures a node's alerting.
type Config struct {
	NodeID string
	Logger hclog.Logger
	// Clock is the node's time base: the watchdog evaluates on it.
	Clock wheel.Clock
	// DefaultTimeout is the agent's -default-timeout (running_overtime).
	DefaultTimeout time.Duration
	// The rules' settings (see agent.Config, docs/alerts.md).
	WatchInterval  time.Duration
	StuckAfter     time.Duration
	SilenceGrace   time.Duration
	OvertimeGrace  time.Duration
	NotifyInterval time.Duration
	MemberGrace    time.Duration
	AnomalyWindow  time.Duration
	Silence        time.Duration
	// ConsoleURL is the base of the console links in notifications.
	ConsoleURL string
	// Sealer opens and seals channel values; nil without an encrypt key.
	Sealer Sealer
	// Notifier, when set, replaces delivery to the channels (tests).
	Notifier Notifier
	// Clocks is the clock monitor (member_unreachable, clock_skew,
	// clock_jump); nil: those rules hold.
	Clocks Clocks
	// Executors returns what the current term's dispatcher knows of the
	// executors (executor_lost), nil when this node does not lead.
	Executors func() Executors
}

// State is what alerting reads of the state machine (*fsm.FSM).
type State interface {
	Proto() int
	GetTask(name string) (*model.Task, error)
	GetInstance(id uint64) (*model.Instance, error)
	ListInstances(f model.InstanceFilter) (*model.InstanceList, error)
	Log(id uint64) (*model.InstanceLog, error)
	TaskVersions(fn func(name string, version uint64, watermark int64, runs uint64)) error
	ActiveInstances(fn func(fsm.Active)) error
	RecentMisfires(n int) ([]live.RecentMisfire, error)
	FiringAlerts() ([]model.Alert, error)
	ListAlerts(f fsm.AlertFilter) (*model.AlertList, error)
	Silences(nowMs int64) ([]model.Silence, error)
	PendingAlerts() ([]uint64, error)
	AlertPending(id uint64) bool
	PendingNotifications(limit int) ([]fsm.AlertTransition, error)
	ChannelRecords() ([]fsm.ChannelRecord, error)
	Channel(name string) (*fsm.ChannelRecord, bool)
}

// Replica is what alerting needs of the replica (*replica.Replica).
type Replica interface {
	replica.Proposer
	ProposeOwn(ctx context.Context, t command.Type, body any) error
	// LeaderID is the leader's id, "" while there is none.
	LeaderID() string
}

// Notifier delivers alert notifications.
type Notifier interface {
	Notify(ctx context.Context, n model.AlertNotification) error
}

// Sealer seals and opens channel values (*access.Sealer).
type Sealer interface {
	Seal(name string, plain []byte) []byte
	Open(name string, sealed []byte) ([]byte, error)
}

// Clocks is what the watchdog's clock rules read of the clock monitor
// (*clock.Monitor).
type Clocks interface {
	Silent(grace time.Duration) ([]clock.Silent, bool)
	Off() ([]clock.Offset, bool)
	MaxSkew() time.Duration
	MemberJumps() (jumps map[string]*member.ClockJump, unknown map[string]bool)
	Stepped() <-chan struct{}
}

// Executors is what executor_lost reads of the leader's dispatcher
// (*dispatch.Dispatcher).
type Executors interface {
	LostExecutors() []dispatch.LostExecutor
	HeardFrom(name string) bool
}

// Alerts is a node's alerting: the alert records and silences
// (api.AlertsBackend), the leader's watchdog (its rules), failure
// handling (onFailure triggers, instance_failed), the notification loop
// and this node's quorum watch.
type Alerts struct {
	cfg        Config
	log        hclog.Logger
	state      State
	rep        Replica
	notifier   Notifier
	notes      *axmetrics.Notifications
	quorum     *quorumWatch            // this node's quorum_lost (records.go)
	watchCache map[string]*watchedTask // the watchdog's tasks (watchdog.go)
	// newMisses are the deadline_missed alerts the last evaluation
	// raised anew (ax_alerts_total{event="deadline_missed"} once
	// proposed); only the watchdog's goroutine touches it.
	newMisses []string
	feed      *watchFeed  // what the watchdog learns from the observer (watchfeed.go)
	failed    chan uint64 // FAILED instances for the failure handler (failures.go)
}

var _ api.AlertsBackend = (*Alerts)(nil)

// New returns a node's alerting, delivering through ch (the channels)
// unless cfg.Notifier is set.
func New(cfg Config, state State, rep Replica, ch *Channels) *Alerts {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	a := &Alerts{cfg: cfg, log: cfg.Logger, state: state, rep: rep, notifier: cfg.Notifier, notes: ch.notes,
		quorum: &quorumWatch{}, feed: newWatchFeed(cfg.Clock.Now(), cfg.AnomalyWindow), failed: make(chan uint64, 1024)}
	if a.notifier == nil {
		a.notifier = ch
	}
	return a
}

// InstanceChanged takes an instance change the state machine applied (on
// every node: the watchdog's feed); leading says this node leads the term
// the change belongs to, which alone handles a failure.
func (a *Alerts) InstanceChanged(c *fsm.InstanceChange, leading bool) {
	a.feed.observe(c)
	if leading && c.State == model.StateFailed {
		select {
		case a.failed <- c.ID:
		default: // the failure handler's periodic rescan will find it
		}
	}
}

// QuorumAlerts are the alerts only this node sees (quorum_lost).
func (a *Alerts) QuorumAlerts() []model.Alert { return a.quorum.alerts() }

// Channels are the notification channels (api.ChannelBackend) and the
// delivery of notifications to them.
type Channels struct {
	log    hclog.Logger
	state  State
	rep    Replica
	sealer Sealer // nil without an encrypt key
	n      *notify.Notifier
	notes  *axmetrics.Notifications
	node   string // this node's id, named in a test send
}

var _ api.ChannelBackend = (*Channels)(nil)

// NewChannels returns the channels; sender delivers (nil: notify's
// default).
func NewChannels(cfg Config, state State, rep Replica, sender *notify.Sender) *Channels {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	ch := &Channels{log: cfg.Logger, state: state, rep: rep, sealer: cfg.Sealer, notes: axmetrics.NewNotifications(), node: cfg.NodeID}
	ch.n = notify.New(notify.Config{Channels: ch.Targets, Failure: ch.failure, ConsoleURL: cfg.ConsoleURL, Node: cfg.NodeID,
		Sender: sender, Logger: cfg.Logger.Named("notify"), Count: ch.notes.Notified})
	return ch
}

// Register registers the notification metrics (ax_alerts_total,
// ax_notifications_total, ...).
func (ch *Channels) Register(reg prometheus.Registerer) { ch.notes.Register(reg) }
