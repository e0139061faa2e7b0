//go:build !faults

package faults

import (
	"io"
	"time"

	"github.com/ax-scheduler/ax/wheel"
)

// Clock is the fault hook's clock (clock.go); a normal build has none: it
// reads no variable and the node uses the real clock.
func Clock(func(string) string, io.Writer) (wheel.Clock, time.Duration, error) {
	return nil, 0, nil
}
