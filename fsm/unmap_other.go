//go:build !linux

package fsm

import bolt "go.etcd.io/bbolt"

// unmapPages does nothing here (see the Linux one).
func unmapPages(*bolt.DB) error { return nil }
