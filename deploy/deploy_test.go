package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// promtool returns promtool's path, skipping the test when it is missing
// unless AX_REQUIRE_PROMTOOL is set (CI sets it).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("AX_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("promtool not found and AX_REQUIRE_PROMTOOL is set: %v", err)
		}
		t.Skip("promtool not found (Debian: apt-get install prometheus)")
	}
	return p
}

func run(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// TestRules checks the rules and runs their unit tests with promtool.
func TestRules(t *testing.T) {
	p := promtool(t)
	run(t, "prometheus", p, "check", "rules", "ax-rules.yml")
	run(t, "prometheus", p, "test", "rules", "ax-rules_test.yml")
}

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestDashboard parses the dashboard, checks that its panels use the
// Prometheus data source variable and that every expression is valid
// PromQL over ax metrics (promtool checks them as recording rules). That
// the metrics exist is checked against a real agent by agent's
// TestAgent_OpsMetrics.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("grafana/ax.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/ax.json: %v", err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard uid %q title %q with %d panels", d.UID, d.Title, len(d.Panels))
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" || vars["job"] != "query" {
		t.Errorf("template variables %v, want datasource (a data source) and job (a query)", vars)
	}
	metric := regexp.MustCompile(`\bax_[a-z0-9_]+`)
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		for i, tg := range p.Targets {
			if !metric.MatchString(tg.Expr) {
				t.Errorf("panel %q query %d uses no ax metric: %q", p.Title, i, tg.Expr)
			}
			expr := strings.ReplaceAll(tg.Expr, "$job", "ax")
			fmt.Fprintf(&rules, "      - record: dashboard:panel%d_%d\n        expr: %q\n", p.ID, i, expr)
		}
	}
	p := promtool(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard-rules.yml"), []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, dir, p, "check", "rules", "dashboard-rules.yml")
}
