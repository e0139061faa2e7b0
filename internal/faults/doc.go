// Package faults holds ax's fault hooks for tests, compiled only into a
// binary built with -tags faults (a normal build has none and reads no
// variable): Clock, the wall clock of the agent and the executor offset
// by AX_FAULT_CLOCK_OFFSET, and stepped while the process runs through
// the file AX_FAULT_CLOCK_FILE names (docs/testing.md, Fault hooks).
package faults
