package raftnode

import "time"

// Failure detection, as hashicorp/raft (v1.8, pre-vote on) runs it:
//
//   - The leader sends each follower a heartbeat every HeartbeatTimeout/10
//     to /5 (randomised), besides its appends.
//   - A follower's heartbeat timer fires every HeartbeatTimeout to
//     2×HeartbeatTimeout (randomised anew each time; contact does not
//     reset it). When it fires and the follower has heard nothing for
//     HeartbeatTimeout, it forgets the leader and becomes a candidate. So
//     a dead leader is noticed by each follower between HeartbeatTimeout
//     and 3×HeartbeatTimeout after its last heartbeat.
//   - A candidate first asks for pre-votes, without raising its term. A
//     voter that still knows a leader refuses, so in a 3-node cluster the
//     first survivor to notice is refused by the other until that one
//     notices too (or until the first's election timer, ElectionTimeout to
//     2×ElectionTimeout, sends it round again). The election proper (the
//     term raised by one, votes persisted with fsync) follows within a
//     round trip.
//   - A leader that has not heard from a quorum within LeaderLeaseTimeout
//     steps down, so a partitioned leader stops acting as one.
//
// A leader's SIGKILL to a new leader therefore takes roughly the later of
// the two survivors' detection: between 1× and 3× HeartbeatTimeout. A
// follower starved of CPU for HeartbeatTimeout alone starts nothing (its
// pre-vote is refused); both followers, or the leader, stalled that long
// (a CPU-starved or paused leader, a leader that hears from no follower
// within LeaderLeaseTimeout) make a spurious election. raft requires
// LeaderLeaseTimeout <= HeartbeatTimeout <= ElectionTimeout, each at
// least MinTimeout.
//
// The defaults (README, Performance: failover timing) put a 3-node
// loopback cluster's leader SIGKILL -> next timer fired at p50 0.75 s, p99
// 1.1-1.35 s on a busy 2-core machine (hashicorp/raft's own 1s/1s/500ms:
// p50 2.3 s, p99 3.8-4.2 s). The lease is as long as raft allows, the
// heartbeat timeout: at 200ms/100ms a leader on the starved machine
// stepped down for want of a quorum within the lease about once a minute,
// and single-follower gaps up to 363 ms were seen at 300 ms; a longer
// lease only delays a cut-off leader's stepping down (every ax action
// commits through Raft, so it cannot act meanwhile).
const (
	// DefaultHeartbeatTimeout is how long a follower goes without hearing
	// from the leader before it may start an election.
	DefaultHeartbeatTimeout = 300 * time.Millisecond
	// DefaultElectionTimeout is how long a candidate waits for an
	// election (or a refused pre-vote) before it tries again.
	DefaultElectionTimeout = 300 * time.Millisecond
	// DefaultLeaderLeaseTimeout is how long a leader goes without hearing
	// from a quorum before it steps down.
	DefaultLeaderLeaseTimeout = 300 * time.Millisecond
	// MinTimeout is the least of each timeout that raft accepts.
	MinTimeout = 5 * time.Millisecond
)
