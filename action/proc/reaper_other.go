//go:build !linux

package action

import (
	"errors"
	"io"
	"time"
)

// ReaperMarkEnv is the environment variable that marks every process of a
// shell attempt run with a Reaper.
const ReaperMarkEnv = "AX_ATTEMPT_MARK"

// Reaper stops the processes of a killed executor's attempts; it needs
// Linux's /proc, elsewhere StartReaper fails.
type Reaper struct{}

// StartReaper fails: the reaper needs Linux.
func StartReaper(argv []string, grace time.Duration, stderr io.Writer) (*Reaper, error) {
	return nil, errors.New("action: the reaper needs Linux")
}

func (r *Reaper) begin() (string, uint64) { return "", 0 }
func (r *Reaper) started(uint64, int)     {}
func (r *Reaper) end(uint64)              {}

// Close does nothing.
func (r *Reaper) Close(time.Duration) error { return nil }

// ReaperMain fails: the reaper needs Linux.
func ReaperMain(in io.Reader, session string, grace time.Duration) int { return 1 }
