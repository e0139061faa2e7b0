package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/benchkit"
)

// Help answers at every level; an unknown scenario is one line with a
// hint.
func TestRun_Help(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "submit"}, {"help", "soak"}} {
		if err := run(ctx, args); err != nil {
			t.Errorf("ax-bench %s: %v", strings.Join(args, " "), err)
		}
	}
	if err := run(ctx, nil); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("ax-bench without a scenario: %v, want flag.ErrHelp (usage, exit 2)", err)
	}
	for _, args := range [][]string{{"nope"}, {"help", "nope"}} {
		err := run(ctx, args)
		if err == nil || !strings.Contains(err.Error(), `unknown scenario "nope"`) || !strings.Contains(err.Error(), "ax-bench help") {
			t.Errorf("ax-bench %s: %v, want one line naming it with a hint", strings.Join(args, " "), err)
		}
	}
}

// Every scenario answers -h with its usage and flags, shows examples of
// itself, and has the common flags.
func TestScenarios_Usage(t *testing.T) {
	for name, cmd := range commands() {
		t.Run(name, func(t *testing.T) {
			if err := cmd.Run(context.Background(), []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("-h: %v, want flag.ErrHelp", err)
			}
			u := cmd.Usage()
			if !strings.Contains(u, "Usage: ax-bench "+name+" ") {
				t.Errorf("usage does not start with its synopsis:\n%s", u)
			}
			_, examples, ok := strings.Cut(u, "Examples:\n")
			if !ok {
				t.Fatalf("usage without examples:\n%s", u)
			}
			for _, line := range strings.Split(strings.TrimSpace(examples), "\n") {
				if !strings.HasPrefix(strings.TrimSpace(line), "ax-bench "+name+" ") {
					t.Errorf("example %q is not of ax-bench %s", line, name)
				}
			}
			if !strings.Contains(usage, "\t"+name+" ") {
				t.Errorf("ax-bench's usage does not list %s", name)
			}
		})
	}
	bf := newBenchFlags("x", "Usage: x\n")
	for _, f := range []string{"addr", "token", "token-file", "ca-cert", "client-cert", "client-key", "nodes", "tls", "ax"} {
		if bf.fs.Lookup(f) == nil {
			t.Errorf("common flag -%s missing", f)
		}
	}
	if got := bf.fs.Lookup("addr").DefValue; got != "" {
		t.Errorf("-addr defaults to %q, want none (a temporary cluster)", got)
	}
}

// Bad flags are refused, naming the flag, before any cluster is started
// or ax is built.
func TestScenarios_BadFlags(t *testing.T) {
	t.Setenv("AX_TOKEN", "")
	t.Setenv("AX_CACERT", "")
	missing := filepath.Join(t.TempDir(), "no-such-ax")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tasks", "-clients", "1,0"}, "-clients"},
		{[]string{"tasks", "-n", "0"}, "-n"},
		{[]string{"tasks", "-nodes", "0"}, "-nodes"},
		{[]string{"tasks", "extra"}, "unexpected arguments"},
		{[]string{"tasks", "-tls", "-addr", "127.0.0.1:1"}, "-tls"},
		{[]string{"tasks", "-ax", missing}, "-ax"},
		{[]string{"tasks", "-token-file", os.DevNull}, "is empty"},
		{[]string{"submit", "-batch", "0"}, "-batch"},
		{[]string{"fire", "-rates", "fast"}, "-rates"},
		{[]string{"fire", "-seconds", "0"}, "-seconds"},
		{[]string{"run", "-kinds", "gpu"}, "-kinds"},
		{[]string{"run", "-executors", "0"}, "-executors"},
		{[]string{"failover", "-nodes", "2"}, "at least 3"},
		{[]string{"failover", "-pending", "0"}, "-pending"},
		{[]string{"failover", "-dispatch", "-how", "reboot"}, "-how"},
		{[]string{"failover", "-dispatch", "-tries", "0"}, "-tries"},
		{[]string{"soak", "-minutes", "0"}, "-minutes"},
		{[]string{"soak", "-rate", "-1"}, "-rate"},
		{[]string{"soak", "-pids", "1,2,3"}, "-pids"},
		{[]string{"console", "-tasks", "2"}, "-tasks"},
		{[]string{"scale", "-target", "0"}, "-target"},
		{[]string{"scale", "-step", "0"}, "-step"},
		{[]string{"scale", "-executors", "-1"}, "-executors"},
		{[]string{"scale", "-delay", "10m"}, "-delay"},
		{[]string{"scale", "-nodes", "1"}, "at least 3 nodes"},
		{[]string{"scale", "-addr", "127.0.0.1:1"}, "temporary cluster"},
		{[]string{"ceiling"}, "give -fires, -pollers or -tasks"},
		{[]string{"ceiling", "-fires", "100,0"}, "-fires"},
		{[]string{"ceiling", "-pollers", "10", "-addr", "127.0.0.1:1"}, "temporary cluster"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := run(context.Background(), tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestParseCounts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // fmt of the counts, or "error"
	}{
		{"1,8,64", "[1 8 64]"},
		{" 4 , 16", "[4 16]"},
		{"1000", "[1000]"},
		{"0", "error"},
		{"1,,2", "error"},
		{"-3", "error"},
		{"ten", "error"},
	} {
		got, err := benchkit.ParseCounts("-clients", tc.in)
		if tc.want == "error" {
			if err == nil || !strings.Contains(err.Error(), "-clients") {
				t.Errorf("benchkit.ParseCounts(%q) = %v, %v; want an error naming -clients", tc.in, got, err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("benchkit.ParseCounts(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	r := benchkit.Summarize(lat, 2*time.Second)
	if r.N != 100 || r.P50 != 51*time.Millisecond || r.P99 != 100*time.Millisecond || r.Max != 100*time.Millisecond || r.Rate() != 50 {
		t.Fatalf("got %+v (rate %v)", r, r.Rate())
	}
	if r := benchkit.Summarize(nil, time.Second); r.N != 0 || r.Rate() != 0 {
		t.Fatalf("empty run: got %+v", r)
	}
	p50, p99, mx := benchkit.Percentiles([]time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond})
	if p50 != 2*time.Millisecond || p99 != 3*time.Millisecond || mx != 3*time.Millisecond {
		t.Fatalf("percentiles: %s %s %s", p50, p99, mx)
	}
}

// The run stops at the first error, and when the context ends.
func TestRunLoad_Stops(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	if _, err := benchkit.RunLoad(context.Background(), 1, 10, func() error { calls++; return boom }); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("got %v after %d calls, want boom after 1", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := benchkit.RunLoad(ctx, 2, 10, func() error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v, want context.Canceled", err)
	}
}

func TestMetricValue(t *testing.T) {
	text := []byte("# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 42\nax_fired_total{task=\"a\"} 7\n")
	for _, tc := range []struct {
		name string
		want int64
	}{{"go_goroutines", 42}, {"ax_fired_total", -1}, {"missing", -1}} {
		if got := metricValue(text, tc.name); got != tc.want {
			t.Errorf("metricValue(%s) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// With -addr the soak samples the agents given by -pids and -data-dirs,
// one each per address.
func TestSoakNodes(t *testing.T) {
	tgt := &target{addrs: []string{"a:1", "b:2"}}
	for _, tc := range []struct {
		pids, dirs, wantErr string
	}{
		{"", "", ""},
		{"10,20", "/d1,/d2", ""},
		{"10", "", "1 process ids for 2 addresses"},
		{"", "/d1,/d2,/d3", "3 data directories for 2 addresses"},
	} {
		nodes, err := soakNodes(tgt, tc.pids, tc.dirs)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("soakNodes(%q, %q): %v, want %q", tc.pids, tc.dirs, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(nodes) != 2 || nodes[1].addr != "b:2" {
			t.Fatalf("soakNodes(%q, %q) = %+v, %v", tc.pids, tc.dirs, nodes, err)
		}
		if tc.pids != "" && (nodes[1].pid() != 20 || nodes[1].dataDir != "/d2") {
			t.Errorf("second node: pid %d, dir %q; want 20, /d2", nodes[1].pid(), nodes[1].dataDir)
		}
	}
}

// -ax takes a path, relative or not, or a command name looked up in
// $PATH, and gives the agents an absolute path.
func TestAxBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "ax-old")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "not-exec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("PATH", dir)
	for _, tc := range []struct {
		flag, want, wantErr string
	}{
		{flag: exe, want: exe},
		{flag: "./ax-old", want: exe},
		{flag: "ax-old", want: exe},
		{flag: "./not-exec", wantErr: "-ax"},
		{flag: "./missing", wantErr: "-ax"},
		{flag: "missing", wantErr: "-ax"},
	} {
		got, err := axBinary(tc.flag, t.TempDir())
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("axBinary(%q) = %q, %v; want an error naming %s", tc.flag, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("axBinary(%q) = %q, %v; want %q", tc.flag, got, err, tc.want)
		}
	}
}
