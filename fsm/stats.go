package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// The console's aggregates (see DESIGN.md, "Console aggregates"): per
// minute counters of fires and finishes, and capped lists of the latest
// failures and misfires. Apply keeps them from leader-stamped times alone
// (an instance's FiredAt and FinishedAt, a misfire's command time); an
// entry collects its changes in its entryState and writes them once when
// it ends, so they do not depend on how entries are batched.
var (
	// bktStats: u64 minute (leader time ms / 60,000) -> statFields u64
	// counters.
	bktStats = []byte("stats")
	// bktRecentFailures: u64 finish time (ms), u64 id -> recentFailure;
	// the newest recentCap FAILED and TERMINATED instances.
	bktRecentFailures = []byte("recent_failures")
	// bktRecentMisfires: u64 time (ms), task, \x00, u64 task event seq
	// -> message; the newest recentCap misfires.
	bktRecentMisfires = []byte("recent_misfires")

	// keyRecentFailures and keyRecentMisfires count the keys of the two
	// capped buckets (u64 in meta).
	keyRecentFailures = []byte("recent_failures")
	keyRecentMisfires = []byte("recent_misfires")
)

// Counters of a stats minute, in value order.
const (
	statFired = iota
	statSuccess
	statFailed
	statTerminated
	statCanceled
	statSkipped
	statFields
)

const (
	minuteMs = 60_000
	// statsKeepMinutes is how long minutes are kept: 48 h before the
	// time of the entry that writes.
	statsKeepMinutes = 48 * 60
	// recentCap is how many failures and misfires are kept.
	recentCap = 100
	// recentErrorMax bounds the last error kept with a failure.
	recentErrorMax = 512
)

// statOf returns the counter of a terminal state (-1 for others).
func statOf(st uint8) int {
	switch st {
	case stSuccess:
		return statSuccess
	case stFailed:
		return statFailed
	case stTerm:
		return statTerminated
	case stCanceled:
		return statCanceled
	case stSkipped:
		return statSkipped
	}
	return -1
}

// minuteStats is one minute's counter changes within an entry.
type minuteStats struct {
	minute uint64
	n      [statFields]uint64
}

// entryStats is what an entry's commands add to the console aggregates.
type entryStats struct {
	minutes  []minuteStats // few: the commands of an entry share its time
	failures []kv
	misfires []kv
}

type kv struct{ k, v []byte }

// count adds one to counter i of the minute holding ms.
func (s *entryStats) count(ms int64, i int) {
	m := uint64(ms / minuteMs)
	for j := range s.minutes {
		if s.minutes[j].minute == m {
			s.minutes[j].n[i]++
			return
		}
	}
	s.minutes = append(s.minutes, minuteStats{minute: m})
	s.minutes[len(s.minutes)-1].n[i]++
}

// fired counts an instance that fired (its FiredAt is set).
func (w statWrites) fired(r *record) { w.es.stats.count(r.FiredAt, statFired) }

// finished counts an instance that entered the terminal state st and
// keeps a failure among the recent ones.
func (w statWrites) finished(r *record, st uint8) {
	w.es.stats.count(r.FinishedAt, statOf(st))
	if st != stFailed && st != stTerm {
		return
	}
	k := binary.BigEndian.AppendUint64(u64key(uint64(r.FinishedAt)), r.ID)
	lastErr := r.LastError
	if len(lastErr) > recentErrorMax {
		lastErr = lastErr[:recentErrorMax]
	}
	v := []byte{st}
	v = binary.AppendUvarint(v, uint64(r.Attempts))
	v = appendBytes(v, []byte(r.Task))
	v = appendBytes(v, []byte(lastErr))
	w.es.stats.failures = append(w.es.stats.failures, kv{k, v})
}

// misfire keeps a misfire event of a task among the recent ones.
func (w statWrites) misfire(task string, seq uint64, msg string) {
	k := u64key(uint64(w.cmd.Now))
	k = append(append(k, task...), 0)
	k = binary.BigEndian.AppendUint64(k, seq)
	w.es.stats.misfires = append(w.es.stats.misfires, kv{k, []byte(msg)})
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// flush writes an entry's aggregate changes, then drops minutes older
// than statsKeepMinutes before now (the entry's time) and the oldest
// recent items beyond recentCap.
func (s *entryStats) flush(tx *bolt.Tx, now int64) {
	if len(s.minutes) > 0 {
		b := tx.Bucket(bktStats)
		for _, m := range s.minutes {
			k := u64key(m.minute)
			v := make([]byte, 8*statFields)
			if old := b.Get(k); len(old) == len(v) {
				copy(v, old)
			}
			for i, n := range m.n {
				binary.BigEndian.PutUint64(v[8*i:], binary.BigEndian.Uint64(v[8*i:])+n)
			}
			must(b.Put(k, v))
		}
		cutoff := now/minuteMs - statsKeepMinutes
		c := b.Cursor()
		for k, _ := c.First(); k != nil && int64(binary.BigEndian.Uint64(k)) < cutoff; k, _ = c.First() {
			must(c.Delete())
		}
	}
	putCapped(tx, bktRecentFailures, keyRecentFailures, s.failures)
	putCapped(tx, bktRecentMisfires, keyRecentMisfires, s.misfires)
	*s = entryStats{}
}

// putCapped adds items to a bucket that keeps its newest recentCap keys,
// its key count in meta under countKey.
func putCapped(tx *bolt.Tx, bkt, countKey []byte, items []kv) {
	if len(items) == 0 {
		return
	}
	slices.SortFunc(items, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	items = items[max(0, len(items)-recentCap):]
	b := tx.Bucket(bkt)
	n := metaU64(tx, countKey)
	for _, it := range items {
		if b.Get(it.k) == nil {
			n++
		}
		must(b.Put(it.k, it.v))
	}
	c := b.Cursor()
	for k, _ := c.First(); k != nil && n > recentCap; k, _ = c.First() {
		must(c.Delete())
		n--
	}
	must(tx.Bucket(bktMeta).Put(countKey, u64key(n)))
}

// Overview returns the state machine's part of GET /v1/overview as of
// nowMs (the caller's clock): counts of unfinished instances and of
// tasks, the last hour's and day's fires and finishes, the last 60
// minutes, the latest failures and misfires and the pending alerts. Its
// cost does not grow with the number of instances kept, only with the
// unfinished ones (the active index, one byte each) and the tasks.
func (q consoleReads) Overview(nowMs int64) (*live.Overview, error) {
	o := &live.Overview{PerMinute: make([]live.MinuteStats, 60),
		RecentFailures: []live.RecentFailure{}, RecentMisfires: []live.RecentMisfire{}}
	err := q.f.view(func(tx *bolt.Tx) error {
		o.Counts = stateCounts(tx)
		t, err := taskTotals(tx)
		if err != nil {
			return err
		}
		o.Tasks = t
		minuteStatsOf(tx, nowMs, o)
		if o.RecentFailures, err = recentFailures(tx, 20); err != nil {
			return err
		}
		o.RecentMisfires = recentMisfires(tx, 20)
		c := tx.Bucket(bktAlerts).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			o.AlertsPending++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// stateCounts counts SCHEDULED instances (a counter) and the active ones
// by the state byte their index holds.
func stateCounts(tx *bolt.Tx) live.StateCounts {
	var n [256]int
	c := tx.Bucket(bktActive).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(v) == 1 {
			n[v[0]]++
		}
	}
	return live.StateCounts{Scheduled: int(metaU64(tx, keyPending)), Ready: n[stReady], Running: n[stRunning],
		Retrying: n[stRetrying], Blocked: n[stBlocked], WaitingApproval: n[stApproval]}
}

// taskTotals counts tasks and the paused ones (decoding only the flag).
func taskTotals(tx *bolt.Tx) (live.TaskTotals, error) {
	var t live.TaskTotals
	err := tx.Bucket(bktTasks).ForEach(func(_, v []byte) error {
		var p struct {
			Paused bool `json:"paused"`
		}
		if err := json.Unmarshal(v, &p); err != nil {
			return err
		}
		t.Total++
		if p.Paused {
			t.Paused++
		}
		return nil
	})
	return t, err
}

// minuteStatsOf fills o's last hour, last day and per-minute chart from
// the stats minutes of the 1,440 minutes up to nowMs's.
func minuteStatsOf(tx *bolt.Tx, nowMs int64, o *live.Overview) {
	now := nowMs / minuteMs
	for i := range o.PerMinute {
		o.PerMinute[i].Minute = model.UnixMilli((now - 59 + int64(i)) * minuteMs)
	}
	c := tx.Bucket(bktStats).Cursor()
	for k, v := c.Seek(u64key(uint64(max(now-1439, 0)))); k != nil; k, v = c.Next() {
		m := int64(binary.BigEndian.Uint64(k))
		if m > now {
			break
		}
		if len(v) != 8*statFields {
			continue
		}
		var n [statFields]int
		for i := range n {
			n[i] = int(binary.BigEndian.Uint64(v[8*i:]))
		}
		out := live.Outcomes{Fired: n[statFired], Success: n[statSuccess], Failed: n[statFailed],
			Terminated: n[statTerminated], Canceled: n[statCanceled], Skipped: n[statSkipped]}
		o.LastDay.Add(out)
		if i := m - (now - 59); i >= 0 {
			o.LastHour.Add(out)
			p := &o.PerMinute[i]
			p.Fired, p.Succeeded, p.Failed = out.Fired, out.Success, out.Failed
		}
	}
}

// recentFailures returns up to n of the latest failures, newest first.
func recentFailures(tx *bolt.Tx, n int) ([]live.RecentFailure, error) {
	out := []live.RecentFailure{}
	c := tx.Bucket(bktRecentFailures).Cursor()
	for k, v := c.Last(); k != nil && len(out) < n; k, v = c.Prev() {
		if len(k) != 16 || len(v) < 1 {
			return nil, errRecord
		}
		attempts, m := binary.Uvarint(v[1:])
		if m <= 0 {
			return nil, errRecord
		}
		task, rest, err := readBytes(v[1+m:])
		if err != nil {
			return nil, err
		}
		lastErr, _, err := readBytes(rest)
		if err != nil {
			return nil, err
		}
		out = append(out, live.RecentFailure{ID: model.FormatID(binary.BigEndian.Uint64(k[8:])), Task: string(task),
			State: name(stateNames, v[0]), Attempts: int(attempts),
			FinishedAt: model.UnixMilli(int64(binary.BigEndian.Uint64(k))), LastError: string(lastErr)})
	}
	return out, nil
}

// recentMisfires returns up to n of the latest misfires, newest first.
func recentMisfires(tx *bolt.Tx, n int) []live.RecentMisfire {
	out := []live.RecentMisfire{}
	c := tx.Bucket(bktRecentMisfires).Cursor()
	for k, v := c.Last(); k != nil && len(out) < n; k, v = c.Prev() {
		if len(k) < 17 {
			continue
		}
		out = append(out, live.RecentMisfire{Task: string(k[8 : len(k)-9]),
			Time: model.UnixMilli(int64(binary.BigEndian.Uint64(k))), Message: string(v)})
	}
	return out
}

// RecentMisfires returns up to n of the latest misfires (of the newest
// 100 kept), newest first.
func (q consoleReads) RecentMisfires(n int) ([]live.RecentMisfire, error) {
	var out []live.RecentMisfire
	err := q.f.view(func(tx *bolt.Tx) error {
		out = recentMisfires(tx, n)
		return nil
	})
	return out, err
}
