// Package agent assembles an ax node: the state machine, the Raft member,
// the HTTP API and the leader loop. It implements every role of api.Backend
// and the node-to-node api.InternalBackend: writes are
// validated by the API, stamped with the leader's clock and proposed
// through Raft (forwarded to the leader in one hop when this node is a
// follower, see onLeader in forward.go); reads are served from the local state machine, or after a
// read barrier when they must be linearizable.
//
// Every node compares its clock with the other members' once a second
// (clockmon.go); a node off from the cluster's clock by more than
// Config.MaxClockSkew is reported, keeps to the cluster's time (clock.go),
// and as leader hands leadership over (clockguard.go). Commands are
// stamped no lower than the latest leader time applied.
package agent
