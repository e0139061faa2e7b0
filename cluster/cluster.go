package cluster

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/clock"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/wheel"
)

// Config configures a node's cluster role.
type Config struct {
	NodeID string
	// Join lists HTTP addresses of existing members (a new node joins
	// through them).
	Join []string
	// AdvertiseHTTP is the HTTP address the other nodes reach this one at.
	AdvertiseHTTP string
	// DataDir is the node's data directory (a state to restore is
	// received there).
	DataDir string
	// TLS: Raft connections authenticate with node certificates, not a
	// member key.
	TLS bool
	// Version is the binary's version (/healthz, the cluster status).
	Version string
	Logger  hclog.Logger
	// Raw is the node's clock, uncorrected; Base the time base over it
	// (held to the cluster's by the clock monitor this role runs).
	Raw           wheel.Clock
	Base          *clock.Base
	MaxClockSkew  time.Duration
	ClockInterval time.Duration
	// OnClockStep is called when the time base changes for a step of the
	// wall clock (the scheduler wakes).
	OnClockStep func()
	// What /healthz shows of the other roles, each optional: the leader's
	// timing wheel, its executors, and the alerts only this node sees.
	Wheel        func() (size int, load time.Duration, ok bool)
	Executors    func() (n int, ok bool)
	QuorumAlerts func() []model.Alert
}

// Replica is what the cluster role needs of the replica
// (*replica.Replica).
type Replica interface {
	replica.Leader
	replica.Proposer
	ProposeOwn(ctx context.Context, t command.Type, body any) error
	IsLeader() bool
	LeaderChanged() <-chan struct{}
	Members(ctx context.Context) ([]replica.Member, error)
	Peer(addr string) *client.Client
	// Raft is the Raft member: its membership and status (nil before the
	// replica starts).
	Raft() *raftnode.Node
	// RestoreState restores a state file as the cluster's state; only
	// the leader can.
	RestoreState(ctx context.Context, path string) (*fsm.StateInfo, error)
}

// State is what the cluster role reads of the state machine (*fsm.FSM).
type State interface {
	Nodes() (map[string]command.NodeInfo, error)
	Proto() int
	MemberKey() []byte
	AppliedIndex() uint64
	CountTasks() int
	Pending() int
	ActiveCount() int
	LastFired() string
	Failed() error
	TimeHWM() int64
	Changed() <-chan struct{}
	WriteState(w io.Writer, started func(index uint64)) (int64, error)
}

// Cluster is a node's membership (join, records, removal, leadership
// transfer), its health and the cluster's, and its clock held to the
// members' (api.ClusterBackend).
type Cluster struct {
	cfg   Config
	log   hclog.Logger
	rep   Replica
	state State
	clock *clock.Monitor
	peers peerContact // the leader's view of its members' Raft contact (metrics.go)
}

var _ api.ClusterBackend = (*Cluster)(nil)

// New returns the cluster role; Run runs its loops (once the replica has
// started).
func New(cfg Config, rep Replica, state State) *Cluster {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	c := &Cluster{cfg: cfg, log: cfg.Logger, rep: rep, state: state}
	c.clock = clock.NewMonitor(clock.MonitorConfig{Self: cfg.NodeID, Raw: cfg.Raw, Base: cfg.Base, MaxSkew: cfg.MaxClockSkew,
		Interval: cfg.ClockInterval, Logger: cfg.Logger, Peers: c.clockPeers, Ask: c.askClock, OnStep: cfg.OnClockStep})
	return c
}

// Clock is the clock monitor (the watchdog's clock rules read it).
func (c *Cluster) Clock() *clock.Monitor { return c.clock }

// Run runs the clock monitor and keeps this node a member with an
// up-to-date record (register) until ctx ends.
func (c *Cluster) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() { defer close(done); c.clock.Run(ctx) }()
	c.register(ctx)
	<-done
}

// Guard is a term's clock guard (see clock.Monitor.Guard): a leader
// whose clock is off hands leadership over before its services start.
func (c *Cluster) Guard(ctx context.Context) *clock.Guard {
	return c.clock.Guard(ctx, c.raft().TransferLeadership)
}

// clockPeers lists the members for the clock monitor.
func (c *Cluster) clockPeers(ctx context.Context) ([]clock.Peer, error) {
	ms, err := c.rep.Members(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]clock.Peer, len(ms))
	for i, m := range ms {
		out[i] = clock.Peer{ID: m.ID, HTTP: m.HTTP, Voter: m.Voter}
	}
	return out, nil
}

// askClock reads a member's wall clock and its latest clock step.
func (c *Cluster) askClock(ctx context.Context, addr string) (time.Time, *member.ClockJump, error) {
	var r member.ClockReading
	err := c.rep.Peer(addr).Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/internal/time", NoRetry: true}, &r)
	return time.UnixMilli(r.UnixMs), r.Jump, err
}

// raft is the replica's Raft member.
func (c *Cluster) raft() *raftnode.Node { return c.rep.Raft() }
