package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/agent/config"
	"github.com/ax-scheduler/ax/raftnode"
)

type agentCommand struct{}

func (*agentCommand) Usage() string {
	return `
Usage: ax agent [flags]

Runs an ax node. With no flags it is a single-node cluster for trying ax
out: data in ./ax-data, HTTP on 127.0.0.1:7070, Raft on 127.0.0.1:7071.

Examples:
	# try it out
	ax agent

	# a three-node cluster on one machine
	ax agent -node n1 -data /var/lib/ax/n1 -http 127.0.0.1:7070 -raft 127.0.0.1:7071
	ax agent -node n2 -data /var/lib/ax/n2 -http 127.0.0.1:7080 -raft 127.0.0.1:7081 -join 127.0.0.1:7070
	ax agent -node n3 -data /var/lib/ax/n3 -http 127.0.0.1:7090 -raft 127.0.0.1:7091 -join 127.0.0.1:7070

	# in a container: listen everywhere, advertise the reachable address
	ax agent -node n1 -data /data -http 0.0.0.0:7070 -raft 0.0.0.0:7071 \
		-advertise-http ax1.example.com:7070 -advertise-raft ax1.example.com:7071 ...

	# settings from a file (deploy/ax-agent.hcl lists every key); a flag
	# given as well wins over the file
	ax agent -config /etc/ax/agent.hcl -log-level debug

	# TLS (certificates from ax tls; SIGHUP reloads them)
	ax agent -node n1 -http 10.0.0.1:7070 -raft 10.0.0.1:7071 \
		-tls-ca tls/ax-ca.pem -tls-cert tls/n1.pem -tls-key tls/n1-key.pem

The settings come from the flags' defaults, then the -config file, then
AX_TOKEN / AX_EXECUTOR_TOKEN, then the flags given. Relative paths in the
file are relative to the file's directory.

A node with existing state restarts with the same command line; -join is
then only a fallback. SIGTERM on the leader transfers leadership first.
A non-loopback HTTP or Raft address needs TLS, or -insecure. A node
listening on 0.0.0.0 or :: needs -advertise-http / -advertise-raft.
`
}

// agentGCPercent is the agent's garbage-collection target unless GOGC is set.
const agentGCPercent = 200

// agentOptions are the flags of ax agent that are not fields of
// agent.Config, or that need parsing first.
type agentOptions struct {
	configFile   string
	join         string
	tokenFile    string
	encKeyFile   string
	ui           bool
	logLevel     string
	logJSON      bool
	embedded     string
	execCapacity int
	execLabels   string
	tls          agentTLSFlags
}

// agentEnvFlags are the flags whose default comes from the environment:
// set there, they win over the config file. They are applied after
// parsing (applyEnv), not as the flags' defaults, which -h would print.
var agentEnvFlags = map[string]string{"token": "AX_TOKEN", "executor-token": "AX_EXECUTOR_TOKEN"}

// agentFlags defines ax agent's flags over cfg and o. Every flag but
// -config is also a key of the config file (agent/config).
func agentFlags(usage string, cfg *agent.Config, o *agentOptions) *flag.FlagSet {
	fs := newFlagSet("agent", usage)
	fs.StringVar(&o.configFile, "config", "", "read settings from this HCL file (keys are the flags with _ for -; flags given here override it)")
	fs.StringVar(&cfg.NodeID, "node", "n1", "node id, unique in the cluster")
	fs.StringVar(&cfg.DataDir, "data", "./ax-data", "data directory")
	fs.StringVar(&cfg.HTTPAddr, "http", "127.0.0.1:7070", "HTTP API listen address")
	fs.StringVar(&cfg.RaftAddr, "raft", "127.0.0.1:7071", "Raft listen address")
	fs.StringVar(&cfg.AdvertiseHTTP, "advertise-http", "", "HTTP address the other nodes reach this one at (default -http; required when -http is 0.0.0.0 or ::, or behind NAT)")
	fs.StringVar(&cfg.AdvertiseRaft, "advertise-raft", "", "Raft address the other nodes reach this one at (default -raft; required when -raft is 0.0.0.0 or ::, or behind NAT)")
	fs.StringVar(&o.join, "join", "", "HTTP address(es) of existing members to join, comma-separated")
	fs.StringVar(&cfg.Restore, "restore", "", "start a new one-node cluster from a snapshot's state.bin (empty -data; others then -join it)")
	fs.StringVar(&cfg.Token, "token", "", "management token: admin on every route, also used to join (default env AX_TOKEN; prefer -token-file, which keeps it out of the process list)")
	fs.StringVar(&o.tokenFile, "token-file", "", "read the management token from this file (mode 0600)")
	fs.StringVar(&o.encKeyFile, "encrypt-key-file", "", "encrypt secret values at rest with this AES-256 key (ax keygen; the same file on every node)")
	fs.BoolVar(&o.ui, "ui", true, "serve the operator console at /ui/ (false: the API only)")
	fs.StringVar(&cfg.ConsoleURL, "console-url", "", "base URL of the console links in notifications (default http(s)://<this node's HTTP address>; set it behind a proxy)")
	fs.IntVar(&cfg.MaxConns, "max-conns", 1024, "open API connections at most (at the cap one that never got a request through, else the longest idle one, is closed; those in a request are kept)")
	fs.IntVar(&cfg.MetricsMaxTasks, "metrics-max-tasks", agent.DefaultMetricsMaxTasks, "distinct task names with their own task label on the per-task histograms; later ones are counted as task=\"other\"")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error")
	fs.BoolVar(&o.logJSON, "log-json", false, "log as JSON")
	fs.StringVar(&cfg.PprofAddr, "pprof", "", "serve Go's /debug/pprof on this address (profiling): admin role or the management token; TLS with the agent's certificates; non-loopback only with TLS or -insecure")
	fs.BoolVar(&cfg.FSMSync, "fsm-sync", false, "fsync the state machine on every batch (default: rebuild it from the Raft log after a crash)")
	fs.DurationVar(&cfg.Retention, "retention", 7*24*time.Hour, "keep finished instances this long unless their task sets policy.retention (0: forever)")
	fs.DurationVar(&cfg.RetentionInterval, "retention-interval", time.Minute, "how often the leader deletes instances past retention")
	fs.DurationVar(&cfg.WatchInterval, "watch-interval", 5*time.Second, "how often the leader evaluates the alert rules")
	fs.DurationVar(&cfg.StuckAfter, "stuck-after", 30*time.Minute, "alert on an instance READY, BLOCKED or WAITING_APPROVAL for longer")
	fs.DurationVar(&cfg.SilenceGrace, "silence-grace", time.Minute, "alert on an expected fire this long past its catch-up window without an instance")
	fs.DurationVar(&cfg.OvertimeGrace, "overtime-grace", time.Minute, "alert on an attempt running this long past its task's timeout")
	fs.DurationVar(&cfg.MemberGrace, "member-grace", 30*time.Second, "alert on a member that has not answered the leader for longer (member_unreachable)")
	fs.DurationVar(&cfg.AnomalyWindow, "anomaly-window", time.Hour, "alert on a task with more schedule instances within this window than its trigger allows, plus one (frequency_anomaly)")
	fs.DurationVar(&cfg.Silence, "silence", 10*time.Minute, "alert when nothing has fired for this long while a cron/interval/once task was due (cluster_silence)")
	fs.DurationVar(&cfg.Lease, "lease", 10*time.Second, "how long a running attempt survives without an executor heartbeat")
	fs.DurationVar(&cfg.DefaultTimeout, "default-timeout", time.Hour, "timeout of attempts whose task sets no policy.timeout (0: none; a task opts out with \"timeout\": \"none\")")
	fs.DurationVar(&cfg.MaxClockSkew, "max-clock-skew", time.Second, "a node whose clock is further than this from the cluster's (the members' median) is reported, keeps to the cluster's time and hands leadership over")
	fs.StringVar(&cfg.ExecutorToken, "executor-token", "", "token good only for the executor protocol (default env AX_EXECUTOR_TOKEN)")
	fs.StringVar(&o.embedded, "executor", "auto", "run an embedded executor: true, false, or auto (on when there is no -join)")
	fs.IntVar(&o.execCapacity, "executor-capacity", 16, "attempts the embedded executor runs at once")
	fs.StringVar(&o.execLabels, "executor-labels", "", "labels k=v,k=v of the embedded executor")
	fs.DurationVar(&cfg.ExecutorShutdownGrace, "executor-shutdown-grace", 5*time.Second, "on SIGTERM the embedded executor's running attempts may finish within this; then they are stopped and run again later, not charged to maxRetries (0: stop them at once)")
	fs.DurationVar(&cfg.Horizon, "horizon", time.Hour, "delayed instances due within this are held in the leader's timing wheel")
	fs.Uint64Var(&cfg.SnapshotThreshold, "snapshot-threshold", 8192, "log entries between Raft snapshots")
	fs.DurationVar(&cfg.SnapshotInterval, "snapshot-interval", 2*time.Minute, "how often to check whether to snapshot")
	fs.Uint64Var(&cfg.TrailingLogs, "trailing-logs", 10240, "log entries kept after a snapshot")
	fs.DurationVar(&cfg.HeartbeatTimeout, "raft-heartbeat-timeout", raftnode.DefaultHeartbeatTimeout, "a follower that has not heard from the leader this long starts an election (a dead leader is noticed after 1-3x this; lower fails over faster, but a leader stalled this long, starved of CPU say, causes a spurious election)")
	fs.DurationVar(&cfg.ElectionTimeout, "raft-election-timeout", raftnode.DefaultElectionTimeout, "a candidate without a result this long tries again (at least -raft-heartbeat-timeout)")
	fs.DurationVar(&cfg.LeaderLeaseTimeout, "raft-lease-timeout", raftnode.DefaultLeaderLeaseTimeout, "a leader that has not heard from a quorum this long steps down (at most -raft-heartbeat-timeout)")
	o.tls.register(fs, cfg)
	return fs
}

// checkRaftTiming checks the Raft timeouts against one another as
// hashicorp/raft requires, naming the flags (the config file's keys set
// them too).
func checkRaftTiming(cfg *agent.Config) error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"raft-heartbeat-timeout", cfg.HeartbeatTimeout}, {"raft-election-timeout", cfg.ElectionTimeout}, {"raft-lease-timeout", cfg.LeaderLeaseTimeout}} {
		if d.v < raftnode.MinTimeout {
			return fmt.Errorf("agent: -%s %s is below the least Raft accepts, %s", d.flag, d.v, raftnode.MinTimeout)
		}
	}
	if cfg.LeaderLeaseTimeout > cfg.HeartbeatTimeout {
		return fmt.Errorf("agent: -raft-lease-timeout %s is longer than -raft-heartbeat-timeout %s; it must be at most that", cfg.LeaderLeaseTimeout, cfg.HeartbeatTimeout)
	}
	if cfg.ElectionTimeout < cfg.HeartbeatTimeout {
		return fmt.Errorf("agent: -raft-election-timeout %s is shorter than -raft-heartbeat-timeout %s; it must be at least that", cfg.ElectionTimeout, cfg.HeartbeatTimeout)
	}
	return nil
}

// minTokenLen is the least length of the static tokens an agent takes
// (-token, -executor-token): a management token opens every route.
const minTokenLen = 16

// checkTokenLengths refuses a static token shorter than minTokenLen,
// naming its flag and the other places it may come from.
func checkTokenLengths(cfg *agent.Config) error {
	for _, t := range []struct{ flag, env, key, v string }{
		{"-token (or -token-file)", "AX_TOKEN", "token, token_file", cfg.Token},
		{"-executor-token", "AX_EXECUTOR_TOKEN", "executor_token", cfg.ExecutorToken},
	} {
		if t.v != "" && len(t.v) < minTokenLen {
			return fmt.Errorf("agent: %s is %d bytes; a token must be at least %d, as anyone who guesses it gets its role "+
				"(it may also come from %s or the config file's %s). Make one with: ax keygen > agent.token && chmod 600 agent.token, then -token-file agent.token",
				t.flag, len(t.v), minTokenLen, t.env, t.key)
		}
	}
	return nil
}

// applyConfigFile applies the -config file to the flags the command line
// and the environment left unset, and returns its warnings.
func applyConfigFile(fs *flag.FlagSet, path string) (warnings []string, err error) {
	f, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	var keep []string
	for name, env := range agentEnvFlags {
		if os.Getenv(env) != "" {
			keep = append(keep, name)
		}
	}
	if err := f.Apply(fs, keep...); err != nil {
		return nil, err
	}
	if f.Set("token") || f.Set("executor_token") {
		if w := warnIfShared(path); w != "" {
			warnings = append(warnings, "config file holds a token and "+w)
		}
	}
	return warnings, nil
}

// parseAgentFlags parses args, then fills what they left unset from the
// -config file, and the agentEnvFlags from the environment: defaults <
// file < environment < command line. It returns the file's warnings.
func parseAgentFlags(fs *flag.FlagSet, o *agentOptions, args []string) (warnings []string, err error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("agent: unexpected arguments %q", fs.Args())
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if o.configFile != "" {
		if warnings, err = applyConfigFile(fs, o.configFile); err != nil {
			return nil, err
		}
	}
	if err := applyEnv(fs, explicit); err != nil {
		return nil, err
	}
	return warnings, refuseNegative(fs)
}

// refuseNegative refuses a negative duration in any flag, as the config
// file does: no duration of the agent means anything below zero, and the
// agent would otherwise fall back to a default without a word.
func refuseNegative(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok || err != nil {
			return
		}
		if d, ok := g.Get().(time.Duration); ok && d < 0 {
			err = fmt.Errorf("agent: -%s: %q is negative", f.Name, f.Value.String())
		}
	})
	return err
}

// applyEnv sets the agentEnvFlags that the command line did not set from
// their environment variables.
func applyEnv(fs *flag.FlagSet, explicit map[string]bool) error {
	for name, env := range agentEnvFlags {
		if v := os.Getenv(env); v != "" && !explicit[name] {
			if err := fs.Set(name, v); err != nil {
				return fmt.Errorf("agent: %s: %w", env, err)
			}
		}
	}
	return nil
}

func (c *agentCommand) Run(ctx context.Context, args []string) error {
	var (
		cfg agent.Config
		o   agentOptions
	)
	fs := agentFlags(c.Usage(), &cfg, &o)
	warnings, err := parseAgentFlags(fs, &o, args)
	if err != nil {
		return err
	}
	if err := checkRaftTiming(&cfg); err != nil {
		return err
	}
	if err := o.tls.load(&cfg); err != nil {
		return err
	}
	cfg.NoUI = !o.ui
	tok, err := readToken(cfg.Token, o.tokenFile)
	if err != nil {
		return err
	}
	cfg.Token = tok
	if err := checkTokenLengths(&cfg); err != nil {
		return err
	}
	if o.tokenFile != "" {
		if w := warnIfShared(o.tokenFile); w != "" {
			warnings = append(warnings, "token file "+w)
		}
	}
	if o.encKeyFile != "" {
		key, w, err := agent.ReadEncryptKey(o.encKeyFile)
		if err != nil {
			return err
		}
		if w != "" {
			warnings = append(warnings, w)
		}
		cfg.EncryptKey = key
	}
	for _, j := range strings.Split(o.join, ",") {
		if j = strings.TrimSpace(j); j != "" {
			cfg.Join = append(cfg.Join, j)
		}
	}
	switch o.embedded {
	case "auto":
		cfg.Executor = len(cfg.Join) == 0
	case "true", "false":
		cfg.Executor = o.embedded == "true"
	default:
		return fmt.Errorf("agent: -executor wants true, false or auto")
	}
	cfg.ExecutorCapacity = o.execCapacity
	cfg.ExecutorReaper = reaperArgv()
	if cfg.ExecutorLabels, err = parseLabels(o.execLabels); err != nil {
		return err
	}
	clock, offset, err := faultClock()
	if err != nil {
		return err
	}
	level, err := parseLogLevel(o.logLevel)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	logOpts := hclog.LoggerOptions{Name: "ax", Level: level, JSONFormat: o.logJSON, Output: os.Stderr}
	if clock != nil {
		cfg.Clock, logOpts.TimeFn = clock, clock.Now
		warnings = append(warnings, fmt.Sprintf("fault hook: this node's wall clock is offset by %s (a binary built with -tags faults, for tests only)", offset))
	}
	cfg.Logger = hclog.New(&logOpts)
	for _, w := range warnings {
		cfg.Logger.Warn(w)
	}
	if os.Getenv("GOGC") == "" {
		// The apply path allocates fast over a small live heap, so the
		// default GOGC=100 collects several times a second; 200 halves
		// that and measurably steadies fire lateness (docs/performance.md,
		// Submissions and firing). GOGC in the environment still wins.
		debug.SetGCPercent(agentGCPercent)
	}
	reloadOnSIGHUP(ctx, cfg.TLS, cfg.Logger)
	cfg.Version = version
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return a.Shutdown(sctx)
}
