package failover

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model/member"
)

// tmpfsWrap returns the command prefix that runs a process in a mount
// namespace of its own (a user namespace too, so that no root is needed
// where the kernel allows unprivileged ones) with a tmpfs of size bytes
// mounted on dir. The mount dies with the process; the test reaches it
// through /proc/PID/root. It skips the test when the machine cannot.
func tmpfsWrap(t *testing.T, dir string, size int) []string {
	t.Helper()
	wrap := func(dir string) []string {
		return []string{"unshare", "--user", "--map-root-user", "--mount", "--propagation", "private",
			"sh", "-c", `mkdir -p "$0" && mount -t tmpfs -o size=` + strconv.Itoa(size) + ` tmpfs "$0" && exec "$@"`, dir}
	}
	probe := append(wrap(t.TempDir()), "true")
	if out, err := exec.Command(probe[0], probe[1:]...).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs in a private mount namespace here (unshare: %v: %s); the test needs unprivileged user namespaces or root", err, bytes.TrimSpace(out))
	}
	return wrap(dir)
}

// fill writes zeros to path until its filesystem, which must be a tmpfs
// of at most limit bytes, is full.
func fill(t *testing.T, path string, limit int64) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != tmpfsMagic || int64(st.Blocks)*st.Bsize > limit {
		t.Fatalf("%s is not the tmpfs of at most %d bytes the test mounted (type %#x, %d bytes): refusing to fill it",
			filepath.Dir(path), limit, st.Type, int64(st.Blocks)*st.Bsize)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for n <= limit {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			return n
		}
		if err != nil {
			t.Fatalf("fill %s: %v", path, err)
		}
	}
	t.Fatalf("wrote %d bytes to %s and it is not full", n, path)
	return 0
}

// tmpfsMagic is statfs's f_type of a tmpfs (linux/magic.h).
const tmpfsMagic = 0x01021994

// TestDisk_FollowerRaftLogFull: a follower whose Raft log lies on a full
// filesystem stays up and keeps its leader while the others commit
// without it (its local reads go stale); its /healthz answers 503 saying
// it cannot append, then how far behind the leader it is once that
// passes the bound, and `ax cluster status` shows it unhealthy with the
// reason. Once space is freed it catches up and answers 200 by itself.
func TestDisk_FollowerRaftLogFull(t *testing.T) {
	const tmpfsSize = 16 << 20
	var raftDir string
	c := startCluster(t, 3, func(cfg *localcluster.Config) {
		raftDir = filepath.Join(cfg.Dir, "n3", "raft")
		wrap := tmpfsWrap(t, raftDir, tmpfsSize)
		cfg.Wrap = func(id string) []string {
			if id == "n3" {
				return wrap
			}
			return nil
		}
	})
	ctx := ctxT(t, 3*time.Minute)
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n3 := c.Nodes[2]
	if leader == n3 {
		t.Skip("n3 leads; the test wants a follower's disk full") // n1 bootstraps and leads in practice
	}
	waitHealth(ctx, t, n3, 10*time.Second, func(h *member.Health) error {
		if h.Problem != "" {
			return fmt.Errorf("n3 healthy before the disk fills? %q", h.Problem)
		}
		return nil
	})
	filler := filepath.Join("/proc", strconv.Itoa(n3.PID()), "root", raftDir, "filler")
	t.Logf("filled n3's Raft log filesystem with %d bytes", fill(t, filler, tmpfsSize))

	// One write per entry, until n3 says both what fails and how far
	// behind it is (a few appends may still fit in raft.db's free pages).
	lc := leader.Client()
	wrote := 0
	var h *member.Health
	testkit.Eventually(t, 2*time.Minute, func() error {
		for i := 0; i < 100; i++ {
			if _, err := lc.PutTask(ctx, eventTask(fmt.Sprintf("full-%d", wrote))); err != nil {
				return fmt.Errorf("write through the leader while n3's disk is full: %w", err)
			}
			wrote++
		}
		h, err = n3.Client().Health(ctx)
		if h == nil {
			return err
		}
		if !strings.Contains(h.Problem, "cannot append to the Raft log: ") || !strings.Contains(h.Problem, "no space left on device") ||
			!strings.Contains(h.Problem, "lags the commit index") {
			return fmt.Errorf("after %d writes n3 says %q", wrote, h.Problem)
		}
		return nil
	})
	t.Logf("after %d writes n3's /healthz: %s", wrote, h.Problem)
	if _, err := n3.Client().Health(ctx); err == nil {
		t.Fatal("n3's /healthz answered 200 with a problem")
	}
	if h.Leader != leader.ID {
		t.Fatalf("n3's leader %q, want %s: heartbeats go on", h.Leader, leader.ID)
	}
	stale, err := countTasks(ctx, n3.Client(), client.Stale())
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) >= wrote {
		t.Fatalf("n3 serves %d tasks of %d: want its reads stale (the point of the 503)", len(stale), wrote)
	}
	out, err := exec.Command(axBinary, "cluster", "status", "-addr", leader.HTTPAddr).CombinedOutput()
	if err != nil {
		t.Fatalf("ax cluster status: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "n3 unhealthy: cannot append to the Raft log") {
		t.Fatalf("ax cluster status does not say n3 cannot append:\n%s", out)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitHealth(ctx, t, n3, time.Minute, func(h *member.Health) error {
		if h.Problem != "" {
			return fmt.Errorf("n3 after space came back: %q", h.Problem)
		}
		return nil
	})
	healthy := time.Since(start)
	testkit.Eventually(t, 30*time.Second, func() error {
		got, err := countTasks(ctx, n3.Client(), client.Stale())
		if err != nil || len(got) != wrote {
			return fmt.Errorf("n3 serves %d tasks (%v) once healthy, want %d", len(got), err, wrote)
		}
		return nil
	})
	t.Logf("n3 healthy %s after space came back, serving %d of %d tasks while it was full",
		healthy.Round(time.Millisecond), len(stale), wrote)
}
