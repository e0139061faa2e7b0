package failover

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The load tool runs against a token-protected cluster with the token in a
// file: its raw HTTP generator, its Go client and its health probes all
// authenticate, and it prints its figures.
func TestBench_SubmitWithTokenFile(t *testing.T) {
	c := startCluster(t, 1, withToken("s3cret-management-token"))
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-management-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(benchBinary, "submit", "-addr", strings.Join(c.Addrs(), ","), "-token-file", tokenFile,
		"-n", "2000", "-batch", "500", "-clients", "2", "-single-n", "200", "-single-clients", "4").CombinedOutput()
	if err != nil {
		t.Fatalf("bench submit: %v\n%s", err, out)
	}
	for _, row := range []string{"batched 500 x 2 clients", "single x 4 clients", "HTTP only"} {
		if !strings.Contains(string(out), row) {
			t.Fatalf("bench output lacks %q:\n%s", row, out)
		}
	}
}

// The failover bench kills the leader of its own temporary cluster (of
// the -ax binary) with instances pending and reports when the new leader
// holds all of them.
func TestBench_Failover(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	out, err := exec.Command(benchBinary, "failover", "-ax", axBinary, "-pending", "20000", "-batch", "5000").CombinedOutput()
	if err != nil {
		t.Fatalf("bench failover: %v\n%s", err, out)
	}
	for _, row := range []string{"killed (SIGKILL)", "new leader loads its wheel (20000 timers)", "every pending instance in the wheel"} {
		if !strings.Contains(string(out), row) {
			t.Fatalf("bench output lacks %q:\n%s", row, out)
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "loads its wheel") && strings.HasSuffix(strings.TrimSpace(line), " 0s") {
			t.Fatalf("wheel load time not reported: %q", line)
		}
	}
}
