package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/access"
	"github.com/ax-scheduler/ax/action"
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
	"github.com/ax-scheduler/ax/ui"
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
	// MaxConns caps the API's open connections (default 1024): at the
	// cap a new connection evicts the longest idle one.
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
	Logger         hclog.Logger
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
	// runs without fsync and is rebuilt from the Raft snapshot and log
	// after an unclean stop (the Raft log itself always syncs).
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

	// Alert rules (watchdog.go). WatchInterval is how often the leader
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

// Agent is one running ax node.
type Agent struct {
	cfg    Config
	log    hclog.Logger
	rep    *replica.Replica
	fsm    *fsm.FSM       // rep.State()
	node   *raftnode.Node // rep.Raft()
	http   *http.Server
	ln     net.Listener
	now    func() time.Time
	api    *api.Server
	stopCh chan struct{}
	wg     sync.WaitGroup

	stopExec context.CancelFunc
	cl       *cluster.Cluster     // membership, health, the clock monitor
	tasks    *tasks.Tasks         // tasks and instances, the term's scheduler
	console  *tasks.Console       // the console's reads and event streams
	exec     *executors.Executors // the executor protocol, the term's dispatcher
	reg      *prometheus.Registry // the node's metrics
	al       *alerts.Alerts       // the watchdog, alert records, failures, quorum watch
	chans    *alerts.Channels     // notification channels and delivery

	conns  *connLimiter
	pprof  *http.Server    // nil without -pprof
	acc    *access.Access  // authentication, ACLs, secrets, sealing
	ctx    context.Context // ends when the agent stops: its loops' context
	cancel context.CancelFunc
}

var _ api.InternalBackend = (*replica.Replica)(nil)

// New opens the node's state, starts Raft and the HTTP API. It returns
// once the node is serving; joining an existing cluster continues in the
// background.
func New(cfg Config) (*Agent, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "ax", Level: hclog.Info})
	}
	if cfg.Clock == nil {
		cfg.Clock = wheel.RealClock{}
	}
	if cfg.MaxClockSkew <= 0 {
		cfg.MaxClockSkew = time.Second
	}
	if cfg.ClockInterval <= 0 {
		cfg.ClockInterval = time.Second
	}
	raw := cfg.Clock
	base := clock.NewBase(raw, cfg.MaxClockSkew, clock.StaleAfter(cfg.ClockInterval))
	cfg.Clock = base
	if cfg.Horizon == 0 {
		cfg.Horizon = time.Hour
	}
	if cfg.LeaderWait == 0 {
		cfg.LeaderWait = 5 * time.Second
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 1024
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.WatchInterval, 5 * time.Second}, {&cfg.StuckAfter, 30 * time.Minute}, {&cfg.SilenceGrace, time.Minute},
		{&cfg.OvertimeGrace, time.Minute}, {&cfg.NotifyInterval, time.Second}, {&cfg.MemberGrace, 30 * time.Second},
		{&cfg.AnomalyWindow, time.Hour}, {&cfg.Silence, 10 * time.Minute}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if cfg.DefaultTimeout < 0 {
		return nil, errors.New("agent: the default timeout must not be negative (0: none)")
	}
	if cfg.NodeID == "" || cfg.DataDir == "" || cfg.HTTPAddr == "" || cfg.RaftAddr == "" {
		return nil, errors.New("agent: NodeID, DataDir, HTTPAddr and RaftAddr are required")
	}
	if len(cfg.NodeID) > maxNodeID {
		// Every command carries it; the state machine refuses longer ones.
		return nil, fmt.Errorf("agent: node id longer than %d bytes", maxNodeID)
	}
	// Security first: an open listener without TLS is refused for that
	// reason before its address is looked at.
	if err := checkTransportSecurity(cfg, cfg.Logger.With("node", cfg.NodeID)); err != nil {
		return nil, err
	}
	if err := checkAdvertise(cfg); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: data dir: %w", err)
	}
	if err := checkNodeID(cfg.DataDir, cfg.NodeID); err != nil {
		return nil, err
	}
	a := &Agent{
		cfg: cfg, log: cfg.Logger.With("node", cfg.NodeID), now: cfg.Clock.Now,
		stopCh: make(chan struct{}),
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	var localExecToken string // the embedded executor's credential, in memory only
	if cfg.Executor {
		localExecToken = access.NewToken()
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("agent: listen on %s: %w", cfg.HTTPAddr, err)
	}
	ln = tlsListener(ln, cfg.TLS)
	a.ln = ln
	if cfg.Restore != "" && len(cfg.Join) > 0 {
		ln.Close()
		return nil, fmt.Errorf("agent: -restore starts a new cluster; it cannot be combined with -join")
	}
	rep, err := replica.Open(replica.Config{NodeID: cfg.NodeID, DataDir: cfg.DataDir, RaftAddr: cfg.RaftAddr, AdvertiseRaft: cfg.AdvertiseRaft,
		AdvertiseHTTP: a.advertisedHTTP(), Bootstrap: len(cfg.Join) == 0, Restore: cfg.Restore, Token: cfg.Token, TLS: cfg.TLS,
		FSMSync: cfg.FSMSync, Observer: a, Logger: a.log, Now: a.now, MaxClockSkew: cfg.MaxClockSkew, LeaderWait: cfg.LeaderWait,
		SnapshotThreshold: cfg.SnapshotThreshold, SnapshotInterval: cfg.SnapshotInterval, TrailingLogs: cfg.TrailingLogs,
		HeartbeatTimeout: cfg.HeartbeatTimeout, ElectionTimeout: cfg.ElectionTimeout, LeaderLeaseTimeout: cfg.LeaderLeaseTimeout,
		AppendFault: cfg.testAppendFault, Establish: a.establish})
	if err != nil {
		ln.Close()
		return nil, err
	}
	a.rep, a.fsm = rep, rep.State()
	f := a.fsm
	if cfg.ExecutorToken != "" && cfg.Token == "" && !f.ACLBootstrapped() {
		rep.Close()
		ln.Close()
		return nil, errors.New("agent: -executor-token without API auth would leave every other route open: set -token too, or bootstrap ACLs (ax acl bootstrap) and create executor tokens (ax acl token create -role executor)")
	}
	acc, err := access.New(access.Config{NodeID: cfg.NodeID, Token: cfg.Token, ExecutorToken: cfg.ExecutorToken, LocalExecToken: localExecToken,
		ExecutorLabels: cfg.ExecutorLabels, TLS: cfg.TLS != nil, EncryptKey: cfg.EncryptKey, Now: a.now, Logger: a.log}, f, rep)
	if err != nil {
		rep.Close()
		ln.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.acc = acc
	a.cl = cluster.New(cluster.Config{NodeID: cfg.NodeID, Join: cfg.Join, AdvertiseHTTP: a.advertisedHTTP(), TLS: cfg.TLS != nil,
		Version: cfg.Version, Logger: a.log, Raw: raw, Base: base, MaxClockSkew: cfg.MaxClockSkew, ClockInterval: cfg.ClockInterval,
		OnClockStep: func() { a.tasks.ClockStepped() }, Wheel: func() (int, time.Duration, bool) { return a.tasks.Wheel() },
		Executors: a.executorCount, QuorumAlerts: func() []model.Alert { return a.al.QuorumAlerts() }}, rep, f)
	a.exec = executors.New(executors.Config{Logger: a.log, Now: a.now, Lease: cfg.Lease, MaxClockSkew: cfg.MaxClockSkew,
		LeaderWait: cfg.LeaderWait, DefaultTimeout: cfg.DefaultTimeout, Started: func(task string, d time.Duration) { a.tasks.Started(task, d) }},
		rep, f, acc)
	a.tasks = tasks.New(tasks.Config{Logger: a.log, Clock: cfg.Clock, Horizon: cfg.Horizon, Retention: cfg.Retention,
		RetentionInterval: cfg.RetentionInterval, MetricsMaxTasks: cfg.MetricsMaxTasks, Executors: a.exec.Executors,
		OwnAttempt: acc.OwnAttempt, Live: a.exec.Live}, rep, f)
	a.console = tasks.NewConsole(tasks.ConsoleConfig{Clock: cfg.Clock, Stopping: a.stopCh, Cluster: a.cl.Cluster,
		Executors: a.exec.Executors, QuorumAlerts: func() []model.Alert { return a.al.QuorumAlerts() }}, f)
	alertsCfg := alerts.Config{NodeID: cfg.NodeID, Logger: a.log, Clock: cfg.Clock, DefaultTimeout: cfg.DefaultTimeout,
		WatchInterval: cfg.WatchInterval, StuckAfter: cfg.StuckAfter, SilenceGrace: cfg.SilenceGrace, OvertimeGrace: cfg.OvertimeGrace,
		NotifyInterval: cfg.NotifyInterval, MemberGrace: cfg.MemberGrace, AnomalyWindow: cfg.AnomalyWindow, Silence: cfg.Silence,
		ConsoleURL: a.consoleURL(), Notifier: cfg.testNotifier, Clocks: a.cl.Clock(), Executors: a.leaderExecutors}
	if sl := acc.Sealer(); sl != nil {
		alertsCfg.Sealer = sl
	}
	a.chans = alerts.NewChannels(alertsCfg, f, rep, nil)
	a.al = alerts.New(alertsCfg, f, rep, a.chans)
	if err := rep.Start(); err != nil {
		rep.Close()
		ln.Close()
		if cfg.Restore != "" && strings.HasPrefix(err.Error(), "restore: ") {
			return nil, fmt.Errorf("agent: %w", err)
		}
		return nil, err
	}
	a.node = rep.Raft()
	reg, metrics := a.metrics()
	a.reg = reg
	a.api = api.New(api.Config{Barrier: rep, Tasks: a.tasks, Instances: a.tasks, Executors: a.exec, Cluster: a.cl, ACL: acc, Secrets: acc,
		Channels: a.chans, Live: a.console, Console: a.console, Alerts: a.al, NodeID: cfg.NodeID, Stopping: a.stopCh,
		Auth: acc, Logger: a.log, Now: cfg.Clock.Now, Metrics: metrics, CheckAction: action.Check})
	a.conns = newConnLimiter(ln, cfg.MaxConns)
	var public http.Handler = a.api
	if !cfg.NoUI {
		public = ui.Mount(a.api)
	}
	// The node-to-node endpoints have their own handler, for members only.
	handler := api.NewInternal(api.InternalConfig{Backend: rep, Auth: acc, WallClock: raw.Now, ClockJump: base.Jump}).Mount(public)
	a.http = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer a.conns.serving(r)()
			if a.refuseUnusable(w, r) {
				return
			}
			r, done := acc.TrackRequest(r)
			defer done()
			limitBody(w, r)
			handler.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ConnState:         a.conns.track,
		ConnContext:       a.conns.connContext,
		ErrorLog:          newServerLog(a.log),
	}
	if err := a.servePprof(); err != nil {
		rep.Close()
		ln.Close()
		return nil, err
	}
	if cfg.Executor {
		ex, err := worker.New(worker.Config{Servers: []string{loopbackFor(a.HTTPAddr())}, Name: cfg.NodeID, Token: localExecToken, TLS: a.rep.PeerTLS(),
			Capacity: cfg.ExecutorCapacity, Labels: cfg.ExecutorLabels, Logger: a.log, Shell: true, HTTP: true, Reaper: cfg.ExecutorReaper,
			// The node is going away: its attempts may finish within the
			// grace; those still running then are stopped and reported
			// interrupted while the node can still take the reports.
			ShutdownGrace: execShutdownGrace(cfg.ExecutorShutdownGrace)})
		if err != nil {
			if a.pprof != nil {
				a.pprof.Close()
			}
			rep.Close()
			ln.Close()
			return nil, err
		}
		ectx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		a.stopExec = func() {
			cancel()
			select { // its reports go through this node's API
			case <-done:
			case <-time.After(max(cfg.ExecutorShutdownGrace, 0) + 15*time.Second):
			}
		}
		a.wg.Add(1)
		go func() { defer a.wg.Done(); defer close(done); _ = ex.Run(ectx) }()
	}
	// Each of these loops calls a.wg.Done when it returns.
	loops := []func(){func() { defer a.wg.Done(); acc.Run(a.ctx) }, func() { defer a.wg.Done(); a.al.Run(a.ctx) }, func() { defer a.wg.Done(); a.cl.Run(a.ctx) }}
	a.wg.Add(len(loops) + 1)
	for _, loop := range loops {
		go loop()
	}
	go func() {
		defer a.wg.Done()
		if err := a.http.Serve(a.conns); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("http server stopped", "error", err)
		}
	}()
	a.log.Info("agent started", "http", a.HTTPAddr(), "raft", a.node.Addr(), "data", cfg.DataDir, "join", strings.Join(cfg.Join, ","))
	return a, nil
}

// checkNodeID pins a data dir to one node id so that a typo in -node cannot
// make a node pretend to be a different member with another's log.
func checkNodeID(dir, id string) error {
	p := filepath.Join(dir, "node-id")
	b, err := os.ReadFile(p)
	switch {
	case err == nil:
		if got := strings.TrimSpace(string(b)); got != id {
			return fmt.Errorf("agent: data dir %s belongs to node %q, not %q", dir, got, id)
		}
		return nil
	case errors.Is(err, os.ErrNotExist):
		return os.WriteFile(p, []byte(id+"\n"), 0o600)
	default:
		return fmt.Errorf("agent: %w", err)
	}
}

// HTTPAddr returns the address the API listens on.
func (a *Agent) HTTPAddr() string { return a.ln.Addr().String() }

// advertisedHTTP is the HTTP address other nodes use to reach this one.
func (a *Agent) advertisedHTTP() string {
	if a.cfg.AdvertiseHTTP != "" {
		return a.cfg.AdvertiseHTTP
	}
	return a.HTTPAddr()
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
	if a.stopExec != nil {
		a.stopExec()
	}
	if a.node.IsLeader() {
		if servers, err := a.node.Servers(ctx); err == nil && len(servers) > 1 {
			tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := a.node.TransferLeadership(tctx, ""); err != nil {
				a.log.Warn("leadership transfer before shutdown failed", "error", err)
			} else {
				a.log.Info("transferred leadership before shutdown")
			}
			cancel()
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
	err := a.rep.Stop()
	a.wg.Wait()
	if ferr := a.rep.Close(); err == nil {
		err = ferr
	}
	a.log.Info("agent stopped")
	return err
}

// execShutdownGrace is the embedded executor's worker.Config.ShutdownGrace
// for the agent's setting: none (negative) for 0.
func execShutdownGrace(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

func (a *Agent) stopping() bool {
	select {
	case <-a.stopCh:
		return true
	default:
		return false
	}
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
