package security

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model"
)

// TestPprof_ListenerRulesAndAdminOnly: -pprof follows the rule of every
// listener (a non-loopback address without TLS is refused unless
// -insecure) and answers only the admin role or the management token; on
// a TLS node it speaks TLS. It used to listen anywhere, open to all.
func TestPprof_ListenerRulesAndAdminOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	pprofAddr, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(pprofAddr)
	httpAddr, _ := localcluster.FreePort()
	raftAddr, _ := localcluster.FreePort()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, axBinary, "agent", "-data", t.TempDir(), "-http", httpAddr, "-raft", raftAddr,
		"-executor", "false", "-pprof", "0.0.0.0:"+port).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "0.0.0.0:"+port+" (-pprof)") || !strings.Contains(string(out), "-insecure") {
		t.Fatalf("-pprof on 0.0.0.0 without TLS: err %v, output:\n%s\nwant a refusal naming -pprof and -insecure", err, out)
	}

	const mgmt = "pprof-test-management-token"
	c := startCluster(t, 1, withToken(mgmt), withArgs("-pprof", pprofAddr))
	cctx := ctxT(t, 60*time.Second)
	if _, err := c.Leader(cctx, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	reader := createToken(t, cctx, c.Client(), model.ACLTokenRequest{Name: "viewer", Role: model.RoleReader})
	get := func(scheme string, tlsCfg *tls.Config, path, tok string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(cctx, http.MethodGet, scheme+"://"+pprofAddr+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, path, tok string
		want            int
	}{
		{"no token", "/debug/pprof/", "", http.StatusUnauthorized},
		{"a reader token", "/debug/pprof/", reader, http.StatusForbidden},
		{"the management token", "/debug/pprof/", mgmt, http.StatusOK},
		{"the management token, heap", "/debug/pprof/heap", mgmt, http.StatusOK},
		{"the command line (it may hold -token)", "/debug/pprof/cmdline", mgmt, http.StatusNotFound},
	} {
		if code, body := get("http", nil, tc.path, tc.tok); code != tc.want {
			t.Errorf("%s: GET %s: HTTP %d, want %d\n%.300s", tc.name, tc.path, code, tc.want, body)
		}
	}
	c.Close()

	// A TLS node serves its profiles over TLS, to its admins (here: the
	// CA's client certificates, as the node has no tokens).
	tc := startCluster(t, 1, withTLS(t.TempDir()), withArgs("-pprof", pprofAddr))
	if _, err := tc.Leader(cctx, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	if code, body := get("https", tc.TLS(), "/debug/pprof/", ""); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof over TLS with a client certificate: HTTP %d\n%.300s", code, body)
	}
	if code, _ := get("http", nil, "/debug/pprof/", ""); code == http.StatusOK {
		t.Error("pprof of a TLS node answered plain http")
	}
}
