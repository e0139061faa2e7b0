package config

import (
	"flag"
	"sort"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/raftnode"
)

// Settings holds ax agent's settings: every flag of ax agent, each of
// which (but -config) is also a key of the config file. Agent holds
// those that are agent.Config fields as they are; the others are read or
// parsed into it by Config.
type Settings struct {
	Agent agent.Config

	ConfigFile     string // -config
	Join           string // comma-separated member addresses
	TokenFile      string
	EncryptKeyFile string
	UI             bool
	LogLevel       string // trace, debug, info, warn or error
	LogJSON        bool
	Executor       string // auto, true or false
	ExecutorLabels string // k=v,k=v
	TLSCA          string
	TLSCert        string
	TLSKey         string
}

// kind is a setting's value type, as its flag parses it.
type kind int

const (
	kindString kind = iota
	kindBool
	kindInt // a count: at least 1
	kindUint
	kindDuration // never negative
)

// form is how the config file writes a string setting that holds several
// values.
type form int

const (
	formScalar form = iota
	formList        // ["a", "b"], the flag's a,b
	formMap         // { k = "v" }, the flag's k=v,...
)

// setting is one row of the table: the flag -name, the file's key
// (name with _ for -; but -config), and what its values must be.
type setting struct {
	name, usage string
	kind        kind
	form        form
	// check says how a value is checked beyond its kind: addr
	// (host:port, or empty), member (a member's HTTP address, as -join
	// takes it), url (http(s)://, or empty), path (resolved against the
	// config file's directory), oneof=a|b|c (any case).
	check string
	// env names the environment variable that, set, wins over the file
	// (and loses to the command line).
	env      string
	register func(fs *flag.FlagSet)
}

func (s setting) key() string { return strings.ReplaceAll(s.name, "-", "_") }

func (s setting) is(check string) setting    { s.check = check; return s }
func (s setting) written(f form) setting     { s.form = f; return s }
func (s setting) fromEnv(env string) setting { s.env = env; return s }

func str(p *string, name, def, usage string) setting {
	return setting{name: name, usage: usage, kind: kindString, register: func(fs *flag.FlagSet) { fs.StringVar(p, name, def, usage) }}
}

func boolean(p *bool, name string, def bool, usage string) setting {
	return setting{name: name, usage: usage, kind: kindBool, register: func(fs *flag.FlagSet) { fs.BoolVar(p, name, def, usage) }}
}

func count(p *int, name string, def int, usage string) setting {
	return setting{name: name, usage: usage, kind: kindInt, register: func(fs *flag.FlagSet) { fs.IntVar(p, name, def, usage) }}
}

func number(p *uint64, name string, def uint64, usage string) setting {
	return setting{name: name, usage: usage, kind: kindUint, register: func(fs *flag.FlagSet) { fs.Uint64Var(p, name, def, usage) }}
}

func duration(p *time.Duration, name string, def time.Duration, usage string) setting {
	return setting{name: name, usage: usage, kind: kindDuration, register: func(fs *flag.FlagSet) { fs.DurationVar(p, name, def, usage) }}
}

// table is every setting of ax agent, bound to s: the one place a
// setting is declared. Its flag, its config-file key, the key's type and
// the checks of its values all come from its row.
func (s *Settings) table() []setting {
	a := &s.Agent
	return []setting{
		str(&s.ConfigFile, "config", "", "read settings from this HCL file (keys are the flags with _ for -; flags given here override it)"),

		// The node.
		str(&a.NodeID, "node", "n1", "node id, unique in the cluster"),
		str(&a.DataDir, "data", "./ax-data", "data directory").is("path"),
		str(&a.HTTPAddr, "http", "127.0.0.1:7070", "HTTP API listen address").is("addr"),
		str(&a.RaftAddr, "raft", "127.0.0.1:7071", "Raft listen address").is("addr"),
		str(&a.AdvertiseHTTP, "advertise-http", "", "HTTP address the other nodes reach this one at (default -http; required when -http is 0.0.0.0 or ::, or behind NAT)").is("addr"),
		str(&a.AdvertiseRaft, "advertise-raft", "", "Raft address the other nodes reach this one at (default -raft; required when -raft is 0.0.0.0 or ::, or behind NAT)").is("addr"),
		str(&s.Join, "join", "", "HTTP address(es) of existing members to join, comma-separated").is("member").written(formList),
		str(&a.Restore, "restore", "", "start a new one-node cluster from a snapshot's state.bin (empty -data; others then -join it)").is("path"),

		// Security.
		str(&a.Token, "token", "", "management token: admin on every route, also used to join (default env AX_TOKEN; prefer -token-file, which keeps it out of the process list)").fromEnv("AX_TOKEN"),
		str(&s.TokenFile, "token-file", "", "read the management token from this file (mode 0600)").is("path"),
		str(&a.ExecutorToken, "executor-token", "", "token good only for the executor protocol (default env AX_EXECUTOR_TOKEN)").fromEnv("AX_EXECUTOR_TOKEN"),
		str(&s.EncryptKeyFile, "encrypt-key-file", "", "encrypt secret values at rest with this AES-256 key (ax keygen; the same file on every node)").is("path"),
		str(&s.TLSCA, "tls-ca", "", "cluster CA certificate: with -tls-cert and -tls-key, TLS on HTTP and mutual TLS on Raft").is("path"),
		str(&s.TLSCert, "tls-cert", "", "this node's certificate (ax tls cert create -node NAME)").is("path"),
		str(&s.TLSKey, "tls-key", "", "its private key").is("path"),
		boolean(&a.Insecure, "insecure", false, "allow non-loopback HTTP or Raft addresses without TLS"),

		// API, console and logs.
		boolean(&s.UI, "ui", true, "serve the operator console at /ui/ (false: the API only)"),
		str(&a.ConsoleURL, "console-url", "", "base URL of the console links in notifications (default http(s)://<this node's HTTP address>; set it behind a proxy)").is("url"),
		count(&a.MaxConns, "max-conns", agent.DefaultMaxConns(), "open API connections at most, by default half the open-file limit within 1024..8192 (at the cap one that never got a request through, else the longest idle one, is closed; those in a request are kept); each idle executor holds two on the node it polls"),
		count(&a.MetricsMaxTasks, "metrics-max-tasks", agent.DefaultMetricsMaxTasks, "distinct task names with their own task label on the per-task histograms; later ones are counted as task=\"other\""),
		str(&s.LogLevel, "log-level", "info", "log level: "+strings.Join(LogLevels, ", ")).is("oneof=" + strings.Join(LogLevels, "|")),
		boolean(&s.LogJSON, "log-json", false, "log as JSON"),
		str(&a.PprofAddr, "pprof", "", "serve Go's /debug/pprof on this address (profiling): admin role or the management token; TLS with the agent's certificates; non-loopback only with TLS or -insecure").is("addr"),

		// The embedded executor.
		str(&s.Executor, "executor", "auto", "run an embedded executor: true, false, or auto (on when there is no -join)").is("oneof=auto|true|false"),
		count(&a.ExecutorCapacity, "executor-capacity", 16, "attempts the embedded executor runs at once"),
		str(&s.ExecutorLabels, "executor-labels", "", "labels k=v,k=v of the embedded executor").written(formMap),
		duration(&a.ExecutorShutdownGrace, "executor-shutdown-grace", 5*time.Second, "on SIGTERM the embedded executor's running attempts may finish within this; then they are stopped and run again later, not charged to maxRetries (0: stop them at once)"),

		// Scheduling and execution.
		duration(&a.DefaultTimeout, "default-timeout", time.Hour, "timeout of attempts whose task sets no policy.timeout (0: none; a task opts out with \"timeout\": \"none\")"),
		duration(&a.Lease, "lease", 10*time.Second, "how long a running attempt survives without an executor heartbeat"),
		duration(&a.Horizon, "horizon", time.Hour, "delayed instances due within this are held in the leader's timing wheel"),
		duration(&a.MaxClockSkew, "max-clock-skew", time.Second, "a node whose clock is further than this from the cluster's (the members' median) is reported, keeps to the cluster's time and hands leadership over"),
		duration(&a.Retention, "retention", 7*24*time.Hour, "keep finished instances this long unless their task sets policy.retention (0: forever)"),
		duration(&a.RetentionInterval, "retention-interval", time.Minute, "how often the leader deletes instances past retention"),

		// Alerts.
		duration(&a.WatchInterval, "watch-interval", 5*time.Second, "how often the leader evaluates the alert rules"),
		duration(&a.StuckAfter, "stuck-after", 30*time.Minute, "alert on an instance READY, BLOCKED or WAITING_APPROVAL for longer"),
		duration(&a.SilenceGrace, "silence-grace", time.Minute, "alert on an expected fire this long past its catch-up window without an instance"),
		duration(&a.OvertimeGrace, "overtime-grace", time.Minute, "alert on an attempt running this long past its task's timeout"),
		duration(&a.MemberGrace, "member-grace", 30*time.Second, "alert on a member that has not answered the leader for longer (member_unreachable)"),
		duration(&a.AnomalyWindow, "anomaly-window", time.Hour, "alert on a task with more schedule instances within this window than its trigger allows, plus one (frequency_anomaly)"),
		duration(&a.Silence, "silence", 10*time.Minute, "alert when nothing has fired for this long while a cron/interval/once task was due (cluster_silence)"),

		// Storage and Raft.
		boolean(&a.FSMSync, "fsm-sync", false, "fsync the state machine on every batch (default: after a machine crash, rebuild it from the Raft snapshot and log)"),
		number(&a.SnapshotThreshold, "snapshot-threshold", 8192, "log entries between Raft snapshots"),
		number(&a.SnapshotBytes, "snapshot-bytes", 32<<20, "bytes of log entries applied after which a node snapshots, or a sixteenth of its state's size if more"),
		duration(&a.SnapshotInterval, "snapshot-interval", 2*time.Minute, "how often to check whether to snapshot"),
		number(&a.TrailingLogs, "trailing-logs", 10240, "log entries kept after a snapshot"),
		duration(&a.HeartbeatTimeout, "raft-heartbeat-timeout", raftnode.DefaultHeartbeatTimeout, "a follower that has not heard from the leader this long starts an election (a dead leader is noticed after 1-3x this; lower fails over faster, but a leader stalled this long, starved of CPU say, causes a spurious election)"),
		duration(&a.ElectionTimeout, "raft-election-timeout", raftnode.DefaultElectionTimeout, "a candidate without a result this long tries again (at least -raft-heartbeat-timeout)"),
		duration(&a.LeaderLeaseTimeout, "raft-lease-timeout", raftnode.DefaultLeaderLeaseTimeout, "a leader that has not heard from a quorum this long steps down (at most -raft-heartbeat-timeout)"),
	}
}

// configFlag is the one flag that is not a key of the file.
const configFlag = "config"

// LogLevels are the levels -log-level accepts.
var LogLevels = []string{"trace", "debug", "info", "warn", "error"}

// Register defines ax agent's flags on fs, bound to s, with their
// defaults and help. The defaults are set at once.
func (s *Settings) Register(fs *flag.FlagSet) {
	for _, st := range s.table() {
		st.register(fs)
	}
}

// keyed is the table's settings that are keys of the file, by key.
func keyed() map[string]setting {
	out := map[string]setting{}
	for _, st := range (&Settings{}).table() {
		if st.name != configFlag {
			out[st.key()] = st
		}
	}
	return out
}

// Keys returns every key a config file may set, sorted.
func Keys() []string {
	var keys []string
	for k := range keyed() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FlagName returns the flag of ax agent that key sets: its underscores
// become dashes.
func FlagName(key string) string { return strings.ReplaceAll(key, "_", "-") }
