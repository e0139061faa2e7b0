// Package testkit holds the helpers every test package of ax shares:
// waiting on a condition with a deadline (Eventually, Until, Poll), a
// goroutine-safe Buffer, test loggers (LogWriter, Logger) and FreeAddr.
//
// It imports no package of ax, so that any package's internal tests
// (package agent, package fsm, ...) can use it without an import cycle.
// Helpers that need ax's own packages live next to what they need: an
// in-process agent in internal/agenttest, the cluster harness (one
// Cluster interface over processes or in-process agents, the
// multi-process starter) in internal/clustertest.
package testkit
