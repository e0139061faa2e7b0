// Package replica is a node's member of the cluster's Raft group and its
// copy of the replicated state machine: the layer every role service of
// the agent writes and reads through. It owns raftnode and the state
// machine (fsm), the leadership terms (one owner each: a term waits for
// a Raft barrier, runs its services and its group commit, and is waited
// for before the next one starts), the leader's stamping of time into
// commands, the protocol gate, forwarding to the leader (OnLeader: local
// on the leader, one hop to it otherwise, retried across leader changes)
// and linearizable reads (read index rounds and barriers).
//
// Its surface is small: Propose (and ProposeOwn, ProposeAsync), OnLeader
// and Ask for what only the leader answers, ReadBarrier, LeaderIndex and
// WaitApplied for reads, Current and Observed for the term, IsLeader and
// LeaderChanged, Members and Peer for the other nodes, State for reads of
// the state machine and Raft for membership and status. Errors are
// translated here, once: callers get *model.Error values (503 with what
// to do) or the state machine's results. See DESIGN.md.
package replica
