package scale

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/internal/localcluster"
)

// NodeSample is one agent's figures at the end of a step; -1 is unknown.
type NodeSample struct {
	ID, Role string
	// RSSKB is VmRSS of /proc/PID/status; AnonKB (RssAnon: heap, stacks)
	// and FileKB (RssFile: mapped files, bbolt's among them) are its parts.
	RSSKB, AnonKB, FileKB int64
	State                 int64 // bytes fsm.db takes on disk
	Disk                  int64 // bytes the data directory takes on disk
	Snapshot              Snapshot
}

// Snapshot is the latest Raft snapshot in a node's data directory.
type Snapshot struct {
	Index uint64 // 0: none yet
	Size  int64  // bytes of its state
	// Took is how long writing it took: from the creation time Raft puts
	// in the snapshot directory's name to its meta.json's modification
	// time (written when the snapshot is closed). The state machine's
	// part before (opening a read transaction) is not in it.
	Took time.Duration
	// Writing is true while a newer one is being written (its directory
	// still ends in .tmp).
	Writing bool
}

// sampleNode reads a node's memory from /proc and its disk use.
func sampleNode(n *localcluster.Node) NodeSample {
	s := NodeSample{ID: n.ID, Role: "?", RSSKB: -1, AnonKB: -1, FileKB: -1}
	if pid := n.PID(); pid > 0 {
		s.RSSKB, s.AnonKB, s.FileKB = benchkit.ProcStatus(pid, "VmRSS:"), benchkit.ProcStatus(pid, "RssAnon:"), benchkit.ProcStatus(pid, "RssFile:")
	}
	s.Disk = benchkit.DiskUse(n.DataDir)
	s.State = benchkit.DiskUse(filepath.Join(n.DataDir, "fsm.db"))
	s.Snapshot = latestSnapshot(filepath.Join(n.DataDir, "raft", "snapshots"))
	return s
}

// latestSnapshot reads the newest finished snapshot under dir (Raft's
// file snapshot store: TERM-INDEX-UNIXMS/meta.json and state.bin).
func latestSnapshot(dir string) Snapshot {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return Snapshot{}
	}
	var best Snapshot
	var bestTerm uint64
	writing := false
	for _, e := range ents {
		f := strings.Split(e.Name(), "-")
		if strings.HasSuffix(e.Name(), ".tmp") {
			writing = true // TERM-INDEX-MS.tmp is one being written
			continue
		}
		if !e.IsDir() || len(f) != 3 {
			continue
		}
		term, err1 := strconv.ParseUint(f[0], 10, 64)
		index, err2 := strconv.ParseUint(f[1], 10, 64)
		ms, err3 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || term < bestTerm || term == bestTerm && index <= best.Index {
			continue
		}
		meta := filepath.Join(dir, e.Name(), "meta.json")
		info, err := os.Stat(meta)
		if err != nil {
			continue
		}
		var m struct{ Size int64 }
		if b, err := os.ReadFile(meta); err != nil || json.Unmarshal(b, &m) != nil {
			continue
		}
		bestTerm = term
		best = Snapshot{Index: index, Size: m.Size, Took: info.ModTime().Sub(time.UnixMilli(ms))}
	}
	best.Writing = writing
	return best
}

// peakSampler samples a process's memory every 100 ms until stopped and
// keeps the highest VmRSS seen (with its RssAnon).
type peakSampler struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	rss  int64
	anon int64
	n    int
}

// samplePeak starts sampling the process pid() names (0: none yet).
func samplePeak(pid func() int) *peakSampler {
	p := &peakSampler{stop: make(chan struct{}), done: make(chan struct{}), rss: -1, anon: -1}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if id := pid(); id > 0 {
				rss, anon := benchkit.ProcStatus(id, "VmRSS:"), benchkit.ProcStatus(id, "RssAnon:")
				p.mu.Lock()
				if rss > p.rss {
					p.rss, p.anon = rss, anon
				}
				p.n++
				p.mu.Unlock()
			}
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// finish stops sampling and answers the peak VmRSS and RssAnon in kB and
// the number of samples.
func (p *peakSampler) finish() (rssKB, anonKB int64, samples int) {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rss, p.anon, p.n
}
