// Package cluster is an ax node's membership and health: joining (with
// the member key a node without TLS needs first), keeping this node's
// record (addresses, protocol) up to date, removing members, handing
// leadership over, raising the cluster's protocol and setting its member
// key, /healthz and the cluster status (every member asked at once), and
// the clock monitor and per-term clock guard (package clock) that hold
// the node's time base to the cluster's. It works through the replica,
// the Raft member and the state machine, each through an interface it
// declares.
package cluster
