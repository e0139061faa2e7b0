//go:build !faults

package raftnode

// ungatedHeartbeats is the fault hook of heartbeat_faults.go; a normal
// build always gates.
const ungatedHeartbeats = false
