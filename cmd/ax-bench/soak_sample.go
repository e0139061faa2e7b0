package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
)

// soakNode is one agent the soak samples.
type soakNode struct {
	id, addr string
	pid      func() int // 0: unknown
	dataDir  string     // "": unknown
	cl       *client.Client
}

// soakNodes lists the temporary cluster's agents, or the -addr ones
// with the process ids and data directories given for them.
func soakNodes(t *target, pids, dataDirs string) ([]soakNode, error) {
	var out []soakNode
	if t.local != nil {
		for _, n := range t.local.Nodes {
			out = append(out, soakNode{id: n.ID, addr: n.HTTPAddr, pid: n.PID, dataDir: n.DataDir})
		}
	} else {
		addrs := t.addrs
		list := func(s, what string) ([]string, error) {
			if s == "" {
				return make([]string, len(addrs)), nil
			}
			l := strings.Split(s, ",")
			if len(l) != len(addrs) {
				return nil, fmt.Errorf("soak: %d %s for %d addresses", len(l), what, len(addrs))
			}
			return l, nil
		}
		pl, err := list(pids, "process ids")
		if err != nil {
			return nil, err
		}
		dl, err := list(dataDirs, "data directories")
		if err != nil {
			return nil, err
		}
		for i, a := range addrs {
			pid, _ := strconv.Atoi(pl[i])
			out = append(out, soakNode{id: a, addr: a, pid: func() int { return pid }, dataDir: dl[i]})
		}
	}
	for i := range out {
		out[i].cl = t.nodeClient(out[i].addr, 2*time.Second)
	}
	return out, nil
}

// soakSample is one node's figures at one moment; -1 is unknown.
type soakSample struct {
	at              time.Duration
	node, role      string
	rssKB, anonKB   int64 // resident memory, and of it the anonymous part (heap, stacks)
	goroutines, fds int64
	disk            int64 // bytes the data directory takes on disk
	state           int64 // of which the state machine's file (fsm.db)
	pending, active int
}

// sampleLoop samples every node each period until total has passed,
// printing a table row per node and a line of load counts each time.
func (ld *soakLoad) sampleLoop(ctx context.Context, nodes []soakNode, start time.Time, total, every time.Duration) [][]soakSample {
	fmt.Printf("%7s %-5s %-9s %7s %8s %10s %5s %9s %8s %8s %7s\n", "time", "node", "role", "rss MB", "anon MB", "goroutines", "fds", "state MB", "disk MB", "pending", "active")
	var all [][]soakSample
	for next := every; ; next += every {
		select {
		case <-ctx.Done():
			return all
		case <-time.After(time.Until(start.Add(next))):
		}
		at := time.Since(start).Round(time.Second)
		var row []soakSample
		for _, n := range nodes {
			s := sampleNode(ctx, n, at)
			row = append(row, s)
			fmt.Printf("%7s %-5s %-9s %7s %8s %10s %5s %9s %8s %8d %7d\n", at, s.node, s.role, benchkit.MB(s.rssKB<<10), benchkit.MB(s.anonKB<<10), num(s.goroutines), num(s.fds), benchkit.MB(s.state), benchkit.MB(s.disk), s.pending, s.active)
		}
		errs := ""
		if p := ld.lastErr.Load(); p != nil {
			errs = " (last: " + *p + ")"
		}
		fmt.Printf("        load: %d near, %d far, %d triggers submitted; %d sdk jobs ran; %d errors%s\n",
			ld.nearN.Load(), ld.farN.Load(), ld.triggered.Load(), ld.ran.Load(), ld.errs.Load(), errs)
		fmt.Printf("        %s; %s\n", ld.leaders.summary(), machineLoad())
		all = append(all, row)
		if next >= total {
			return all
		}
	}
}

// sampleNode reads a node's memory and descriptors from /proc, its
// goroutines from /metrics, its role and counts from /healthz and its
// data directory's size.
func sampleNode(ctx context.Context, n soakNode, at time.Duration) soakSample {
	s := soakSample{at: at, node: n.id, role: "?", rssKB: -1, anonKB: -1, goroutines: -1, fds: -1, disk: -1, state: -1}
	if pid := n.pid(); pid > 0 {
		s.rssKB, s.anonKB = benchkit.ProcStatus(pid, "VmRSS:"), benchkit.ProcStatus(pid, "RssAnon:")
		if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
			s.fds = int64(len(ents))
		}
	}
	if h, err := n.cl.Health(ctx); err == nil {
		s.node, s.role, s.pending, s.active = h.Node, h.Role, h.Pending, h.Active
	}
	var raw []byte
	if n.cl.Do(ctx, client.Request{Method: http.MethodGet, Path: "/metrics"}, &raw) == nil {
		s.goroutines = metricValue(raw, "go_goroutines")
	}
	if n.dataDir != "" {
		s.disk = benchkit.DiskUse(n.dataDir)
		s.state = benchkit.DiskUse(filepath.Join(n.dataDir, "fsm.db"))
	}
	return s
}

// metricValue returns an unlabelled metric's value from Prometheus text,
// -1 if absent.
func metricValue(text []byte, name string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				return int64(v)
			}
		}
	}
	return -1
}

func num(v int64) string {
	if v < 0 {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

// printSoakSummary compares each node's first sample at or after the
// warm-up with its last.
func printSoakSummary(samples [][]soakSample, warmup time.Duration) {
	var first []soakSample
	for _, row := range samples {
		if row[0].at >= warmup {
			first = row
			break
		}
	}
	if first == nil || len(samples) < 2 {
		fmt.Printf("\nsummary: no two samples after the %s warm-up to compare\n", warmup)
		return
	}
	last := samples[len(samples)-1]
	fmt.Printf("\nsummary: each node's first sample after the %s warm-up (at %s) against its last (at %s)\n", warmup, first[0].at, last[0].at)
	fmt.Printf("%-5s %-11s %10s %10s %8s\n", "node", "measure", "first", "last", "growth")
	for i := range first {
		a, b := first[i], last[i]
		for _, m := range []struct {
			name        string
			first, last int64
			fmt         func(int64) string
		}{
			{"rss MB", a.rssKB << 10, b.rssKB << 10, benchkit.MB},
			{"anon MB", a.anonKB << 10, b.anonKB << 10, benchkit.MB},
			{"goroutines", a.goroutines, b.goroutines, num},
			{"fds", a.fds, b.fds, num},
			{"state MB", a.state, b.state, benchkit.MB},
			{"disk MB", a.disk, b.disk, benchkit.MB},
		} {
			growth := "-"
			if m.first > 0 && m.last >= 0 {
				growth = fmt.Sprintf("%+.1f%%", float64(m.last-m.first)*100/float64(m.first))
			}
			fmt.Printf("%-5s %-11s %10s %10s %8s\n", a.node, m.name, m.fmt(m.first), m.fmt(m.last), growth)
		}
	}
}
