//go:build !linux

package proc

import (
	"errors"
	"io"
	"time"
)

// ReaperMarkEnv is the environment variable that marks every process of a
// shell attempt run with a Reaper.
const ReaperMarkEnv = "AX_ATTEMPT_MARK"

// Reaper stops the processes of a killed executor's attempts; it needs
// Linux's /proc, elsewhere Start fails.
type Reaper struct{}

// StartReaper fails: the reaper needs Linux.
func StartReaper(argv []string, grace time.Duration, stderr io.Writer) (*Reaper, error) {
	return nil, errors.New("action/proc: reaper: the reaper needs Linux")
}

// Begin does nothing.
func (r *Reaper) Begin() (string, uint64) { return "", 0 }

// Started does nothing.
func (r *Reaper) Started(uint64, int) {}

// End does nothing.
func (r *Reaper) End(uint64) {}

// Close does nothing.
func (r *Reaper) Close(time.Duration) error { return nil }

// ReaperMain fails: the reaper needs Linux.
func ReaperMain(in io.Reader, session string, grace time.Duration) int { return 1 }
