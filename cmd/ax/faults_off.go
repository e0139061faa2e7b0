//go:build !faults

package main

import (
	"io"
	"time"

	"github.com/ax-scheduler/ax/wheel"
)

// faultClock is the fault hook's clock (faults_on.go); a normal build has
// none: it reads no variable and the node uses the real clock.
func faultClock(func(string) string, io.Writer) (wheel.Clock, time.Duration, error) {
	return nil, 0, nil
}
