// Package fsm is ax's replicated state machine: typed commands applied to a
// bbolt database, snapshots that stream the database file, and the queries
// the API serves from it.
//
// Every log entry is one Command: a type byte, a request id, the leader's
// time and the acting user, then a type-specific body. The state machine is
// deterministic: it reads no clock, no random source and no network, and
// iterates only over sorted keys, so the same log gives byte-identical
// databases on every node. See DESIGN.md in this directory for the schema.
package fsm
