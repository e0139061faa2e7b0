package raftnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// Sentinel errors returned by Node. Raft's own errors never leave this
// package.
var (
	// ErrNotLeader: this node is not the leader; nothing was proposed.
	ErrNotLeader = errors.New("raftnode: not the leader")
	// ErrLeadershipLost: the command was proposed but leadership was lost
	// before it committed. It may or may not be applied: retry it with the
	// same request id.
	ErrLeadershipLost = errors.New("raftnode: leadership lost, outcome unknown")
	// ErrTimeout: the context ended before the operation completed. A
	// proposal may still commit later.
	ErrTimeout = errors.New("raftnode: timed out")
	// ErrShutdown: the node is shut down.
	ErrShutdown = errors.New("raftnode: shut down")
)

// StateMachine is the FSM a Node replicates into. AppliedIndex is the
// index the state machine has durably applied (its own bookkeeping), and
// Rebuilt says whether it lost its local state and needs the latest
// snapshot restored on start.
type StateMachine interface {
	raft.BatchingFSM
	AppliedIndex() uint64
	Rebuilt() bool
}

// Config configures a Node.
type Config struct {
	ID        string
	RaftAddr  string // bind address, host:port (advertised unless AdvertiseAddr)
	DataDir   string // raft log, stable store and snapshots live under it
	Bootstrap bool   // bootstrap a one-node cluster when there is no state
	FSM       StateMachine
	Logger    hclog.Logger

	// AdvertiseAddr is the Raft address peers reach this node at
	// (host:port, resolved once at start); default RaftAddr. Needed when
	// RaftAddr is 0.0.0.0 or the node sits behind NAT.
	AdvertiseAddr string

	// Failure detection (see timing.go); zero values take the Default*
	// constants. LeaderLeaseTimeout <= HeartbeatTimeout <= ElectionTimeout.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// Tuning; zero values take the defaults below.
	SnapshotThreshold uint64        // default 8192 entries
	SnapshotBytes     uint64        // default 32 MiB (snapbytes.go)
	SnapshotInterval  time.Duration // default 2m
	TrailingLogs      uint64        // default 10240 entries
	// Transport overrides the TCP transport (in-process tests).
	Transport raft.Transport
	// AppendFault, if set, is called before each append to the Raft log;
	// an error it returns fails the append as a full disk would (fault
	// injection for tests; nil otherwise).
	AppendFault func() error
	// TLS, when set, makes the transport mutual TLS (see TLSConfig).
	TLS *TLSConfig
	// PeerAuth, when set and TLS is not, makes every Raft connection
	// prove membership with the cluster's member key (peerauth.go).
	PeerAuth *PeerAuthConfig
	// Restore, if set, starts a new one-node cluster (Bootstrap must be
	// set and the data dir hold no Raft state) from a state-machine
	// snapshot file taken at log index Index: it becomes this node's first
	// snapshot, which Raft restores on start, and the log continues after
	// Index.
	Restore *Restore

	// backlogBytes overrides maxBacklogBytes (tests).
	backlogBytes int64
}

// Restore names a state-machine snapshot file and the log index it was
// taken at.
type Restore struct {
	Path  string
	Index uint64
}

// Node is one Raft member.
type Node struct {
	cfg    Config
	raft   *raft.Raft
	logs   *raftboltdb.BoltStore
	cache  raft.LogStore // logs through the recent-entries cache, as Raft reads them
	trans  raft.Transport
	auth   *peerAuth // nil with TLS or an in-process transport
	logger hclog.Logger

	// appends and commits watch what Raft does not tell: whether its log
	// appends fail (appends.go), and the leader's commit index
	// (leadercommit.go); backlog holds a follower's appends back while its
	// state machine lags (backlog.go).
	appends *appendWatch
	backlog *backlogStore
	commits *commitWatch

	notifyCh chan bool
	obsCh    chan raft.Observation
	observer *raft.Observer

	mu       sync.Mutex
	leading  bool          // the last leadership state fanned out to subs
	leaderCh chan struct{} // closed and replaced when the leader changes
	subs     []chan bool
	failing  map[string]time.Time // leader: members whose heartbeats fail, and when each last answered
	closed   chan struct{}
	wg       sync.WaitGroup
}

// New starts a Raft member.
func New(cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.ID == "" || cfg.RaftAddr == "" || cfg.DataDir == "" || cfg.FSM == nil {
		return nil, errors.New("raftnode: ID, RaftAddr, DataDir and FSM are required")
	}
	logger := cfg.Logger.Named("raft")
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = logger
	rc.HeartbeatTimeout = orDur(cfg.HeartbeatTimeout, DefaultHeartbeatTimeout)
	rc.ElectionTimeout = orDur(cfg.ElectionTimeout, DefaultElectionTimeout)
	rc.LeaderLeaseTimeout = orDur(cfg.LeaderLeaseTimeout, DefaultLeaderLeaseTimeout)
	rc.SnapshotThreshold = orU64(cfg.SnapshotThreshold, 8192)
	rc.SnapshotInterval = orDur(cfg.SnapshotInterval, 2*time.Minute)
	rc.TrailingLogs = orU64(cfg.TrailingLogs, 10240)
	rc.BatchApplyCh = true
	// An AppendEntries carries up to 64 entries (Raft's default): a
	// catching-up node is sent whole entries of up to ~1,000 submissions
	// (~50 KB each), and at 512 one request was ~25 MB, decoded, then
	// written to the log in one bbolt transaction, on the heap together.
	// Proposals are grouped into entries before Raft (replica's group
	// commit, one entry in flight), so a live node's requests hold a few
	// entries either way.
	rc.MaxAppendEntries = 64
	notifyCh := make(chan bool, 16)
	rc.NotifyCh = notifyCh
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("raftnode: %w", err)
	}
	dir := filepath.Join(cfg.DataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("raftnode: %w", err)
	}

	logs, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("raftnode: open log store: %w", err)
	}
	appends := &appendWatch{LogStore: logs, fault: cfg.AppendFault}
	backlog := newBacklogStore(appends, cfg.FSM.AppliedIndex)
	if cfg.backlogBytes > 0 {
		backlog.max = cfg.backlogBytes
	}
	cache, err := raft.NewLogCache(1024, backlog)
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("raftnode: %w", err)
	}
	fileSnaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logger)
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("raftnode: snapshot store: %w", err)
	}
	restrict(filepath.Join(dir, "snapshots")) // snapshots of older versions
	snaps := privateSnapshots{SnapshotStore: fileSnaps, dir: dir}
	hadState, err := raft.HasExistingState(cache, logs, snaps)
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("raftnode: %w", err)
	}
	var auth *peerAuth
	trans := cfg.Transport
	if trans == nil {
		adv := cfg.AdvertiseAddr
		if adv == "" {
			adv = cfg.RaftAddr
		}
		addr, err := net.ResolveTCPAddr("tcp", adv)
		if err != nil {
			logs.Close()
			return nil, fmt.Errorf("raftnode: raft address %q: %w", adv, err)
		}
		var t *raft.NetworkTransport
		switch {
		case cfg.TLS != nil:
			t, err = newTLSTransport(cfg.RaftAddr, addr, *cfg.TLS, logger)
		case cfg.PeerAuth != nil:
			auth, err = loadPeerAuth(dir, addr.String(), *cfg.PeerAuth, !hadState, cfg.Bootstrap, logger)
			if err != nil {
				logs.Close()
				return nil, err
			}
			t, err = newStreamTransport(cfg.RaftAddr, addr, auth, cfg.PeerAuth.StreamConfig, logger)
		default:
			t, err = raft.NewTCPTransportWithLogger(cfg.RaftAddr, addr, 4, 10*time.Second, logger)
		}
		if err != nil {
			logs.Close()
			return nil, fmt.Errorf("raftnode: listen on %s: %w", cfg.RaftAddr, err)
		}
		trans = t
	}

	if cfg.Restore != nil {
		if err := restoreSnapshot(cfg, snaps, trans, cache, logs); err != nil {
			logs.Close()
			return nil, err
		}
		logger.Info("starting a new cluster from a snapshot", "path", cfg.Restore.Path, "index", cfg.Restore.Index)
	}
	// The state machine keeps its own applied index, so a trusted local
	// state needs no snapshot restore on start: Raft replays the log after
	// the snapshot and the state machine skips what it already has.
	if !cfg.FSM.Rebuilt() {
		list, err := snaps.List()
		if err != nil {
			logs.Close()
			return nil, fmt.Errorf("raftnode: list snapshots: %w", err)
		}
		rc.NoSnapshotRestoreOnStart = len(list) == 0 || cfg.FSM.AppliedIndex() >= list[0].Index
	}

	if cfg.Bootstrap {
		has, err := raft.HasExistingState(cache, logs, snaps)
		if err != nil {
			logs.Close()
			return nil, fmt.Errorf("raftnode: %w", err)
		}
		if !has {
			boot := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: trans.LocalAddr(), Suffrage: raft.Voter}}}
			if err := raft.BootstrapCluster(rc, cache, logs, snaps, trans, boot); err != nil {
				logs.Close()
				return nil, fmt.Errorf("raftnode: bootstrap: %w", err)
			}
			logger.Info("bootstrapped a new cluster", "id", cfg.ID, "addr", trans.LocalAddr())
		}
	}

	trans, commits := watchCommits(trans)
	r, err := raft.NewRaft(rc, cfg.FSM, cache, logs, snaps, trans)
	if err != nil {
		commits.stop()
		logs.Close()
		return nil, fmt.Errorf("raftnode: start raft: %w", err)
	}
	backlog.raft.Store(r)
	commits.gate.setRaft(r)
	n := &Node{
		cfg: cfg, raft: r, logs: logs, cache: cache, trans: trans, auth: auth, logger: logger, appends: appends, backlog: backlog, commits: commits,
		notifyCh: notifyCh, leaderCh: make(chan struct{}), closed: make(chan struct{}),
		obsCh: make(chan raft.Observation, 16),
	}
	n.observer = raft.NewObserver(n.obsCh, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation:
			return true
		}
		return false
	})
	r.RegisterObserver(n.observer)
	n.wg.Add(1)
	go n.loop()
	if sm, ok := cfg.FSM.(SizedStateMachine); ok {
		n.wg.Add(1)
		go n.snapshotBySize(sm, orU64(cfg.SnapshotBytes, DefaultSnapshotBytes))
	}
	return n, nil
}

func orDur(v, d time.Duration) time.Duration {
	if v == 0 {
		return d
	}
	return v
}

func orU64(v, d uint64) uint64 {
	if v == 0 {
		return d
	}
	return v
}

// loop fans leadership notifications out to subscribers and wakes waiters
// on every leader change.
func (n *Node) loop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.closed:
			return
		case isLeader := <-n.notifyCh:
			n.mu.Lock()
			n.leading = isLeader
			subs := append([]chan bool(nil), n.subs...)
			n.mu.Unlock()
			for _, s := range subs {
				select {
				case s <- isLeader:
				case <-n.closed:
					return
				}
			}
			if !isLeader {
				n.mu.Lock()
				n.failing = nil
				n.mu.Unlock()
			}
			n.wakeLeaderWaiters()
		case o := <-n.obsCh:
			switch d := o.Data.(type) {
			case raft.LeaderObservation:
				n.wakeLeaderWaiters()
			case raft.FailedHeartbeatObservation:
				n.mu.Lock()
				if n.failing == nil {
					n.failing = map[string]time.Time{}
				}
				n.failing[string(d.PeerID)] = d.LastContact
				n.mu.Unlock()
			case raft.ResumedHeartbeatObservation:
				n.mu.Lock()
				delete(n.failing, string(d.PeerID))
				n.mu.Unlock()
			}
		}
	}
}

// FailingPeers returns, on the leader, the members it cannot heartbeat,
// each with the time it last heard from it (zero: never). Empty on a
// follower.
func (n *Node) FailingPeers() map[string]time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]time.Time, len(n.failing))
	for id, t := range n.failing {
		out[id] = t
	}
	return out
}

// LastContact returns when this follower last heard from a leader (zero:
// never).
func (n *Node) LastContact() time.Time { return n.raft.LastContact() }

func (n *Node) wakeLeaderWaiters() {
	n.mu.Lock()
	close(n.leaderCh)
	n.leaderCh = make(chan struct{})
	n.mu.Unlock()
}

// LeadershipChanges returns a channel that receives true when this node
// becomes leader and false when it stops being leader; when this node
// already leads, its first value is true. Each change reaches it exactly
// once, whenever it subscribes (a single node may win its election before
// the agent subscribes). The channel must be drained; it is never closed.
func (n *Node) LeadershipChanges() <-chan bool {
	ch := make(chan bool, 4)
	n.mu.Lock()
	n.subs = append(n.subs, ch)
	if n.leading {
		ch <- true // fanned out before this subscription
	}
	n.mu.Unlock()
	return ch
}

// ID returns the node id.
func (n *Node) ID() string { return n.cfg.ID }

// Addr returns the node's Raft address.
func (n *Node) Addr() string { return string(n.trans.LocalAddr()) }

// IsLeader reports whether this node currently believes it is the leader.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// State returns "leader", "follower", "candidate" or "shutdown".
func (n *Node) State() string {
	switch n.raft.State() {
	case raft.Leader:
		return "leader"
	case raft.Candidate:
		return "candidate"
	case raft.Shutdown:
		return "shutdown"
	default:
		return "follower"
	}
}

// Leader returns the current leader's id and Raft address, empty if none
// is known.
func (n *Node) Leader() (id, addr string) {
	a, i := n.raft.LeaderWithID()
	return string(i), string(a)
}

// LeaderChanged returns a channel closed at the next leader change.
func (n *Node) LeaderChanged() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leaderCh
}

// Apply proposes data and waits until it is committed and applied on this
// node, returning the state machine's response and the entry's index.
func (n *Node) Apply(ctx context.Context, data []byte) (any, uint64, error) {
	f := n.raft.Apply(data, timeoutOf(ctx))
	if err := n.wait(ctx, f); err != nil {
		return nil, 0, err
	}
	return f.Response(), f.Index(), nil
}

// Barrier waits until every entry committed before it is applied.
func (n *Node) Barrier(ctx context.Context) error {
	return n.wait(ctx, n.raft.Barrier(timeoutOf(ctx)))
}

// VerifyLeader confirms with a quorum that this node is still the leader.
func (n *Node) VerifyLeader(ctx context.Context) error {
	return n.wait(ctx, n.raft.VerifyLeader())
}

// CommitIndex returns the latest committed index known to this node.
func (n *Node) CommitIndex() uint64 { return n.raft.CommitIndex() }

// LastIndex returns the index of the last entry in this node's log.
func (n *Node) LastIndex() uint64 { return n.raft.LastIndex() }

// SendCommitIndex makes the leader send every follower its commit index
// now. hashicorp/raft sends it only with entries, or after its
// CommitTimeout (50 ms, each wait 1-2x that) without any: heartbeats do
// not carry it, so after a write on an otherwise idle cluster a follower
// applies it only that much later. A barrier entry is replicated at once,
// with the commit index. It does not wait; the returned channel is
// closed once the barrier is done (or failed).
func (n *Node) SendCommitIndex() <-chan struct{} {
	done := make(chan struct{})
	f := n.raft.Barrier(time.Second)
	go func() {
		_ = f.Error()
		close(done)
	}()
	return done
}

// maxStateScan bounds how far StateIndex reads back: one no-op per leader
// term, one barrier per leader-services start and those of
// SendCommitIndex (the agent sends at most one per state entry) are all
// that lie between two state entries in practice.
const maxStateScan = 1024

// StateIndex returns the highest log index at or below idx whose entry
// reaches the state machine: a command or a configuration change. Raft also
// logs entries the state machine never sees (each new leader's no-op, every
// barrier), so a reader waiting for the state machine to reach a commit
// index that is such an entry would wait until the next write arrives;
// waiting for StateIndex(idx) is equivalent, since the entries skipped
// change no state. If the log cannot be read back (compacted, or more than
// maxStateScan such entries in a row) it answers idx.
func (n *Node) StateIndex(idx uint64) uint64 {
	var l raft.Log
	for i := idx; i > 0 && idx-i < maxStateScan; i-- {
		if err := n.cache.GetLog(i, &l); err != nil {
			return idx
		}
		switch l.Type {
		case raft.LogCommand, raft.LogConfiguration:
			return i
		}
	}
	return idx
}

// Term returns the current term.
func (n *Node) Term() uint64 {
	return n.raft.CurrentTerm()
}

// AddVoter adds (or re-addresses) a voting member. Only the leader can.
func (n *Node) AddVoter(ctx context.Context, id, addr string) error {
	cf := n.raft.GetConfiguration()
	if err := n.wait(ctx, cf); err != nil {
		return err
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID == raft.ServerID(id) && s.Address == raft.ServerAddress(addr) && s.Suffrage == raft.Voter {
			return nil
		}
		if s.ID == raft.ServerID(id) || s.Address == raft.ServerAddress(addr) {
			// Same id at a new address, or a new id at a reused address:
			// drop the stale entry first.
			if err := n.wait(ctx, n.raft.RemoveServer(s.ID, 0, timeoutOf(ctx))); err != nil {
				return err
			}
		}
	}
	return n.wait(ctx, n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeoutOf(ctx)))
}

// RemoveServer removes a member. Only the leader can.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	return n.wait(ctx, n.raft.RemoveServer(raft.ServerID(id), 0, timeoutOf(ctx)))
}

// TransferLeadership hands leadership to id, or to the most up-to-date
// follower when id is empty.
func (n *Node) TransferLeadership(ctx context.Context, id string) error {
	if id == "" {
		return n.wait(ctx, n.raft.LeadershipTransfer())
	}
	cf := n.raft.GetConfiguration()
	if err := n.wait(ctx, cf); err != nil {
		return err
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID == raft.ServerID(id) {
			return n.wait(ctx, n.raft.LeadershipTransferToServer(s.ID, s.Address))
		}
	}
	return fmt.Errorf("raftnode: no member %q: %w", id, ErrNotFound)
}

// ErrNotFound: the named member is not in the configuration.
var ErrNotFound = errors.New("raftnode: member not found")

// Server is one member of the Raft configuration.
type Server struct {
	ID      string
	Address string
	Voter   bool
}

// Servers returns the latest Raft configuration.
func (n *Node) Servers(ctx context.Context) ([]Server, error) {
	cf := n.raft.GetConfiguration()
	if err := n.wait(ctx, cf); err != nil {
		return nil, err
	}
	var out []Server
	for _, s := range cf.Configuration().Servers {
		out = append(out, Server{ID: string(s.ID), Address: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}

// PeerAuth returns how this node authenticates its Raft connections
// (peerauth.go).
func (n *Node) PeerAuth() PeerAuthState {
	if n.auth == nil {
		return PeerAuthState{}
	}
	return n.auth.state()
}

// SetMemberKey adopts the cluster's member key, which a joining node gets
// from the cluster and an upgraded node from its state machine, and keeps
// it in the data dir; required makes the handshake mandatory too. A key
// other than the one this node holds is refused (ErrKeyConflict). A no-op
// with TLS.
func (n *Node) SetMemberKey(key []byte, required bool) error {
	if n.auth == nil {
		return nil
	}
	return n.auth.set(key, required)
}

// AllowLegacyPeers lets a node that waits for the member key of its
// cluster (PeerAuthState.Waiting) talk to a cluster of an older release,
// which has none to give: it accepts connections without the handshake
// until RequirePeerAuth.
func (n *Node) AllowLegacyPeers() {
	if n.auth != nil {
		n.auth.allowLegacy()
	}
}

// RequirePeerAuth makes the handshake mandatory for good, once every
// member speaks it: connections accepted without it are closed.
func (n *Node) RequirePeerAuth() error {
	if n.auth == nil {
		return nil
	}
	return n.auth.require()
}

// Stats returns raft's diagnostic counters.
func (n *Node) Stats() map[string]string { return n.raft.Stats() }

// Close shuts Raft down and closes the stores. It does not transfer
// leadership; call TransferLeadership first for a graceful exit.
func (n *Node) Close() error {
	select {
	case <-n.closed:
		return nil
	default:
	}
	n.backlog.close()
	err := n.raft.Shutdown().Error()
	close(n.closed)
	n.raft.DeregisterObserver(n.observer)
	n.wg.Wait()
	if c, ok := n.trans.(interface{ Close() error }); ok {
		c.Close()
	}
	if cerr := n.logs.Close(); err == nil {
		err = cerr
	}
	return err
}

func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		if t := time.Until(d); t > 0 {
			return t
		}
		return time.Millisecond
	}
	return 0
}

// wait waits for a raft future within ctx and translates its error.
func (n *Node) wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return translate(err)
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrTimeout, ctx.Err())
	}
}

func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w: %v", ErrLeadershipLost, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %v", ErrShutdown, err)
	default:
		return err
	}
}

// ApplyFuture is a proposal in flight.
type ApplyFuture struct {
	f      raft.ApplyFuture
	closed <-chan struct{} // the node's: closed by Close
}

// Wait blocks until the proposal is committed and applied (or fails) and
// returns the state machine's response. Once the node is closed it
// returns ErrShutdown: hashicorp/raft never answers a proposal still in
// its apply queue at shutdown (hashicorp/raft#498).
func (a *ApplyFuture) Wait() (any, error) {
	done := make(chan error, 1)
	go func() { done <- a.f.Error() }()
	select {
	case err := <-done:
		if err := translate(err); err != nil {
			return nil, err
		}
		return a.f.Response(), nil
	case <-a.closed:
		// An answer raft gave before it stopped is a moment away.
		late := time.NewTimer(50 * time.Millisecond)
		defer late.Stop()
		select {
		case err := <-done:
			if err := translate(err); err != nil {
				return nil, err
			}
			return a.f.Response(), nil
		case <-late.C:
			return nil, fmt.Errorf("%w: %v", ErrShutdown, raft.ErrRaftShutdown)
		}
	}
}

// ApplyAsync proposes data without waiting. Proposals made from one
// goroutine are appended to the log in call order.
func (n *Node) ApplyAsync(data []byte) *ApplyFuture {
	return &ApplyFuture{f: n.raft.Apply(data, 10*time.Second), closed: n.closed}
}

// restoreSnapshot stores the file cfg.Restore names as the first snapshot
// of a new one-node cluster.
func restoreSnapshot(cfg Config, snaps raft.SnapshotStore, trans raft.Transport, cache raft.LogStore, stable raft.StableStore) error {
	r := cfg.Restore
	if !cfg.Bootstrap {
		return fmt.Errorf("raftnode: restore starts a new cluster; it cannot join one")
	}
	if r.Index == 0 {
		return fmt.Errorf("raftnode: restore: %s holds no applied log position; is it a state-machine snapshot?", r.Path)
	}
	has, err := raft.HasExistingState(cache, stable, snaps)
	if err != nil {
		return fmt.Errorf("raftnode: %w", err)
	}
	if has {
		return fmt.Errorf("raftnode: restore needs an empty data dir; %s already holds Raft state", cfg.DataDir)
	}
	in, err := os.Open(r.Path)
	if err != nil {
		return fmt.Errorf("raftnode: restore: %w", err)
	}
	defer in.Close()
	conf := raft.Configuration{Servers: []raft.Server{{ID: raft.ServerID(cfg.ID), Address: trans.LocalAddr(), Suffrage: raft.Voter}}}
	// Term 1: the new cluster's first election is term 1, and a log's
	// terms never go down after its snapshot's (the old cluster's term
	// means nothing here).
	sink, err := snaps.Create(raft.SnapshotVersionMax, r.Index, 1, conf, r.Index, trans)
	if err != nil {
		return fmt.Errorf("raftnode: restore: %w", err)
	}
	if _, err := io.Copy(sink, in); err != nil {
		sink.Cancel()
		return fmt.Errorf("raftnode: restore: copy %s: %w", r.Path, err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("raftnode: restore: %w", err)
	}
	return nil
}
