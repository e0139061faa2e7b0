// Package executors is the leader's side of the executor protocol: the
// long poll, heartbeats and reports (api.ExecutorBackend), answered by the
// dispatcher of the term this node leads (StartTerm makes one per term
// and attaches it to the term) or forwarded one hop to the leader through
// the replica. It completes each leased job (its effective timeout, the
// values of the secrets it references). The executor side, the protocol
// client included, is package worker.
package executors
