// Package ceiling is ax-bench's ceiling scenario (issue 27 item 5): where
// one Raft group saturates on this machine. Each of its phases runs on a
// temporary cluster and prints a Markdown table: fires/s (delayed
// submissions due in a steady stream, run by in-process SDK workers, at
// rising rates, then one rate held), executors (idle long-polling
// workers, more and more, with a paced probe) and tasks (cron and
// interval tasks, more and more, with reads and a leadership transfer).
// Every row has the CPU, memory and descriptors of the processes, read
// from /proc, so that the limiting resource can be named.
package ceiling

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/internal/benchkit/scale"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// Options are the scenario's flags; a phase with an empty list is skipped.
type Options struct {
	Fires    string        // fires/s per step, comma-separated
	Step     time.Duration // each fire step's length
	Hold     time.Duration // then the last passing rate (or HoldRate) held this long
	HoldRate int
	Lead     time.Duration // fires are submitted this far ahead of their due time
	MaxLate  time.Duration // a step passes while the p99 of due -> handler start is within this
	Workers  int           // SDK workers running the fires
	Capacity int           // each one's attempts at once

	Pollers string // executors per step, comma-separated
	Tasks   string // cron and interval tasks per step, comma-separated

	Log io.Writer
}

// Register adds the scenario's flags to fs.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.Fires, "fires", "", "fires/s per step, comma-separated (the fires phase)")
	fs.DurationVar(&o.Step, "step", time.Minute, "length of each fires/s step")
	fs.DurationVar(&o.Hold, "hold", 0, "after the steps, hold the highest passing rate (or -hold-rate) this long, a row a minute (0: no hold)")
	fs.IntVar(&o.HoldRate, "hold-rate", 0, "the rate to hold (0: the highest step that passed)")
	fs.DurationVar(&o.Lead, "lead", 5*time.Second, "how far ahead of its due time each fire is submitted")
	fs.DurationVar(&o.MaxLate, "max-late", time.Second, "a step passes while p99 of due -> handler start is within this and nothing backs up")
	fs.IntVar(&o.Workers, "workers", 4, "SDK workers in this process running the fires")
	fs.IntVar(&o.Capacity, "capacity", 256, "attempts per worker at once")
	fs.StringVar(&o.Pollers, "pollers", "", "idle long-polling executors per step, comma-separated (the executors phase)")
	fs.StringVar(&o.Tasks, "tasks", "", "cron and interval tasks per step, comma-separated, cumulative (the tasks phase)")
}

// Check refuses options that cannot run, naming the flag, before a
// cluster is started; remote is true with -addr.
func (o Options) Check(remote bool) error {
	if o.Fires == "" && o.Pollers == "" && o.Tasks == "" {
		return errors.New("ceiling: give -fires, -pollers or -tasks")
	}
	if remote {
		return errors.New("ceiling: needs the temporary cluster (no -addr): it reads its agents' /proc")
	}
	for _, l := range []struct{ name, v string }{{"-fires", o.Fires}, {"-pollers", o.Pollers}, {"-tasks", o.Tasks}} {
		if _, err := benchkit.ParseCounts(l.name, l.v); l.v != "" && err != nil {
			return fmt.Errorf("ceiling: %w", err)
		}
	}
	switch {
	case o.Step <= 0:
		return errors.New("ceiling: -step must be positive")
	case o.Lead < 0:
		return errors.New("ceiling: -lead must not be negative")
	case o.MaxLate <= 0:
		return errors.New("ceiling: -max-late must be positive")
	case o.Workers < 1 || o.Capacity < 1:
		return errors.New("ceiling: -workers and -capacity must be positive")
	case o.Hold < 0 || o.HoldRate < 0:
		return errors.New("ceiling: -hold and -hold-rate must not be negative")
	}
	return nil
}

// Run runs the phases whose lists are set, on c, and prints their tables
// to w.
func Run(ctx context.Context, c scale.Cluster, o Options, w io.Writer) error {
	if err := o.Check(c.Local == nil); err != nil {
		return err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	for _, p := range []struct {
		list, name string
		run        func(counts []int) error
	}{
		{o.Fires, "-fires", func(n []int) error { rows, err := fires(ctx, c, o, n); printFires(w, o, rows); return err }},
		{o.Pollers, "-pollers", func(n []int) error { rows, err := pollers(ctx, c, o, n); printPollers(w, rows); return err }},
		{o.Tasks, "-tasks", func(n []int) error { rows, err := tasks(ctx, c, o, n); printTasks(w, rows); return err }},
	} {
		if p.list == "" {
			continue
		}
		counts, err := benchkit.ParseCounts(p.name, p.list)
		if err != nil {
			return err
		}
		if err := p.run(counts); err != nil {
			return err
		}
	}
	return nil
}

func logf(o Options, format string, args ...any) {
	fmt.Fprintf(o.Log, time.Now().UTC().Format("15:04:05 ")+format+"\n", args...)
}

// Proc is a process's figures over a window: CPU as cores busy, memory,
// descriptors and threads at its end.
type Proc struct {
	Name              string
	Cores             float64
	RSSKB, AnonKB     int64
	FDs, Threads      int
	ticks             int64
	pid               int
	at                time.Time
	DiskBytes, StateB int64
}

// cpuTicks is utime+stime of /proc/PID/stat in clock ticks (100 a
// second), -1 if unknown.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after "pid (comm) "
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return u + k
}

func countFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// window samples the leader, the followers and this process: start it,
// then end answers each one's figures since.
type window struct{ procs []Proc }

func startWindow(c scale.Cluster, leader string) *window {
	w := &window{}
	add := func(name string, pid int) {
		w.procs = append(w.procs, Proc{Name: name, pid: pid, ticks: cpuTicks(pid), at: time.Now()})
	}
	for _, n := range c.Local.Members() {
		name := n.ID
		if n.ID == leader {
			name += "*"
		}
		add(name, n.PID())
	}
	add("ax-bench", os.Getpid())
	return w
}

func (w *window) end(c scale.Cluster) []Proc {
	out := make([]Proc, len(w.procs))
	for i, p := range w.procs {
		t := cpuTicks(p.pid)
		p.Cores = float64(t-p.ticks) / 100 / time.Since(p.at).Seconds()
		p.RSSKB, p.AnonKB = benchkit.ProcStatus(p.pid, "VmRSS:"), benchkit.ProcStatus(p.pid, "RssAnon:")
		p.FDs, p.Threads = countFDs(p.pid), int(benchkit.ProcStatus(p.pid, "Threads:"))
		if i < len(c.Local.Members()) {
			n := c.Local.Members()[i]
			p.DiskBytes, p.StateB = benchkit.DiskUse(n.DataDir), benchkit.DiskUse(n.DataDir+"/fsm.db")
		}
		out[i] = p
	}
	return out
}

// cores formats the CPU column: each process's cores busy, the leader
// marked, and the sum.
func cores(ps []Proc) string {
	var parts []string
	sum := 0.0
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s %.2f", p.Name, p.Cores))
		sum += p.Cores
	}
	return fmt.Sprintf("%s (Σ %.2f)", strings.Join(parts, " / "), sum)
}

// leaderProc is the leader's entry of ps (marked with *).
func leaderProc(ps []Proc) Proc {
	for _, p := range ps {
		if strings.HasSuffix(p.Name, "*") {
			return p
		}
	}
	return Proc{RSSKB: -1, AnonKB: -1}
}

// health asks the leader, trying for up to a minute (an election, or a
// leader starved of CPU, may be under way).
func health(ctx context.Context, c scale.Cluster) (*member.Health, error) {
	var h *member.Health
	err := localcluster.WaitFor(ctx, time.Minute, func() error {
		n, err := c.Local.Leader(ctx, 10*time.Second)
		if err != nil {
			return err
		}
		h, err = client.New(client.Config{Addrs: []string{n.HTTPAddr}, TLS: c.TLS, Token: c.Token, RetryFor: time.Second}).Health(ctx)
		return err
	})
	return h, err
}

// putTask makes an SDK task run by the workers labelled kind.
func putTask(ctx context.Context, cl *client.Client, name, kind string, trig model.Trigger) error {
	_, err := cl.PutTask(ctx, &model.Task{Name: name, Trigger: trig, Action: model.Action{Type: model.ActionSDK, Handler: handler},
		Policy: model.Policy{MaxConcurrency: 1_000_000, ExecutorLabels: map[string]string{"kind": kind}}})
	return err
}

const handler = "noop"

// waitExecutors waits until the leader has heard from n executors.
func waitExecutors(ctx context.Context, c scale.Cluster, n int, within time.Duration) (int, error) {
	seen := 0
	err := localcluster.WaitFor(ctx, within, func() error {
		h, err := health(ctx, c)
		if err != nil {
			return err
		}
		if seen = h.Executors; seen < n {
			return fmt.Errorf("the leader has heard from %d of %d executors", seen, n)
		}
		return nil
	})
	return seen, err
}
