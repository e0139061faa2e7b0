// Package raftnode hides hashicorp/raft behind a small Node: it wires the
// raft-boltdb log and stable store (behind a log cache), the file snapshot
// store and the TCP transport, whose connections authenticate before raft
// reads a byte of them (mutual TLS when configured, else the member-key
// handshake of peerauth.go and its key file), bootstraps or waits to be
// joined, applies commands with a context, reports leadership changes, and
// translates raft's errors into the sentinels of this package.
package raftnode
