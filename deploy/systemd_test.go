package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// unit is a parsed systemd unit file: section → key → values in order
// (a key may repeat).
type unit map[string]map[string][]string

// parseUnit reads a unit file's [Section] headers and Key=Value lines,
// joining lines continued with a backslash; it fails on anything else.
func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section, pending := "", ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if pending == "" && (line == "" || line[0] == '#' || line[0] == ';') {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			pending += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		line, pending = pending+line, ""
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" || strings.TrimSpace(k) == "" {
			t.Fatalf("%s:%d: want [Section] or Key=Value, got %q", path, n, line)
		}
		k = strings.TrimSpace(k)
		u[section][k] = append(u[section][k], strings.TrimSpace(v))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// get returns a key's last value (systemd's rule for single-valued keys).
func (u unit) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// env returns the value of name in the unit's Environment= lines.
func (u unit) env(name string) string {
	var val string
	for _, line := range u["Service"]["Environment"] {
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				val = v
			}
		}
	}
	return val
}

func duration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

// TestUnits_Parse checks what the units promise: both restart on
// failure, stop with SIGTERM in time, read an environment file and raise
// the file limit; the agent keeps its state in a StateDirectory; the
// executor's stop timeout covers its shutdown grace and does not signal
// the tasks directly.
func TestUnits_Parse(t *testing.T) {
	cases := []struct {
		file, command string
		minStop       time.Duration
	}{
		{"ax-agent.service", "agent", 20 * time.Second},
		{"ax-executor.service", "executor", 0},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			u := parseUnit(t, filepath.Join("systemd", c.file))
			for _, s := range []string{"Unit", "Service", "Install"} {
				if u[s] == nil {
					t.Fatalf("no [%s] section", s)
				}
			}
			for key, want := range map[string]string{
				"Restart": "on-failure", "KillSignal": "SIGTERM", "KillMode": "mixed",
			} {
				if got := u.get("Service", key); got != want {
					t.Errorf("%s: got %q, want %q", key, got, want)
				}
			}
			if fields := strings.Fields(u.get("Service", "ExecStart")); len(fields) < 2 || fields[0] != "/usr/local/bin/ax" || fields[1] != c.command {
				t.Errorf("ExecStart: got %q, want /usr/local/bin/ax %s ...", u.get("Service", "ExecStart"), c.command)
			}
			if u.get("Service", "EnvironmentFile") == "" || u.get("Service", "LimitNOFILE") == "" {
				t.Errorf("want EnvironmentFile and LimitNOFILE")
			}
			stop := duration(t, u.get("Service", "TimeoutStopSec"))
			minStop := c.minStop
			if c.command == "executor" {
				grace := duration(t, u.env("AX_SHUTDOWN_GRACE"))
				if !strings.Contains(u.get("Service", "ExecStart"), "-shutdown-grace ${AX_SHUTDOWN_GRACE}") {
					t.Errorf("ExecStart does not pass AX_SHUTDOWN_GRACE")
				}
				minStop = grace + 10*time.Second
			}
			if stop < minStop {
				t.Errorf("TimeoutStopSec %s: want at least %s", stop, minStop)
			}
			if c.command == "agent" {
				if u.get("Service", "StateDirectory") != "ax" || !strings.Contains(u.get("Service", "ExecStart"), "-data %S/ax") {
					t.Errorf("want StateDirectory=ax and -data %%S/ax")
				}
				// The settings come from /etc/ax/agent.hcl (the sample
				// ax-agent.hcl), handed over as a credential.
				if !slices.Contains(u["Service"]["LoadCredential"], "agent.hcl:/etc/ax/agent.hcl") || !strings.Contains(u.get("Service", "ExecStart"), "-config %d/agent.hcl") {
					t.Errorf("want LoadCredential=agent.hcl:/etc/ax/agent.hcl and -config %%d/agent.hcl")
				}
			}
		})
	}
}

// TestUnits_Verify runs systemd-analyze verify on the units, with the
// binary path pointed at an executable that exists here.
func TestUnits_Verify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not found")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"ax-agent.service", "ax-executor.service"} {
		b, err := os.ReadFile(filepath.Join("systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/ax", self)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cmd := exec.Command(sa, append([]string{"verify", "--man=no"}, paths...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
