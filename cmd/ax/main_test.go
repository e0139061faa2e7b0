package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestRun_HelpAndUnknown: help at every level answers without an error;
// an unknown command is one line with a hint.
func TestRun_HelpAndUnknown(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "task"}, {"help", "agent"}, {"--version"}, {"version"}} {
		if err := run(ctx, args); err != nil {
			t.Errorf("ax %s: %v", strings.Join(args, " "), err)
		}
	}
	for name := range groups {
		for _, h := range []string{"-h", "--help", "help"} {
			if err := run(ctx, []string{name, h}); err != nil {
				t.Errorf("ax %s %s: %v", name, h, err)
			}
		}
	}
	for _, args := range [][]string{{"foo"}, {"help", "foo"}} {
		err := run(ctx, args)
		if err == nil || !strings.Contains(err.Error(), `unknown command "foo"`) || !strings.Contains(err.Error(), "ax help") {
			t.Errorf("ax %s: %v, want one line naming it with a hint", strings.Join(args, " "), err)
		}
	}
	// The benchmarks moved out of ax: "ax bench" points at ax-bench.
	for _, args := range [][]string{{"bench", "tasks"}, {"help", "bench"}} {
		err := run(ctx, args)
		if err == nil || !strings.Contains(err.Error(), `unknown command "bench"`) || !strings.Contains(err.Error(), "go run ./cmd/ax-bench") || strings.Contains(err.Error(), "\n") {
			t.Errorf("ax %s: %v, want one line pointing at ax-bench", strings.Join(args, " "), err)
		}
	}
}

func TestVersionLine(t *testing.T) {
	v := versionLine()
	if !strings.HasPrefix(v, "ax ") || !strings.Contains(v, runtime.Version()) || !strings.Contains(v, runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("version line %q", v)
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		sig  os.Signal
		want int
	}{
		{nil, nil, 0},
		{errors.New("boom"), nil, 1},
		{flag.ErrHelp, nil, 2},
		{context.Canceled, os.Interrupt, 130},
		{nil, os.Interrupt, 130},
		{nil, syscall.SIGTERM, 0},
		{errors.New("boom"), syscall.SIGTERM, 1},
	} {
		if got := exitCode(tc.err, tc.sig); got != tc.want {
			t.Errorf("exitCode(%v, %v) = %d, want %d", tc.err, tc.sig, got, tc.want)
		}
	}
}
