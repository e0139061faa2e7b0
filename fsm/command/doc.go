// Package command is the vocabulary of ax's Raft log: the command types,
// the Command header and its wire form, every command's body with its
// stateless validation, and the compact codecs of the hot bodies (submit,
// complete_batch).
//
// It imports neither bbolt nor net/http: what a command means to the
// state (its check against the stored state and its apply) is the fsm
// package's, in one table per type (fsm/handlers.go). Packages that only
// build or read commands (the API, the scheduler, the dispatcher) need
// nothing else.
//
// Everything here is part of the log's meaning: type numbers, encodings,
// bounds and even the words of a refusal are replicated (results are
// remembered with request ids), so a change is a protocol change. See
// fsm/DESIGN.md, "Protocol versions" and "Command types".
package command
