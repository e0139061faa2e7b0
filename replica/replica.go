package replica

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/ax-scheduler/ax/tlsutil"
)

// Config configures a replica.
type Config struct {
	NodeID  string
	DataDir string
	// RaftAddr is Raft's listen address, AdvertiseRaft the address the
	// other members reach it at (default RaftAddr).
	RaftAddr      string
	AdvertiseRaft string
	// AdvertiseHTTP is the HTTP address the other nodes reach this one
	// at: recorded for joins and forwarding, and compared with the
	// leader's.
	AdvertiseHTTP string
	// Bootstrap makes a new one-node cluster when the data dir holds no
	// Raft state (no -join).
	Bootstrap bool
	// Restore, when set, is a state-machine snapshot file the new
	// cluster starts from (Start refuses a data dir that holds a state
	// machine already).
	Restore string
	// Token is the management token; calls to peers send it (a cluster
	// upgraded from a release without a member key admits members by it).
	Token string
	// TLS, when set, makes Raft mutual TLS and calls to peers https with
	// the node's certificate; without it Raft connections authenticate
	// with the cluster's member key (peerauth.go).
	TLS *tlsutil.Holder
	// FSMSync fsyncs the state machine at every batch.
	FSMSync  bool
	Observer fsm.Observer
	Logger   hclog.Logger
	// Now is the node's time base (held to the cluster's clock): the
	// leader stamps it into commands.
	Now func() time.Time
	// MaxClockSkew is how far the applied leader time may be ahead of
	// this leader's clock before the stamper warns.
	MaxClockSkew time.Duration
	// LeaderWait bounds how long a write waits for a leader (default 5s).
	LeaderWait time.Duration
	// Raft tuning and failure detection, passed to raftnode.
	SnapshotThreshold  uint64
	SnapshotBytes      uint64
	SnapshotInterval   time.Duration
	TrailingLogs       uint64
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// AppendFault fails Raft log appends while it returns an error
	// (raftnode.Config.AppendFault; tests only).
	AppendFault func() error
	// Stopping, when closed, says the node is shutting down: the current
	// term ends at once (its services stop: the dispatcher releases its
	// parked polls, the scheduler stops firing), no new term starts and
	// read rounds in flight end, while Raft and the state machine go on
	// serving until Stop. Nil: only Stop does that.
	Stopping <-chan struct{}
	// Establish makes a term's services once its barrier is done (see
	// Term). It runs on the term's goroutine and may take its time (the
	// clock guard hands leadership over there); services it returns are
	// started together, after the term is ready, and waited for together
	// when it ends. Nil: a term runs only its group commit.
	Establish func(t *Term) []Service
}

// Replica is this node's member of the Raft group and its copy of the
// state machine: everything that writes goes through it (Propose, or
// OnLeader for what only the leader answers), and it tells whether and
// since when this node leads (Current, Observed).
type Replica struct {
	cfg     Config
	log     hclog.Logger
	fsm     *fsm.FSM
	node    *raftnode.Node
	stamper *stamper
	stopCh  chan struct{}
	wg      sync.WaitGroup

	clientsMu sync.Mutex
	clients   map[string]*client.Client

	terms terms      // the leader loop and the current term (term.go)
	reads readRounds // batched read indexes (reads.go)
	// Group commit counters (batcher.go).
	entries, commands atomic.Uint64
}

// Open opens the state machine. Raft starts with Start, once the
// observer is ready for the changes it applies.
func Open(cfg Config) (*Replica, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LeaderWait <= 0 {
		cfg.LeaderWait = 5 * time.Second
	}
	if err := refuseOldRestore(cfg.DataDir); err != nil {
		return nil, err
	}
	f, err := fsm.Open(fsm.Config{Path: filepath.Join(cfg.DataDir, "fsm.db"), NoSync: !cfg.FSMSync,
		Logger: cfg.Logger, Observer: cfg.Observer})
	if err != nil {
		return nil, err
	}
	r := &Replica{cfg: cfg, log: cfg.Logger, fsm: f, stopCh: make(chan struct{}), clients: map[string]*client.Client{}}
	r.terms.r, r.reads.r = r, r
	r.terms.restores = make(chan restoreReq)
	r.stamper = &stamper{now: cfg.Now, hwm: f.TimeHWM, max: cfg.MaxClockSkew, log: r.log}
	return r, nil
}

// Start starts Raft and the replica's loops: the leader loop (terms) and,
// without TLS, the one that keeps Raft's member authentication up to the
// state machine.
func (r *Replica) Start() error {
	var restore *raftnode.Restore
	if r.cfg.Restore != "" {
		index, err := fsm.SnapshotIndex(r.cfg.Restore)
		if err == nil && r.fsm.AppliedIndex() != 0 {
			err = fmt.Errorf("the data dir %s already holds a state machine; use an empty one", r.cfg.DataDir)
		}
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		restore = &raftnode.Restore{Path: r.cfg.Restore, Index: index}
	}
	var peerAuth *raftnode.PeerAuthConfig
	if r.cfg.TLS == nil {
		peerAuth = peerAuthConfig(r.fsm)
	}
	node, err := raftnode.New(raftnode.Config{
		ID: r.cfg.NodeID, RaftAddr: r.cfg.RaftAddr, AdvertiseAddr: r.cfg.AdvertiseRaft, DataDir: r.cfg.DataDir, Restore: restore,
		Bootstrap: r.cfg.Bootstrap, FSM: r.fsm, Logger: r.log, TLS: raftTLS(r.cfg.TLS), PeerAuth: peerAuth,
		SnapshotThreshold: r.cfg.SnapshotThreshold, SnapshotBytes: r.cfg.SnapshotBytes, SnapshotInterval: r.cfg.SnapshotInterval,
		TrailingLogs: r.cfg.TrailingLogs, HeartbeatTimeout: r.cfg.HeartbeatTimeout, ElectionTimeout: r.cfg.ElectionTimeout,
		LeaderLeaseTimeout: r.cfg.LeaderLeaseTimeout, AppendFault: r.cfg.AppendFault,
	})
	if err != nil {
		return err
	}
	r.node = node
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.terms.leaderLoop() }()
	go func() { defer r.wg.Done(); watchPeerAuth(r.stopCh, r.fsm, r.node, r.log) }()
	return nil
}

// Stop ends the current term (waiting for its services), shuts Raft
// down and waits for the replica's loops. The state machine stays open
// for whatever still reads it; Close closes it.
func (r *Replica) Stop() error {
	select {
	case <-r.stopCh:
		return nil
	default:
	}
	close(r.stopCh)
	var err error
	if r.node != nil {
		err = r.node.Close()
	}
	r.wg.Wait()
	return err
}

// Close stops the replica if it runs and closes the state machine.
func (r *Replica) Close() error {
	err := r.Stop()
	if ferr := r.fsm.Close(); err == nil {
		err = ferr
	}
	return err
}

// State is the state machine, for reads (every write goes through
// Propose).
func (r *Replica) State() *fsm.FSM { return r.fsm }

// Raft is the Raft member, for membership and status (the cluster role):
// its errors are raftnode's.
func (r *Replica) Raft() *raftnode.Node { return r.node }

// IsLeader reports whether this node is the Raft leader (its term may
// not be ready yet: see Current).
func (r *Replica) IsLeader() bool { return r.node.IsLeader() }

// LeaderChanged is closed when the leader changes.
func (r *Replica) LeaderChanged() <-chan struct{} { return r.node.LeaderChanged() }

// peerDialTimeout bounds connecting to a peer: a leader that does not
// accept a connection within it is tried again after resolving the leader
// again (a dial that failed sent nothing).
const peerDialTimeout = 2 * time.Second

// Peer returns the client for one peer's HTTP address: it sends this
// node's member credentials (peerHeaders), once per call (retrying is
// the caller's job, OnLeader's for the leader).
func (r *Replica) Peer(addr string) *client.Client {
	r.clientsMu.Lock()
	defer r.clientsMu.Unlock()
	c, ok := r.clients[addr]
	if !ok {
		c = client.New(client.Config{Addrs: []string{addr}, TLS: r.PeerTLS(), Token: r.cfg.Token, Actor: r.actor(),
			Header: r.peerHeaders, Once: true, DialTimeout: peerDialTimeout})
		r.clients[addr] = c
	}
	return c
}

// PeerTLS is the TLS of this node's calls to nodes (forwarding, joins,
// read index, its embedded executor), nil without certificates.
func (r *Replica) PeerTLS() *tls.Config {
	if r.cfg.TLS == nil {
		return nil
	}
	return r.cfg.TLS.PeerClientConfig()
}

// peerHeaders are the headers this node adds to every request to a peer:
// its member key (without TLS; with TLS its certificate speaks), the
// principal of the request it acts for, if any, and for a forwarded
// request the forwarded mark and its request id.
func (r *Replica) peerHeaders(ctx context.Context) http.Header {
	h := http.Header{}
	if r.cfg.TLS == nil {
		if key := r.fsm.MemberKey(); key != nil {
			h.Set(api.HeaderMember, api.MemberKeyHeader(key))
		}
	}
	if p := api.PrincipalFrom(ctx); p != nil {
		if enc, err := api.EncodePrincipal(p); err == nil {
			h.Set(api.HeaderPrincipal, enc)
		}
	}
	forwardHeaders(ctx, h)
	return h
}

func raftTLS(h *tlsutil.Holder) *raftnode.TLSConfig {
	if h == nil {
		return nil
	}
	return &raftnode.TLSConfig{Server: h.RaftServerConfig(), Client: h.PeerClientConfig()}
}

// LeaderID is the leader's id as Raft knows it, "" while there is none.
func (r *Replica) LeaderID() string {
	id, _ := r.node.Leader()
	return id
}
