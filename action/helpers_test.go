package action

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a live writer that tests can read while Run writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// waitFor polls cond until it holds, failing the test after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitContains waits until the live buffer contains s.
func waitContains(t *testing.T, b *syncBuffer, s string) {
	t.Helper()
	waitFor(t, "live output "+s, func() bool { return strings.Contains(b.String(), s) })
}

// checkFailure checks the common fields of a failed Result.
func checkFailure(t *testing.T, got Result, wantRetryable bool, wantErr string) {
	t.Helper()
	if got.Success {
		t.Fatalf("Success = true, want false (result %+v)", got)
	}
	if got.Retryable != wantRetryable {
		t.Errorf("Retryable = %v, want %v (error %q)", got.Retryable, wantRetryable, got.Error)
	}
	if !strings.Contains(got.Error, wantErr) {
		t.Errorf("Error = %q, want it to contain %q", got.Error, wantErr)
	}
}
