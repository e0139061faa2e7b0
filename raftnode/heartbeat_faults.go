//go:build faults

package raftnode

import "os"

// ungatedHeartbeats turns the heartbeat gate off in a binary built with
// -tags faults when AX_FAULT_RAFT_UNGATED is set: every heartbeat takes
// Raft's fast path, as hashicorp/raft does on its own, so that a test can
// measure what the gate prevents (docs/testing.md, Fault hooks).
var ungatedHeartbeats = os.Getenv("AX_FAULT_RAFT_UNGATED") != ""
