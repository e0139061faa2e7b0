package testkit

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// firstPause and maxPause bound the pause between two tries of a
// condition: the first tries follow each other within a millisecond or
// two, then the pause doubles up to maxPause.
const (
	firstPause = time.Millisecond
	maxPause   = 20 * time.Millisecond
)

// nextPause is the pause after p.
func nextPause(p time.Duration) time.Duration { return min(2*p, maxPause) }

// Poll calls f until it returns nil and returns nil, or, once d has
// passed, returns f's last error wrapped with d. f is called at least
// once, and once more at or after the deadline.
func Poll(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	pause := firstPause
	for {
		err := f()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("condition not met within %s: %w", d, err)
		}
		time.Sleep(min(pause, left))
		pause = nextPause(pause)
	}
}

// Eventually calls f until it returns nil, and fails the test with f's
// last error if d passes first. Like t.Fatal, it must be called from the
// goroutine running the test.
func Eventually(t testing.TB, d time.Duration, f func() error) {
	t.Helper()
	if err := Poll(d, f); err != nil {
		t.Fatal(err)
	}
}

// errNotYet is what Until's condition reports while it does not hold.
var errNotYet = errors.New("not yet")

// Until calls cond until it returns true, and fails the test, naming
// what it waited for, if d passes first. Like t.Fatal, it must be called
// from the goroutine running the test.
func Until(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	err := Poll(d, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
}
