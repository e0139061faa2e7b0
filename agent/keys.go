package agent

import (
	"github.com/ax-scheduler/ax/access"
	"github.com/ax-scheduler/ax/clock"
	"github.com/ax-scheduler/ax/tasks"
)

// EncryptKeySize is the size of the key -encrypt-key-file holds: AES-256.
const EncryptKeySize = access.EncryptKeySize

// ReadEncryptKey reads a key file written by ax keygen (see
// access.ReadEncryptKey).
func ReadEncryptKey(path string) (key []byte, warn string, err error) {
	return access.ReadEncryptKey(path)
}

// NewEncryptKey returns a fresh key as ax keygen prints it.
func NewEncryptKey() string { return access.NewEncryptKey() }

// MonotonicClock is a clock whose steps the time base can see (see
// clock.MonotonicClock): the -tags faults binary's offset clock is one.
type MonotonicClock = clock.MonotonicClock

// DefaultMetricsMaxTasks is how many distinct task names get their own
// task label on the per-task histograms by default (MetricsMaxTasks).
const DefaultMetricsMaxTasks = tasks.DefaultMetricsMaxTasks
