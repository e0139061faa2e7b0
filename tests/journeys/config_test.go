package journeys

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// agentEnv is the test's environment without the variables that would
// override the config file's tokens.
func agentEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AX_TOKEN=") && !strings.HasPrefix(kv, "AX_EXECUTOR_TOKEN=") {
			env = append(env, kv)
		}
	}
	return env
}

// freeAddrs returns an HTTP and a Raft address for one agent.
func freeAddrs(t *testing.T) (httpAddr, raftAddr string) {
	t.Helper()
	var addrs [2]string
	for i := range addrs {
		a, err := localcluster.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = a
	}
	return addrs[0], addrs[1]
}

// TestConfig_FileAndFlag starts ax agent -config FILE with one flag
// overriding the file, run from another directory, and checks that the
// file's settings (addresses, relative data and token paths, no console,
// debug logs) and the flag's took effect.
func TestConfig_FileAndFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	httpAddr, raftAddr := freeAddrs(t)
	dir := t.TempDir()
	const token = "config-test-token"
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "agent.hcl")
	src := fmt.Sprintf(`# the test's agent
node       = "from-file"
data       = "state"  # relative: next to this file
http       = %q
raft       = %q
token_file = "token"
ui         = false
executor   = false
log_level  = "debug"
`, httpAddr, raftAddr)
	if err := os.WriteFile(cfgPath, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "agent.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(axBinary, "agent", "-config", cfgPath, "-node", "from-flag")
	cmd.Dir = t.TempDir() // relative paths must not follow the working directory
	cmd.Env = agentEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("agent log:\n%s", b)
		}
	})

	ctx := ctxT(t, 60*time.Second)
	c := client.New(client.Config{Addrs: []string{httpAddr}, Token: token, RetryFor: time.Second})
	var st *model.ClusterStatus
	testkit.Eventually(t, 30*time.Second, func() error {
		st, err = c.Cluster(ctx)
		if err != nil {
			return err
		}
		if st.Leader == "" {
			return errors.New("no leader")
		}
		// The node records its HTTP address in its first entries.
		if len(st.Nodes) == 1 && st.Nodes[0].HTTPAddr == "" {
			return errors.New("the node has not recorded its HTTP address yet")
		}
		return nil
	})
	// The flag wins over the file's node; the addresses are the file's.
	if len(st.Nodes) != 1 || st.Nodes[0].ID != "from-flag" || st.Nodes[0].HTTPAddr != httpAddr || st.Nodes[0].RaftAddr != raftAddr || st.Leader != "from-flag" {
		t.Errorf("cluster: got %+v, want one node from-flag at %s / %s", st, httpAddr, raftAddr)
	}
	// The data directory is the file's, resolved next to it.
	if _, err := os.Stat(filepath.Join(dir, "state", "fsm.db")); err != nil {
		t.Errorf("data directory not next to the config file: %v", err)
	}
	// The token file (relative too) protects the API; the console is off.
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/v1/tasks", "", http.StatusUnauthorized},
		{"/v1/tasks", token, http.StatusOK},
		{"/ui/", token, http.StatusNotFound},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s (token %t): got %d, want %d", c.path, c.token != "", resp.StatusCode, c.want)
		}
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "[DEBUG]") {
		t.Errorf("log_level = \"debug\" logged no debug line")
	}
}

// TestConfig_Refused checks that a mistake in the file stops the agent
// before it starts, exiting non-zero with the file, line and key.
func TestConfig_Refused(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	cases := []struct {
		name, src, want string
	}{
		{"typo", "node = \"n1\"\n\ndta = \"/var/lib/ax\"\n", `:3:1: dta: unknown key; did you mean "data"?`},
		{"bad duration", "node = \"n1\"\nlease = \"10\"\n", `:2:9: lease: "10" is not a duration`},
		{"wrong type", "ui = \"no\"\n", `:1:6: ui: wants a bool`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "agent.hcl")
			if err := os.WriteFile(path, []byte(c.src), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, axBinary, "agent", "-config", path, "-data", filepath.Join(dir, "data"),
				"-http", "127.0.0.1:0", "-raft", "127.0.0.1:0")
			cmd.Env = agentEnv()
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("agent: got %v, want a non-zero exit:\n%s", err, out)
			}
			if !strings.Contains(string(out), path+c.want) {
				t.Errorf("output does not say %q:\n%s", path+c.want, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
				t.Errorf("the refused agent created its data directory (stat: %v)", err)
			}
		})
	}
}
