// Package fsm is ax's replicated state machine: typed commands applied to a
// bbolt database, snapshots that stream the database file, and the queries
// the API serves from it.
//
// Every log entry is one command.Command (package fsm/command, which holds
// the log's vocabulary): a type byte, a request id, the leader's time and
// the acting user, then a type-specific body. What each type does to the
// state is in one table (handlers.go) that Precheck and apply share; a
// type this version does not know stops the node unless it is flagged
// ignorable. The state machine is deterministic: it reads no clock, no
// random source and no network, and iterates only over sorted keys, so the
// same log gives byte-identical databases on every node. See DESIGN.md in this directory for the schema.
package fsm
