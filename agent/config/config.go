package config

import (
	"reflect"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/gohcl"
)

// Agent holds the settings an agent config file may set, one field per
// flag of ax agent. A nil pointer (or nil slice or map) is a key the file
// does not set.
//
// The ax tag says how a value is checked beyond its type: duration (Go
// syntax, "30s"), addr (host:port), member (a member's HTTP address, as
// -join takes it), url, path (resolved against the file's directory),
// oneof=a|b|c. Counts (int fields) are at least 1.
type Agent struct {
	Node          *string  `hcl:"node,optional"`
	Data          *string  `hcl:"data,optional" ax:"path"`
	HTTP          *string  `hcl:"http,optional" ax:"addr"`
	Raft          *string  `hcl:"raft,optional" ax:"addr"`
	AdvertiseHTTP *string  `hcl:"advertise_http,optional" ax:"addr"`
	AdvertiseRaft *string  `hcl:"advertise_raft,optional" ax:"addr"`
	Join          []string `hcl:"join,optional" ax:"member"`
	Restore       *string  `hcl:"restore,optional" ax:"path"`

	Token          *string `hcl:"token,optional"`
	TokenFile      *string `hcl:"token_file,optional" ax:"path"`
	ExecutorToken  *string `hcl:"executor_token,optional"`
	EncryptKeyFile *string `hcl:"encrypt_key_file,optional" ax:"path"`
	TLSCA          *string `hcl:"tls_ca,optional" ax:"path"`
	TLSCert        *string `hcl:"tls_cert,optional" ax:"path"`
	TLSKey         *string `hcl:"tls_key,optional" ax:"path"`
	Insecure       *bool   `hcl:"insecure,optional"`

	UI              *bool   `hcl:"ui,optional"`
	ConsoleURL      *string `hcl:"console_url,optional" ax:"url"`
	MaxConns        *int    `hcl:"max_conns,optional"`
	MetricsMaxTasks *int    `hcl:"metrics_max_tasks,optional"`
	LogLevel        *string `hcl:"log_level,optional" ax:"oneof=trace|debug|info|warn|error"`
	LogJSON         *bool   `hcl:"log_json,optional"`
	Pprof           *string `hcl:"pprof,optional" ax:"addr"`

	Executor         *string           `hcl:"executor,optional" ax:"oneof=auto|true|false"`
	ExecutorCapacity *int              `hcl:"executor_capacity,optional"`
	ExecutorLabels   map[string]string `hcl:"executor_labels,optional"`
	// ExecutorShutdownGrace: see -executor-shutdown-grace.
	ExecutorShutdownGrace *string `hcl:"executor_shutdown_grace,optional" ax:"duration"`

	DefaultTimeout *string `hcl:"default_timeout,optional" ax:"duration"`
	Lease          *string `hcl:"lease,optional" ax:"duration"`
	Horizon        *string `hcl:"horizon,optional" ax:"duration"`
	MaxClockSkew   *string `hcl:"max_clock_skew,optional" ax:"duration"`

	Retention         *string `hcl:"retention,optional" ax:"duration"`
	RetentionInterval *string `hcl:"retention_interval,optional" ax:"duration"`

	WatchInterval *string `hcl:"watch_interval,optional" ax:"duration"`
	StuckAfter    *string `hcl:"stuck_after,optional" ax:"duration"`
	SilenceGrace  *string `hcl:"silence_grace,optional" ax:"duration"`
	OvertimeGrace *string `hcl:"overtime_grace,optional" ax:"duration"`
	MemberGrace   *string `hcl:"member_grace,optional" ax:"duration"`
	AnomalyWindow *string `hcl:"anomaly_window,optional" ax:"duration"`
	Silence       *string `hcl:"silence,optional" ax:"duration"`

	FSMSync           *bool   `hcl:"fsm_sync,optional"`
	SnapshotThreshold *uint64 `hcl:"snapshot_threshold,optional"`
	SnapshotInterval  *string `hcl:"snapshot_interval,optional" ax:"duration"`
	TrailingLogs      *uint64 `hcl:"trailing_logs,optional"`

	RaftHeartbeatTimeout *string `hcl:"raft_heartbeat_timeout,optional" ax:"duration"`
	RaftElectionTimeout  *string `hcl:"raft_election_timeout,optional" ax:"duration"`
	RaftLeaseTimeout     *string `hcl:"raft_lease_timeout,optional" ax:"duration"`
}

// field is one key of Agent.
type field struct {
	key   string
	index int
	typ   reflect.Type
	check string // the ax tag
}

// fields lists Agent's keys in declaration order.
func fields() []field {
	t := reflect.TypeFor[Agent]()
	out := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("hcl"), ",")
		out = append(out, field{key: key, index: i, typ: f.Type, check: f.Tag.Get("ax")})
	}
	return out
}

// Keys returns every key a config file may set, sorted.
func Keys() []string {
	schema, _ := gohcl.ImpliedBodySchema(&Agent{})
	keys := make([]string, 0, len(schema.Attributes))
	for _, a := range schema.Attributes {
		keys = append(keys, a.Name)
	}
	sort.Strings(keys)
	return keys
}

// FlagName returns the flag of ax agent that key sets: its underscores
// become dashes.
func FlagName(key string) string { return strings.ReplaceAll(key, "_", "-") }
