# ax agent configuration: ax agent -config /etc/ax/agent.hcl
#
# Every key is a flag of ax agent with _ for - (advertise_http is
# -advertise-http); every key is optional. A flag given on the command line
# wins over the file, and AX_TOKEN / AX_EXECUTOR_TOKEN in the environment
# win over token / executor_token. Each value below is the flag's default,
# except data (/var/lib/ax, where the systemd unit keeps the node's state),
# so this file changes nothing else until you edit it.
#
# Types: strings in double quotes; numbers and true/false unquoted;
# durations as strings in Go syntax ("30s", "5m", "1h30m"); lists as
# ["a", "b"]; maps as { key = "value" }. An unknown key, a value of the
# wrong type or a bad value stops the agent with this file's name, the line
# and the key. Relative paths are relative to this file's directory.

# --- The node --------------------------------------------------------------

# Node id, unique in the cluster; kept in the data directory after the
# first start. Default: "n1".
node = "n1"

# Data directory: the Raft log, snapshots and state machine.
# Default: "./ax-data" (when not set, relative to the working directory).
data = "/var/lib/ax"

# HTTP API (and console) listen address. Default: "127.0.0.1:7070".
http = "127.0.0.1:7070"

# Raft listen address. Default: "127.0.0.1:7071".
raft = "127.0.0.1:7071"

# The HTTP and Raft addresses the other nodes reach this one at, recorded
# for joins, forwarding and ax cluster status. Required when http or raft
# is 0.0.0.0 or :: (containers) or behind NAT; a host name in
# advertise_raft is resolved once, at start. Default: "" (http, raft).
advertise_http = ""
advertise_raft = ""

# HTTP addresses of existing members to join (host:port, or https://...
# for a TLS cluster reached by name). Empty: bootstrap a new cluster. A node
# with existing state only falls back to them. Default: [].
join = []

# Start a new one-node cluster from a snapshot's state.bin (an empty data
# directory, no join); the others then join it. Default: "".
restore = ""

# --- Security --------------------------------------------------------------

# TLS: the cluster CA, this node's certificate and its key (ax tls); all
# three or none. With them, HTTPS on http and mutual TLS on raft. SIGHUP
# reloads them. Default: "" (no TLS).
tls_ca   = ""
tls_cert = ""
tls_key  = ""

# Allow non-loopback http or raft addresses without TLS. Default: false.
insecure = false

# Management token (admin on every route, also used to join), at least 16
# bytes (ax keygen makes one). Prefer token_file (mode 0600); a token
# written here makes this file a secret.
# Default: "" ($AX_TOKEN when set).
token      = ""
token_file = ""

# A token good only for the executor protocol (prefer ACL executor tokens).
# Default: "" ($AX_EXECUTOR_TOKEN when set).
executor_token = ""

# AES-256 key (ax keygen; the same file on every node): secret values are
# encrypted in the Raft log, state machine and snapshots. Default: "".
encrypt_key_file = ""

# --- API, console and logs -------------------------------------------------

# Serve the operator console at /ui/; false: the API only. Default: true.
ui = true

# Base URL of the console links in notifications; set it when the console
# is reached through a proxy or another name.
# Default: "" (http(s)://<this node's HTTP address>).
console_url = ""

# Open API connections at most; at the cap a new one closes one that never
# got a request through, else the longest idle one (connections in a
# request, such as event streams and long polls, are kept). Each idle
# executor holds two on the node it polls. Default: half the process's
# open-file limit, from 1024 to 8192 (this file sets the top of the range).
max_conns = 8192

# Distinct task names with their own task label on the per-task
# histograms; later ones are counted as task="other". Default: 200.
metrics_max_tasks = 200

# Log level: trace, debug, info, warn, error. Default: "info".
log_level = "info"

# Log as JSON. Default: false.
log_json = false

# Serve Go's /debug/pprof on this address (profiling), to the admin role
# or the management token only, over TLS on a TLS node; a non-loopback
# address needs TLS or insecure, like every listener. Default: "" (off).
pprof = ""

# --- Embedded executor -----------------------------------------------------

# Run an embedded executor: "true", "false" (or unquoted true / false), or
# "auto" (on when join is empty). In a cluster, run ax executor instead.
# Default: "auto".
executor = "auto"

# Attempts the embedded executor runs at once. Default: 16.
executor_capacity = 16

# On SIGTERM the embedded executor takes no new work and its running
# attempts may finish within this; those still running then are stopped
# and recorded interrupted: they run again, not charged to maxRetries.
# Keep it below the stop timeout of what supervises ax (systemd
# TimeoutStopSec, docker stop -t, a pod's terminationGracePeriodSeconds)
# less ~10s. "0s": stop them at once. Default: "5s".
executor_shutdown_grace = "5s"

# Labels of the embedded executor, e.g. { zone = "a", gpu = "yes" }.
# Default: {}.
executor_labels = {}

# --- Scheduling and execution ----------------------------------------------

# Timeout of attempts whose task sets no policy.timeout; "0s": none.
# Default: "1h".
default_timeout = "1h"

# A running attempt without an executor heartbeat this long is lost.
# Default: "10s".
lease = "10s"

# Delayed instances due within this are held in the leader's timing wheel.
# Default: "1h".
horizon = "1h"

# A node whose clock is further than this from the cluster's (the members'
# median) is reported, keeps to the cluster's time and hands leadership
# over. Default: "1s".
max_clock_skew = "1s"

# Finished instances are deleted this long after they end unless their
# task sets policy.retention ("0s": keep forever); how often the leader
# looks. Default: "168h", "1m".
retention          = "168h"
retention_interval = "1m"

# --- Alerts ----------------------------------------------------------------

# How often the leader evaluates the alert rules. Default: "5s".
watch_interval = "5s"

# READY, BLOCKED or WAITING_APPROVAL longer than this: stuck_*.
# Default: "30m".
stuck_after = "30m"

# Grace of task_silence (after the catch-up window) and of
# running_overtime (after the timeout). Default: "1m", "1m".
silence_grace  = "1m"
overtime_grace = "1m"

# A member not answering the leader this long: member_unreachable.
# Default: "30s".
member_grace = "30s"

# Window of frequency_anomaly. Default: "1h".
anomaly_window = "1h"

# Nothing fired this long while tasks were due: cluster_silence.
# Default: "10m".
silence = "10m"

# --- Storage and Raft ------------------------------------------------------

# fsync the state machine on every batch (otherwise, after a machine crash,
# it is rebuilt from the Raft snapshot and log). Default: false.
fsm_sync = false

# Log entries between Raft snapshots; how often to check whether to
# snapshot; log entries kept after a snapshot.
# Default: 8192, "2m", 10240.
snapshot_threshold = 8192
snapshot_interval  = "2m"
trailing_logs      = 10240

# A node also snapshots once it has applied this many bytes of log
# entries since its last snapshot, or a sixteenth of its state's size if
# more (one entry can be a batch of 1,000 submissions: what a crashed
# node's rebuild replays is bounded in bytes). Default: 33554432 (32 MiB).
snapshot_bytes = 33554432

# Raft failure detection. A follower that has not heard from the leader
# for raft_heartbeat_timeout starts an election (a dead leader is noticed
# after 1-3x it); a candidate without a result for raft_election_timeout
# tries again; a leader that has not heard from a quorum for
# raft_lease_timeout steps down. Lower fails over faster; too low, and a
# leader starved of CPU (or paused) that long causes a spurious election.
# raft_lease_timeout <= raft_heartbeat_timeout <= raft_election_timeout.
# Default: "300ms", "300ms", "300ms".
raft_heartbeat_timeout = "300ms"
raft_election_timeout  = "300ms"
raft_lease_timeout     = "300ms"
