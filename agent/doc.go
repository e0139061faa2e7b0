// Package agent assembles an ax node: it opens the replica (the Raft
// member and the state machine), builds the role services on it (access,
// cluster, executors, tasks, alerts) and wires them to each other and to
// the HTTP API, one backend per role; it is the state machine's observer,
// lists a leadership term's services, and owns the HTTP front and the
// embedded executor. See DESIGN.md for who owns what.
package agent
