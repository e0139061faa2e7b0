package action

import (
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
)

// waitContains waits until the live buffer contains s.
func waitContains(t *testing.T, b *testkit.Buffer, s string) {
	t.Helper()
	testkit.Until(t, 10*time.Second, "live output "+s, func() bool { return strings.Contains(b.String(), s) })
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
