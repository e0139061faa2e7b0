// Package chaos is ax's chaos suite: three real agents and their executors,
// each in a network namespace of its own on a private bridge, under
// network partitions, one-way cuts, a flapping link, SIGSTOP, kill -9
// loops, clock offsets and an executor cut off mid-attempt, while a
// workload records every acknowledged write and every attempt's start and
// end. A checker then judges the recorded history: no acknowledged write
// lost, no duplicate instance, no two attempts of one instance running at
// once, no early fire, firing and dispatch resumed within their bounds,
// nothing stuck.
//
// The checker (History, Check) is plain functions over a recorded
// history, with unit tests of its own; Net makes the namespaces with
// iproute2 alone. The scenarios are in chaos_test.go: go test
// ./tests/chaos/ runs each briefly, AX_CHAOS_LONG=1 (or -chaos.long) runs
// longer soaks. They need root; go test -short skips them.
package chaos
