package fsm

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// TestFreelistAB measures what storing bbolt's free list with the state
// file (NoFreelistSync off) costs under churn and what it saves at open
// (issue 27 item 3; docs/performance.md "The free list at open"). It is
// a benchmark, skipped unless AX_FREELIST_AB is set to
// "pending,freed,cycles,rounds[,per]" (e.g. 2000000,500000,1000,2): it fills
// a state file with pending delayed instances and, spread among them,
// freed instances run to SUCCESS and then pruned (their pages are the
// free list), then alternates arms A (the free list not stored, as the
// product runs) and B (stored) on the same file, rounds times A B. Each
// arm reopens the file with its setting and runs cycles of churn, four
// entries each (submit per instances due now, 256 unless given, lease
// them, complete them, prune those finished 100 cycles earlier), then
// reopens it once more: a restart's open, timed, with the peak VmRSS it
// added (VmHWM after clearing it) and the share of the file cached
// before it. Last, it times the open's walk with madvise calls on the
// file's map while bbolt opens it.
func TestFreelistAB(t *testing.T) {
	spec := os.Getenv("AX_FREELIST_AB")
	if spec == "" {
		t.Skip("a benchmark: set AX_FREELIST_AB=pending,freed,cycles,rounds[,per]")
	}
	p := [5]int{4: 256}
	if n, err := fmt.Sscanf(spec, "%d,%d,%d,%d,%d", &p[0], &p[1], &p[2], &p[3], &p[4]); n < 4 || p[4] < 1 {
		t.Fatalf("AX_FREELIST_AB=%q: %v", spec, err)
	}
	pending, freed, cycles, rounds := p[0], p[1], p[2], p[3]
	fb := newFinishBench(t)
	start := time.Now()
	fb.fill(pending, freed)
	st, _ := os.Stat(fb.f.cfg.Path)
	t.Logf("filled %d pending, %d run and pruned in %v: file %.1f MB, %d free pages",
		pending, freed, time.Since(start).Round(time.Second), float64(st.Size())/1e6, fb.f.db.Stats().FreePageN)

	ch := &churn{fb: fb, per: p[4]}
	for range 100 { // the retention window
		ch.cycle()
	}
	t.Log("arm  store  first open (peak +MB) | ns/entry  cpu-ns/entry  KB written/entry  free list KB  free pages  | restart open: time  peak +MB  cached")
	for r := range rounds {
		for _, store := range []bool{false, true} {
			arm := map[bool]string{false: "A", true: "B"}[store]
			ft, fpeak := fb.reopen(store, nil)
			res := ch.run(cycles)
			cached := cachedShare(t, fb.f.cfg.Path)
			ot, peak := fb.reopen(store, nil)
			t.Logf("%s%d   %-5v  %8v (%6.1f)    | %8.0f  %12.0f  %16.1f  %12.1f  %10d  | %8v  %8.1f  %5.1f%%", arm, r+1, store,
				ft.Round(time.Millisecond), fpeak, res.ns, res.cpuNs, res.kbWritten, res.freelistKB, res.freePages,
				ot.Round(time.Millisecond), peak, 100*cached)
		}
	}
	// The open's walk with a concurrent madvise on the file's mapping:
	// what dropping its pages while bbolt walks them would save. An
	// experiment only (see the docs for why the product does not do it).
	for _, adv := range []struct {
		name   string
		advice int
		every  time.Duration
	}{{"walk", -1, 0}, {"walk+MADV_RANDOM", unix.MADV_RANDOM, time.Millisecond},
		{"walk+MADV_DONTNEED", unix.MADV_DONTNEED, 10 * time.Millisecond},
		{"walk+MADV_DONTNEED", unix.MADV_DONTNEED, 50 * time.Millisecond},
		{"walk+MADV_DONTNEED", unix.MADV_DONTNEED, 200 * time.Millisecond},
		{"walk+MADV_COLD", unix.MADV_COLD, 50 * time.Millisecond}, {"walk", -1, 0},
		// Last: it evicts the file's pages from the page cache.
		{"walk+MADV_PAGEOUT", unix.MADV_PAGEOUT, 50 * time.Millisecond}, {"walk", -1, 0}} {
		fb.reopen(false, nil)
		ch.cycle() // a commit, so that no free list is stored
		var stop func()
		ot, peak := fb.reopen(false, func() { stop = adviseWhileOpening(t, fb.f.cfg.Path, adv.advice, adv.every) }, func() { stop() })
		t.Logf("open %-20s every %-6v %8v  peak +%.1f MB", adv.name, adv.every, ot.Round(time.Millisecond), peak)
	}
}

// fill applies pending delayed submissions 1,000 to an entry and, spread
// among them, freed instances run to SUCCESS, then prunes those.
func (fb *finishBench) fill(pending, freed int) {
	var done []uint64
	for i := 0; i < pending; i += 1000 {
		items := make([]SubmitItem, min(1000, pending-i))
		for j := range items {
			items[j] = SubmitItem{Payload: []byte(`{"order":123456,"action":"close"}`), DelayMs: 100 * 3600_000}
		}
		fb.apply(&Command{Type: CmdSubmit, Body: EncodeSubmit(&Submit{Task: "t", Items: items})})
		for want := min(freed, (i+1000)*freed/max(1, pending)); len(done) < want; {
			ids := fb.ready(min(1000, want-len(done)))
			fb.run(ids)
			done = append(done, ids...)
		}
	}
	for i := 0; i < len(done); i += 1000 {
		fb.prune(done[i:min(i+1000, len(done))])
	}
}

func (fb *finishBench) prune(ids []uint64) {
	c, err := NewCommand(CmdPrune, "", "bench", Prune{IDs: ids})
	if err != nil {
		fb.b.Fatal(err)
	}
	fb.apply(c)
}

// reopen closes the state file and opens it again, with the free list
// stored or not, as openDB does; before and after, when set, run just
// before and just after bolt.Open. It returns how long bolt.Open took
// and the VmRSS it added at its peak, in MB.
func (fb *finishBench) reopen(store bool, before func(), after ...func()) (time.Duration, float64) {
	f := fb.f
	if err := f.db.Close(); err != nil {
		fb.b.Fatal(err)
	}
	runtime.GC()
	base := procStatusKB(fb.b, "VmRSS")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		fb.b.Fatalf("reset VmHWM: %v", err)
	}
	opts := boltOptions(f.cfg)
	opts.NoFreelistSync = !store
	if before != nil {
		before()
	}
	start := time.Now()
	db, err := bolt.Open(f.cfg.Path, 0o600, opts)
	took := time.Since(start)
	for _, fn := range after {
		fn()
	}
	peak := procStatusKB(fb.b, "VmHWM")
	if err != nil {
		fb.b.Fatal(err)
	}
	if err := unmapPages(db); err != nil {
		fb.b.Fatal(err)
	}
	f.db = db
	return took, float64(peak-base) / 1024
}

func procStatusKB(tb testing.TB, field string) int64 {
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// adviseWhileOpening applies advice (if not -1) every interval to each
// mapping of path's inode listed in /proc/self/maps until the function
// it returns is called. Test-only: it relies on bolt.Open not unmapping
// the file between the mmap and its return, as bbolt 1.4 does on this
// path (NoFreelistSync, no error).
func adviseWhileOpening(tb testing.TB, path string, advice int, every time.Duration) func() {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		tb.Fatal(err)
	}
	ino := strconv.FormatUint(st.Ino, 10)
	quit, wg := make(chan struct{}), sync.WaitGroup{}
	if advice == -1 {
		return func() {}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-quit:
				return
			case <-time.After(every):
			}
			b, _ := os.ReadFile("/proc/self/maps")
			for _, line := range strings.Split(string(b), "\n") {
				fs := strings.Fields(line)
				if len(fs) < 6 || fs[4] != ino || fs[1] != "r--s" {
					continue
				}
				lo, hi, _ := strings.Cut(fs[0], "-")
				a, _ := strconv.ParseUint(lo, 16, 64)
				z, _ := strconv.ParseUint(hi, 16, 64)
				unix.Syscall(unix.SYS_MADVISE, uintptr(a), uintptr(z-a), uintptr(advice))
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// churn runs instances through their life: submitted due now, leased,
// completed, and pruned a retention of 100 cycles later.
type churn struct {
	fb       *finishBench
	per      int // instances per cycle
	retained [][]uint64
}

func (c *churn) cycle() {
	ids := c.fb.ready(c.per)
	c.fb.run(ids)
	c.retained = append(c.retained, ids)
	if len(c.retained) > 100 {
		c.fb.prune(c.retained[0])
		c.retained = c.retained[1:]
	}
}

type churnResult struct {
	ns, cpuNs, kbWritten, freelistKB float64
	freePages                        int
}

// run runs n cycles and reports per applied entry.
func (c *churn) run(n int) churnResult {
	db := c.fb.f.db
	w0, i0 := writtenBytes(c.fb.b), c.fb.index
	start, cpu0 := time.Now(), cpuTime()
	for range n {
		c.cycle()
	}
	wall, cpu := time.Since(start), cpuTime()-cpu0
	s1 := db.Stats()
	entries := float64(c.fb.index - i0)
	return churnResult{
		ns:         float64(wall.Nanoseconds()) / entries,
		cpuNs:      float64(cpu.Nanoseconds()) / entries,
		kbWritten:  float64(writtenBytes(c.fb.b)-w0) / 1024 / entries,
		freelistKB: float64(s1.FreelistInuse) / 1024,
		freePages:  s1.FreePageN,
	}
}

// writtenBytes is the bytes this process has passed to write calls
// (wchar in /proc/self/io): with NoSync, bbolt's pages and meta.
func writtenBytes(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatal("no wchar in /proc/self/io")
	return 0
}

// cachedShare is the share of path's pages in the page cache (mincore
// on a mapping of its own, unmapped before it returns).
func cachedShare(tb testing.TB, path string) float64 {
	fh, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || st.Size() == 0 {
		tb.Fatal(err)
	}
	m, err := unix.Mmap(int(fh.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		tb.Fatal(err)
	}
	defer unix.Munmap(m)
	pages := (len(m) + os.Getpagesize() - 1) / os.Getpagesize()
	vec := make([]byte, pages)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		tb.Fatal(errno)
	}
	in := 0
	for _, v := range vec {
		in += int(v & 1)
	}
	return float64(in) / float64(pages)
}
