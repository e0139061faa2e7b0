package scale

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// The timers submitted before the kill: due from 100 ms after their
// submission, one every 10 ms, for 20 s.
const (
	timerFirst = 100 * time.Millisecond
	timerStep  = 10 * time.Millisecond
	timerCount = 2000
)

// killLeader kills the leader with SIGKILL and answers how long until a
// survivor leads, until it counts every one of the filled pending
// instances, and until the first timer due after the kill fires.
func killLeader(ctx context.Context, c Cluster, filled int) (Failover, error) {
	f := Failover{Pending: filled}
	old, err := leaderHealth(ctx, c)
	if err != nil {
		return f, err
	}
	f.Old = old.Node
	timers := make([]model.SubmitRequest, timerCount)
	for i := range timers {
		timers[i] = model.SubmitRequest{Delay: model.Duration(timerFirst + time.Duration(i)*timerStep)}
	}
	sub, err := c.Client.SubmitBatch(ctx, timerTask, timers)
	if err != nil {
		return f, fmt.Errorf("submit the timers: %w", err)
	}
	var victim *localcluster.Node
	probes := map[string]*client.Client{}
	var survivors []string
	for _, n := range c.Local.Members() {
		if n.ID == old.Node {
			victim = n
			continue
		}
		probes[n.HTTPAddr] = c.nodeClient(n.HTTPAddr)
		survivors = append(survivors, n.HTTPAddr)
	}
	if victim == nil {
		return f, fmt.Errorf("leader %s is not a node of the temporary cluster", old.Node)
	}
	kill := time.Now()
	victim.Kill()
	err = localcluster.WaitFor(ctx, 2*time.Minute, func() error {
		for _, a := range survivors {
			h, err := probes[a].Health(ctx)
			if err != nil || h.Role != member.RoleLeader {
				continue
			}
			if f.Elected == 0 {
				f.Elected, f.New = time.Since(kill), h.Node
			}
			if h.Pending < filled {
				return fmt.Errorf("new leader %s counts %d of %d pending", h.Node, h.Pending, filled)
			}
			f.Visible = time.Since(kill)
			return nil
		}
		return errors.New("no new leader yet")
	})
	if err != nil {
		return f, err
	}
	surv := client.New(client.Config{Addrs: survivors, TLS: c.TLS, Token: c.Token})
	f.Fired, err = benchkit.NextFired(ctx, surv, sub.Instances, kill)
	return f, err
}

// restart starts the killed node again and measures it until caught up;
// steadyKB is its VmRSS before the kill.
func restart(ctx context.Context, c Cluster, id string, steadyKB int64, logf func(string, ...any)) (CatchUp, error) {
	cu := CatchUp{Node: id, RefRSSKB: steadyKB, RefWhat: "its VmRSS before the kill"}
	node := c.node(id)
	if node == nil {
		return cu, fmt.Errorf("no node %s", id)
	}
	h, err := leaderHealth(ctx, c)
	if err != nil {
		return cu, err
	}
	cu.Index = h.CommitIndex
	start := time.Now()
	if err := node.Start(); err != nil {
		return cu, err
	}
	peak := samplePeak(node.PID)
	logf("restarting %s: until it has applied index %d", id, cu.Index)
	err = caughtUp(ctx, c.nodeClient(node.HTTPAddr), cu.Index, logf)
	cu.Took = time.Since(start)
	cu.PeakRSSKB, cu.PeakAnonKB, cu.Samples = peak.finish()
	cu.Snapshot = latestSnapshot(filepath.Join(node.DataDir, "raft", "snapshots"))
	if err != nil {
		return cu, fmt.Errorf("%s: %w (log %s)", id, err, node.LogPath)
	}
	return cu, nil
}

// crashMachine kills node id with SIGKILL again, once caught up, and
// makes its restart one after a machine crash: its state file's boot
// marker names another boot (the node then discards the file and
// rebuilds it from its latest snapshot and the log, as after a real
// machine crash) and its data directory's files are evicted from the
// page cache (synced, then POSIX_FADV_DONTNEED: read back from disk, as
// after a reboot; the other nodes' files stay cached). It measures the
// restart until caught up, and checks in the node's log that it rebuilt.
func crashMachine(ctx context.Context, c Cluster, id string, steadyKB int64, logf func(string, ...any)) (CatchUp, error) {
	node := c.node(id)
	if node == nil {
		return CatchUp{Node: id}, fmt.Errorf("no node %s", id)
	}
	node.Kill()
	state := filepath.Join(node.DataDir, "fsm.db")
	if err := os.WriteFile(state+".boot", []byte("ax-bench: a boot before a machine crash"), 0o600); err != nil {
		return CatchUp{Node: id}, err
	}
	evicted, err := evict(node.DataDir)
	if err != nil {
		return CatchUp{Node: id}, fmt.Errorf("evict %s from the page cache: %w", node.DataDir, err)
	}
	logf("%s killed again: a machine crash simulated (another boot id; %s MB of its files evicted from the page cache)", id, benchkit.MB(evicted))
	logged, _ := os.ReadFile(node.LogPath)
	cu, err := restart(ctx, c, id, steadyKB, logf)
	if err != nil {
		return cu, err
	}
	after, _ := os.ReadFile(node.LogPath)
	if !bytes.Contains(after[min(len(logged), len(after)):], []byte("discarding it to rebuild from snapshot and log")) {
		return cu, fmt.Errorf("%s did not rebuild its state after the simulated machine crash (log %s)", id, node.LogPath)
	}
	return cu, nil
}

// evict writes out and drops from the page cache every file under dir,
// and answers their bytes.
func evict(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		n += fi.Size()
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return err
		}
		return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	})
	return n, err
}

// join adds a fresh node and measures it until caught up, against a
// follower's VmRSS at the last step.
func join(ctx context.Context, c Cluster, r *Result, logf func(string, ...any)) (CatchUp, error) {
	cu := CatchUp{RefRSSKB: -1}
	if n := len(r.Steps); n > 0 {
		for _, s := range r.Steps[n-1].Nodes {
			if s.Role != member.RoleLeader && s.ID != r.Failover.Old {
				cu.RefRSSKB, cu.RefWhat = s.RSSKB, fmt.Sprintf("follower %s's VmRSS at the last step", s.ID)
				break
			}
		}
	}
	h, err := leaderHealth(ctx, c)
	if err != nil {
		return cu, err
	}
	cu.Index = h.CommitIndex
	before := len(c.Local.Members())
	// The new node is sampled from the moment it is among the members
	// (AddNode starts its process, then waits until the cluster lists it).
	newNode := func() *localcluster.Node {
		if m := c.Local.Members(); len(m) > before {
			return m[before]
		}
		return nil
	}
	peak := samplePeak(func() int {
		if n := newNode(); n != nil {
			return n.PID()
		}
		return 0
	})
	start := time.Now()
	logf("adding a node: until it has applied index %d", cu.Index)
	_, addErr := c.Local.AddNode(ctx)
	n := newNode()
	if n == nil {
		peak.finish()
		return cu, fmt.Errorf("the new node did not start: %w", addErr)
	}
	cu.Node = n.ID
	// AddNode gives up after 30 s without the node listed; it may still
	// be catching up, which is what is measured.
	err = caughtUp(ctx, c.nodeClient(n.HTTPAddr), cu.Index, logf)
	cu.Took = time.Since(start)
	cu.PeakRSSKB, cu.PeakAnonKB, cu.Samples = peak.finish()
	cu.Snapshot = latestSnapshot(filepath.Join(n.DataDir, "raft", "snapshots"))
	if err != nil {
		return cu, fmt.Errorf("%s: %w (added: %v; log %s)", n.ID, err, addErr, n.LogPath)
	}
	return cu, nil
}

// caughtUp waits (up to 10 minutes) until the node cl talks to has
// applied index.
func caughtUp(ctx context.Context, cl *client.Client, index uint64, logf func(string, ...any)) error {
	var last atomic.Pointer[string]
	defer progress(func() {
		if p := last.Load(); p != nil {
			logf("  %s", *p)
		}
	})()
	return localcluster.WaitFor(ctx, 10*time.Minute, func() error {
		h, err := cl.Health(ctx)
		if err != nil {
			msg := err.Error()
			last.Store(&msg)
			return err
		}
		msg := fmt.Sprintf("applied %d of %d", h.AppliedIndex, index)
		last.Store(&msg)
		if h.AppliedIndex < index {
			return fmt.Errorf("applied %d of %d", h.AppliedIndex, index)
		}
		return nil
	})
}
