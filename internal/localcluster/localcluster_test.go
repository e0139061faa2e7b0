package localcluster

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestOutside(t *testing.T) {
	cases := []struct{ ephLo, ephHi, lo, hi int }{
		{32768, 60999, 10000, 32768}, // Linux default
		{49152, 65535, 10000, 49152}, // BSD, macOS, Windows
		{1024, 40000, 40001, 65536},  // a low custom range
		{1024, 65535, 1024, 65536},   // everything ephemeral
	}
	for _, tc := range cases {
		if lo, hi := outside(tc.ephLo, tc.ephHi); lo != tc.lo || hi != tc.hi {
			t.Errorf("outside(%d, %d) = [%d, %d), want [%d, %d)", tc.ephLo, tc.ephHi, lo, hi, tc.lo, tc.hi)
		}
	}
}

func TestFreePort_DistinctOutsideEphemeralRange(t *testing.T) {
	lo, hi := portRange()
	seen := map[string]bool{}
	for range 200 {
		addr, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		_, ps, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(ps)
		if p < lo || p >= hi {
			t.Fatalf("%s outside [%d, %d)", addr, lo, hi)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s not bindable: %v", addr, err)
		}
		ln.Close()
	}
}

// TestSourceFiles: what Build stats, so that go test reruns a test that
// runs ax when any of ax's sources changes, covers the Go files of the
// packages ax is built from, the files they embed, go.mod and go.sum, and
// nothing outside the module.
func TestSourceFiles(t *testing.T) {
	files, err := sourceFiles("github.com/ax-scheduler/ax/cmd/ax", nil)
	if err != nil {
		t.Fatal(err)
	}
	root := mustAbs(t, "../..") // the module, from internal/localcluster
	has := map[string]bool{}
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("%s is outside the module at %s", f, root)
		}
		has[filepath.ToSlash(rel)] = true
	}
	for _, want := range []string{"go.mod", "go.sum", "cmd/ax/main.go", "agent/agent.go", "fsm/apply.go", "api/openapi.json", "ui/static/index.html"} {
		if !has[want] {
			t.Errorf("%s missing from %d files", want, len(files))
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
