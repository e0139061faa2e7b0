// Package tests holds ax's multi-process tests: they build the real ax
// binary once, start agents on free loopback ports in temp dirs, inject
// faults (kill -9, restarts) and check what clients observe.
package tests
