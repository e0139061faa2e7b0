package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/access"
	"github.com/ax-scheduler/ax/alerts"
	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/clock"
	"github.com/ax-scheduler/ax/cluster"
	"github.com/ax-scheduler/ax/executors"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/tasks"
	"github.com/ax-scheduler/ax/tlsutil"
	"github.com/ax-scheduler/ax/tracing"
	"github.com/ax-scheduler/ax/wheel"
	"github.com/ax-scheduler/ax/worker"
)

// Config configures an agent.
type Config struct {
	NodeID   string
	DataDir  string
	HTTPAddr string // listen address of the API
	// AdvertiseHTTP is the HTTP address other nodes reach this one at
	// (recorded for joins, forwarding and the cluster status); default
	// the listen address. Required when HTTPAddr's host is unspecified
	// (0.0.0.0, ::, empty); also for NAT (tests put a proxy in front).
	AdvertiseHTTP string
	RaftAddr      string // listen address of Raft
	// AdvertiseRaft is the Raft address other nodes reach this one at;
	// default RaftAddr, required when RaftAddr's host is unspecified.
	AdvertiseRaft string
	// Join lists HTTP addresses of existing members. Empty means this
	// node bootstraps a new cluster when its data dir is empty.
	Join []string
	// Restore starts a new one-node cluster from a state-machine snapshot
	// file (a node's raft/snapshots/<id>/state.bin) in an empty data dir;
	// other nodes then join it. Not with Join.
	Restore string
	// Token protects the API and is required to join.
	Token string
	// ExecutorToken, when set, is accepted on the executor protocol only,
	// for any executor name (legacy: prefer ACL executor tokens, which are
	// bound to one executor).
	ExecutorToken string
	// MaxConns caps the API's open connections (default DefaultMaxConns:
	// half the open-file limit, 1,024 to 8,192): at the cap a new
	// connection evicts the longest idle one.
	MaxConns int
	// NoUI turns the operator console off: GET / and /ui/ are then the
	// API's 404s.
	NoUI bool
	// EncryptKey, when set (EncryptKeySize bytes, the same on every node),
	// seals secret values with AES-256-GCM before they are proposed.
	EncryptKey []byte
	// TLS, when set, serves the API over TLS, makes Raft mutual TLS and
	// makes this node's calls to other nodes (and its embedded
	// executor's) https with its node certificate. Reloading the holder
	// rotates the certificates.
	TLS *tlsutil.Holder
	// Insecure lets the agent listen on non-loopback addresses without
	// TLS; without it such an agent refuses to start.
	Insecure bool
	// PprofAddr, when set, serves Go's profiles there (pprof.go): with
	// TLS when the node has it, to admins only.
	PprofAddr string
	// Lease is how long a running attempt survives without a heartbeat
	// (default 10s).
	Lease time.Duration
	// Retention is how long finished instances are kept when their task
	// sets no policy.retention (0: forever). RetentionInterval is how
	// often the leader looks for them (default 1m).
	Retention         time.Duration
	RetentionInterval time.Duration
	// DefaultTimeout is the timeout of attempts whose task sets no
	// policy.timeout (nor an http action.timeout): the leader puts it
	// into the job it hands out. 0: none. A task's timeout "none" opts
	// out.
	DefaultTimeout time.Duration
	// Executor runs an embedded executor in the agent process, connected
	// to this node's own API.
	Executor         bool
	ExecutorCapacity int
	// ExecutorShutdownGrace is how long the embedded executor's running
	// attempts may go on once the agent is told to stop (0: stopped at
	// once); those still running then are interrupted (run again later).
	ExecutorShutdownGrace time.Duration
	ExecutorLabels        map[string]string
	// ExecutorReaper is the embedded executor's reaper helper (see
	// worker.Config.Reaper).
	ExecutorReaper []string
	// Handlers are the embedded executor's in-process sdk handlers, by
	// name (an agent embedded in a Go service: package embed); Agent.Handle
	// adds more.
	Handlers map[string]worker.Handler
	Logger   hclog.Logger
	// Clock is the node's clock; default the real one. Only the leader's
	// clock is ever stamped into commands or drives the timing wheel, and
	// only as held to the cluster's: a node whose clock is off from the
	// median of the members' by more than MaxClockSkew takes the
	// difference off (see package clock), and a step of the wall clock is
	// held where the clock is wheel.RealClock or a MonotonicClock.
	Clock wheel.Clock
	// MaxClockSkew is how far a node's clock may be from the cluster's
	// before it is reported, corrected and made to hand leadership over
	// (default 1s). ClockInterval is how often every node compares clocks
	// with the other members (default 1s).
	MaxClockSkew  time.Duration
	ClockInterval time.Duration
	// Horizon: delayed instances due within it are held in the leader's
	// timing wheel; later ones wait in the state machine's due index.
	// Default 1h.
	Horizon time.Duration
	// FSMSync makes the state machine fsync every batch. By default it
	// runs without fsync: kept after a clean stop or a process crash, and
	// rebuilt from the Raft snapshot and log after a machine crash (the
	// Raft log itself always syncs).
	FSMSync bool
	// MetricsMaxTasks is how many distinct task names get their own task
	// label on the per-task histograms (fire lateness, dispatch latency,
	// attempt duration); later ones are counted as task="other". Default
	// DefaultMetricsMaxTasks.
	MetricsMaxTasks int
	// Version is the binary's version, shown by /healthz and the cluster
	// status.
	Version string
	// ConsoleURL is the base URL of the console links in notifications
	// (<ConsoleURL>/ui/#/instances/<id>). Default http(s)://<this node's
	// advertised HTTP address>; set it when people reach the console
	// through a proxy or another name.
	ConsoleURL string
	// LeaderWait bounds how long a write waits for a leader before it is
	// answered 503. Default 5s.
	LeaderWait time.Duration
	// Raft tuning, passed through to raftnode.
	SnapshotThreshold uint64
	SnapshotBytes     uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// Raft failure detection (raftnode/timing.go): how long a follower
	// goes without the leader before it may start an election, how long
	// a candidate waits before trying again, how long a leader goes
	// without a quorum before it steps down. Zero takes raftnode's
	// defaults; LeaderLeaseTimeout <= HeartbeatTimeout <= ElectionTimeout.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration

	// Alert rules (package alerts). WatchInterval is how often the leader
	// evaluates them (default 5s); StuckAfter how long an instance may
	// wait READY, BLOCKED or WAITING_APPROVAL (default 30m);
	// SilenceGrace how late an expected fire may be past its catch-up
	// window (default 1m); OvertimeGrace how long an attempt may run
	// past its timeout (default 1m). NotifyInterval is how often the
	// leader looks for notifications to send (default 1s).
	WatchInterval  time.Duration
	StuckAfter     time.Duration
	SilenceGrace   time.Duration
	OvertimeGrace  time.Duration
	NotifyInterval time.Duration
	// MemberGrace is how long a member may not answer the leader's clock
	// monitor before member_unreachable (default 30s); AnomalyWindow the
	// window frequency_anomaly counts a task's schedule instances in
	// (default 1h); Silence how long nothing may fire while fires are
	// due before cluster_silence (default 10m).
	MemberGrace   time.Duration
	AnomalyWindow time.Duration
	Silence       time.Duration

	// testServices are per-term services tests add (see establish).
	testServices []replica.Service
	// testNotifier replaces delivery to the channels (tests only).
	testNotifier alerts.Notifier
	// testAppendFault fails the node's Raft log appends while it returns
	// an error (raftnode.Config.AppendFault; tests only).
	testAppendFault func() error
}

// Agent is one running ax node: its replica and the role services built
// on it, behind one HTTP server.
type Agent struct {
	cfg  Config
	log  hclog.Logger
	now  func() time.Time
	rep  *replica.Replica
	fsm  *fsm.FSM       // rep.State()
	node *raftnode.Node // rep.Raft()

	acc     *access.Access       // authentication, ACLs, secrets, sealing
	cl      *cluster.Cluster     // membership, health, the clock monitor
	tasks   *tasks.Tasks         // tasks and instances, the term's scheduler
	console *tasks.Console       // the console's reads and event streams
	exec    *executors.Executors // the executor protocol, the term's dispatcher
	al      *alerts.Alerts       // the watchdog, alert records, failures, quorum watch
	trace   *tracing.Tracer      // instance traces (nil: off, the default)
	chans   *alerts.Channels     // notification channels and delivery
	shared  *tasks.Shared        // calendars, blackout windows and pools

	ln       net.Listener
	conns    *connLimiter
	http     *http.Server
	pprof    *http.Server         // nil without -pprof
	reg      *prometheus.Registry // the node's metrics
	stopExec func()               // drains the embedded executor; nil without one
	// execToken is the embedded executor's credential; execMu guards its
	// restart with more handlers (Handle).
	execToken  string
	execMu     sync.Mutex
	execClosed bool // Shutdown drained it: Handle starts it no more

	stopCh chan struct{}   // closed when the agent stops
	ctx    context.Context // the loops' context: ends when the agent stops
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ api.InternalBackend = (*replica.Replica)(nil)

// New opens the node's state, starts Raft and the HTTP API. It returns
// once the node is serving; joining an existing cluster continues in the
// background. It is the node's composition root: the replica, then each
// role on it, then Raft, the HTTP server and the loops. Whatever it has
// opened when it fails is closed again, in reverse order (one cleanup
// stack, undo).
func New(cfg Config) (_ *Agent, retErr error) {
	cfg, raw, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	base := cfg.Clock.(*clock.Base)
	a := &Agent{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeID), now: cfg.Clock.Now, stopCh: make(chan struct{})}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	var undo cleanup
	defer func() {
		if retErr != nil {
			a.cancel()
			undo.run()
		}
	}()
	var localExecToken string // the embedded executor's credential, in memory only
	if cfg.Executor {
		localExecToken = access.NewToken()
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("agent: listen on %s: %w", cfg.HTTPAddr, err)
	}
	a.ln = tlsListener(ln, cfg.TLS)
	undo.push(a.ln.Close)
	if cfg.Restore != "" && len(cfg.Join) > 0 {
		return nil, fmt.Errorf("agent: -restore starts a new cluster; it cannot be combined with -join")
	}
	rep, err := replica.Open(replica.Config{NodeID: cfg.NodeID, DataDir: cfg.DataDir, RaftAddr: cfg.RaftAddr, AdvertiseRaft: cfg.AdvertiseRaft,
		AdvertiseHTTP: a.advertisedHTTP(), Bootstrap: len(cfg.Join) == 0, Restore: cfg.Restore, Token: cfg.Token, TLS: cfg.TLS,
		FSMSync: cfg.FSMSync, Observer: a, Logger: a.log, Now: a.now, MaxClockSkew: cfg.MaxClockSkew, LeaderWait: cfg.LeaderWait,
		SnapshotThreshold: cfg.SnapshotThreshold, SnapshotBytes: cfg.SnapshotBytes, SnapshotInterval: cfg.SnapshotInterval, TrailingLogs: cfg.TrailingLogs,
		HeartbeatTimeout: cfg.HeartbeatTimeout, ElectionTimeout: cfg.ElectionTimeout, LeaderLeaseTimeout: cfg.LeaderLeaseTimeout,
		AppendFault: cfg.testAppendFault, Stopping: a.stopCh, Establish: a.establish})
	if err != nil {
		return nil, err
	}
	undo.push(rep.Close)
	a.rep, a.fsm = rep, rep.State()
	if cfg.ExecutorToken != "" && cfg.Token == "" && !a.fsm.ACLBootstrapped() {
		return nil, errors.New("agent: -executor-token without API auth would leave every other route open: set -token too, or bootstrap ACLs (ax acl bootstrap) and create executor tokens (ax acl token create -role executor)")
	}
	if err := a.roles(raw, base, localExecToken); err != nil {
		return nil, err
	}
	undo.push(func() error { return a.trace.Shutdown(context.Background()) })
	if err := rep.Start(); err != nil {
		if cfg.Restore != "" && strings.HasPrefix(err.Error(), "restore: ") {
			return nil, fmt.Errorf("agent: %w", err)
		}
		return nil, err
	}
	a.node = rep.Raft()
	a.serveHTTP(raw.Now, base.Jump)
	if err := a.servePprof(); err != nil {
		return nil, err
	}
	if a.pprof != nil {
		undo.push(a.pprof.Close)
	}
	if cfg.Executor {
		if err := a.startExecutor(localExecToken); err != nil {
			return nil, err
		}
	}
	// The loops every node runs, until the agent stops.
	for _, run := range []func(context.Context){a.acc.Run, a.al.Run, a.cl.Run} {
		a.wg.Add(1)
		go func() { defer a.wg.Done(); run(a.ctx) }()
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := a.http.Serve(a.conns); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("http server stopped", "error", err)
		}
	}()
	a.log.Info("agent started", "http", a.HTTPAddr(), "raft", a.node.Addr(), "data", cfg.DataDir, "join", strings.Join(cfg.Join, ","))
	return a, nil
}

// roles builds the role services on the replica (before Raft starts: the
// state machine's observer feeds them from its first entry). The roles
// do not know each other: what one needs of another is wired here, late
// bound where they refer to each other.
func (a *Agent) roles(raw wheel.Clock, base *clock.Base, localExecToken string) error {
	cfg, rep, f := a.cfg, a.rep, a.fsm
	acc, err := access.New(access.Config{NodeID: cfg.NodeID, Token: cfg.Token, ExecutorToken: cfg.ExecutorToken, LocalExecToken: localExecToken,
		ExecutorLabels: cfg.ExecutorLabels, TLS: cfg.TLS != nil, EncryptKey: cfg.EncryptKey, Now: a.now, Logger: a.log}, f, rep)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	a.acc = acc
	if a.trace, err = tracing.New(a.ctx, tracing.Config{NodeID: cfg.NodeID, Version: cfg.Version, Key: f.MemberKey, Logger: a.log}); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	quorum := func() []model.Alert { return a.al.QuorumAlerts() }
	a.cl = cluster.New(cluster.Config{NodeID: cfg.NodeID, Join: cfg.Join, AdvertiseHTTP: a.advertisedHTTP(), DataDir: cfg.DataDir, TLS: cfg.TLS != nil,
		Version: cfg.Version, Logger: a.log, Raw: raw, Base: base, MaxClockSkew: cfg.MaxClockSkew, ClockInterval: cfg.ClockInterval,
		OnClockStep: func() { a.tasks.ClockStepped() }, Wheel: func() (int, time.Duration, bool) { return a.tasks.Wheel() },
		Executors: a.executorCount, QuorumAlerts: quorum}, rep, f)
	a.exec = executors.New(executors.Config{Logger: a.log, Now: a.now, Lease: cfg.Lease, MaxClockSkew: cfg.MaxClockSkew,
		LeaderWait: cfg.LeaderWait, DefaultTimeout: cfg.DefaultTimeout, Started: func(task string, d time.Duration) { a.tasks.Started(task, d) },
		Tracer: a.trace},
		rep, f, acc)
	a.tasks = tasks.New(tasks.Config{Logger: a.log, Clock: cfg.Clock, Horizon: cfg.Horizon, Retention: cfg.Retention,
		RetentionInterval: cfg.RetentionInterval, MetricsMaxTasks: cfg.MetricsMaxTasks, Executors: a.exec.Executors,
		OwnAttempt: acc.OwnAttempt, Live: a.exec.Live, StopHold: a.exec.StopHold(), Tracer: a.trace}, rep, f)
	a.shared = tasks.NewShared(cfg.Clock, rep, f)
	a.console = tasks.NewConsole(tasks.ConsoleConfig{Clock: cfg.Clock, Stopping: a.stopCh, Cluster: a.cl.Cluster,
		Executors: a.exec.Executors, QuorumAlerts: quorum}, f)
	alertsCfg := alerts.Config{NodeID: cfg.NodeID, Logger: a.log, Clock: cfg.Clock, DefaultTimeout: cfg.DefaultTimeout,
		WatchInterval: cfg.WatchInterval, StuckAfter: cfg.StuckAfter, SilenceGrace: cfg.SilenceGrace, OvertimeGrace: cfg.OvertimeGrace,
		NotifyInterval: cfg.NotifyInterval, MemberGrace: cfg.MemberGrace, AnomalyWindow: cfg.AnomalyWindow, Silence: cfg.Silence,
		ConsoleURL: a.consoleURL(), Notifier: cfg.testNotifier, Clocks: a.cl.Clock(), Executors: a.leaderExecutors}
	if sl := acc.Sealer(); sl != nil {
		alertsCfg.Sealer = sl
	}
	a.chans = alerts.NewChannels(alertsCfg, f, rep, nil)
	a.al = alerts.New(alertsCfg, f, rep, a.chans)
	return nil
}

// cleanup is a stack of closes, run in reverse order (New's undo).
type cleanup []func() error

func (c *cleanup) push(close func() error) { *c = append(*c, close) }

func (c cleanup) run() {
	for i := len(c) - 1; i >= 0; i-- {
		_ = c[i]()
	}
}

// HTTPAddr returns the address the API listens on.
func (a *Agent) HTTPAddr() string { return a.ln.Addr().String() }

// ClientTLS is the TLS configuration a client in this process reaches the
// node's API with (its certificates; nil without TLS), as its embedded
// executor does.
func (a *Agent) ClientTLS() *tls.Config { return a.rep.PeerTLS() }

// advertisedHTTP is the HTTP address other nodes use to reach this one.
func (a *Agent) advertisedHTTP() string {
	if a.cfg.AdvertiseHTTP != "" {
		return a.cfg.AdvertiseHTTP
	}
	return a.HTTPAddr()
}

// consoleURL is the base of the console links in notifications:
// -console-url, else this node's advertised HTTP address.
func (a *Agent) consoleURL() string {
	if a.cfg.ConsoleURL != "" {
		return strings.TrimRight(a.cfg.ConsoleURL, "/")
	}
	scheme := "http://"
	if a.cfg.TLS != nil {
		scheme = "https://"
	}
	return scheme + a.advertisedHTTP()
}

// handOver moves leadership to a follower before this leader stops,
// trying again within 5 s while it is still leader: on a busy machine an
// election can preempt a transfer (the transfer then fails, but
// leadership has left this node all the same, which is what matters).
func (a *Agent) handOver(ctx context.Context) {
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var err error
	for try := 1; ; try++ {
		if err = a.node.TransferLeadership(tctx, ""); err == nil {
			a.log.Info("transferred leadership before shutdown", "tries", try)
			return
		}
		if !a.node.IsLeader() {
			a.log.Info("leadership left this node before shutdown (an election preempted the transfer)", "error", err)
			return
		}
		if tctx.Err() != nil {
			break
		}
		select {
		case <-tctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	a.log.Warn("leadership transfer before shutdown failed", "error", err)
}

// Shutdown stops the agent. A leader first hands leadership to a follower
// so the cluster does not wait out an election timeout.
func (a *Agent) Shutdown(ctx context.Context) error {
	select {
	case <-a.stopCh:
		return nil
	default:
	}
	// Drain the embedded executor first, while this node still takes its
	// reports (and, if it leads, goes on leading).
	a.execMu.Lock()
	if a.stopExec != nil {
		a.stopExec()
	}
	a.execClosed = true
	a.execMu.Unlock()
	if a.node.IsLeader() {
		if servers, err := a.node.Servers(ctx); err == nil && len(servers) > 1 {
			a.handOver(ctx)
		}
	}
	close(a.stopCh)
	a.cancel()
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = a.http.Shutdown(hctx)
	if a.pprof != nil {
		_ = a.pprof.Close()
	}
	err := a.rep.Stop() // the current term ends, its services return
	a.wg.Wait()
	if ferr := a.rep.Close(); err == nil {
		err = ferr
	}
	if terr := a.trace.Shutdown(hctx); terr != nil { // the spans not yet exported
		a.log.Warn("exporting the last spans failed", "error", terr)
	}
	a.log.Info("agent stopped")
	return err
}
