package fsm

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// BenchmarkOverview measures the overview query (ns/op), and instance
// listings by an unfinished state, on a state machine of 1,000 tasks and
// 1,000,000 instances (overviewFixture).
func BenchmarkOverview(b *testing.B) {
	const instances = 1_000_000
	start := time.Now()
	f, now := overviewFixture(b, instances)
	b.Logf("built 1,000 tasks and %d instances in %s", instances, time.Since(start).Round(time.Millisecond))
	b.Run("overview", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.Overview(now); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Listing by an unfinished state walks the active index (80,000
	// READY here), not the million records.
	for _, st := range []string{model.StateReady, model.StateBlocked} {
		b.Run("instances?state="+st, func(b *testing.B) {
			for b.Loop() {
				if _, err := f.ListInstances(model.InstanceFilter{State: st, Limit: 100}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// overviewFixture builds a state machine of 1,000 tasks and n instances
// through the apply path: n/10 fired (READY, in the active index) and the
// rest delayed an hour (SCHEDULED), then n/50 of the fired ones run to an
// end (half failed), so the stats minutes, recent failures and active
// index all hold data. It returns the state machine and the leader time
// of its last entry.
func overviewFixture(b *testing.B, instances int) (*FSM, int64) {
	b.Helper()
	const (
		tasks    = 1000
		perEntry = 10_000 // 100 submit commands of 100 in one group-commit entry
		perCmd   = 100
	)
	finished := instances / 50
	f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	index, now := uint64(0), t0
	apply := func(c *Command) *Result {
		index++
		now += 50
		out := f.ApplyBatch([]*raft.Log{{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}})
		switch r := out[0].(type) {
		case *Result:
			if r.Err != nil {
				b.Fatal(r.Err)
			}
			return r
		case *BatchResult:
			for _, sub := range r.Results {
				if sub.Err != nil {
					b.Fatal(sub.Err)
				}
			}
		}
		return nil
	}
	var puts []*Command
	for i := range tasks {
		t := model.Task{Name: fmt.Sprintf("task-%04d", i), Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1 << 20},
			Labels: map[string]string{"team": "a"}, Paused: i%10 == 0}
		c, err := NewCommand(CmdPutTask, "", "bench", PutTask{Task: t})
		if err != nil {
			b.Fatal(err)
		}
		puts = append(puts, c)
	}
	apply(EncodeBatch(now, "n1", puts))
	var ready []uint64
	for e := 0; e < instances/perEntry; e++ {
		cmds := make([]*Command, perEntry/perCmd)
		for i := range cmds {
			items := make([]SubmitItem, perCmd)
			delay := int64(3_600_000)
			if e%10 == 0 {
				delay = 0 // due now: READY
			}
			for j := range items {
				items[j] = SubmitItem{DelayMs: delay}
			}
			cmds[i] = &Command{Type: CmdSubmit, Actor: "bench", Body: EncodeSubmit(&Submit{Task: fmt.Sprintf("task-%04d", (e*len(cmds)+i)%tasks), Items: items})}
		}
		r := f.ApplyBatch([]*raft.Log{{Index: index + 1, Term: 1, Type: raft.LogCommand, Data: EncodeBatch(now, "n1", cmds).Encode()}})[0].(*BatchResult)
		index++
		now += 50
		if e%10 == 0 {
			for _, sub := range r.Results {
				ready = append(ready, submittedIDs(b, sub)...)
			}
		}
	}
	for i := 0; i < finished; i += 1000 {
		ids := ready[i : i+1000]
		c, _ := NewCommand(CmdLease, "", "bench", Lease{Executor: "e1", IDs: ids, LeaseMs: 30_000})
		c.Now, c.Node = now, "n1"
		apply(c)
		cs := make([]Complete, len(ids))
		for j, id := range ids {
			cs[j] = Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: j%2 == 0, Error: "boom"}}
		}
		apply(&Command{Type: CmdCompleteBatch, Now: now, Node: "n1", Body: EncodeCompleteBatch(cs)})
	}
	o, err := f.Overview(now)
	if err != nil {
		b.Fatal(err)
	}
	if o.Counts.Scheduled != instances*9/10 || o.Counts.Ready+o.Counts.Running != instances/10-finished ||
		o.LastDay.Fired != instances/10 || o.LastDay.Failed != finished/2 || o.Tasks.Paused != 100 {
		b.Fatalf("fixture: %+v", o)
	}
	return f, now
}

// BenchmarkOverviewDerived weighs the replicated console aggregates
// (fsm/DESIGN.md, "Console aggregates") against deriving the same
// figures on the node from the instance records, the facts: "replicated"
// is the overview query as it is, "derived" reads every instance record
// for the last day's fires and finishes, the per-minute chart and the
// newest failures (an instance fires at any time after it was created, so
// no key order bounds the scan; only the times of a record are read, a
// failed one is decoded whole), and checks it gives the same answer.
func BenchmarkOverviewDerived(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			f, now := overviewFixture(b, n)
			want, err := f.Overview(now)
			if err != nil {
				b.Fatal(err)
			}
			got, err := deriveOverview(f, now)
			if err != nil {
				b.Fatal(err)
			}
			if got.LastDay != want.LastDay || got.LastHour != want.LastHour ||
				!reflect.DeepEqual(got.PerMinute, want.PerMinute) || !reflect.DeepEqual(got.RecentFailures, want.RecentFailures) {
				b.Fatalf("derived %+v %+v\nreplicated %+v %+v", got.LastDay, got.RecentFailures[:1], want.LastDay, want.RecentFailures[:1])
			}
			b.Run("replicated", func(b *testing.B) {
				for b.Loop() {
					if _, err := f.Overview(now); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("derived", func(b *testing.B) {
				for b.Loop() {
					if _, err := deriveOverview(f, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// deriveOverview computes from the instance records alone the overview's
// parts that the replicated aggregates hold: the last day's and hour's
// fires and finishes, the last 60 minutes and the 20 newest failures. It
// can only count the instances retention has kept.
func deriveOverview(f *FSM, nowMs int64) (*live.Overview, error) {
	o := &live.Overview{PerMinute: make([]live.MinuteStats, 60)}
	now := nowMs / minuteMs
	for i := range o.PerMinute {
		o.PerMinute[i].Minute = model.UnixMilli((now - 59 + int64(i)) * minuteMs)
	}
	add := func(ms int64, out live.Outcomes) {
		m := ms / minuteMs
		if m < now-1439 || m > now {
			return
		}
		o.LastDay.Add(out)
		if i := m - (now - 59); i >= 0 {
			o.LastHour.Add(out)
			p := &o.PerMinute[i]
			p.Fired, p.Succeeded, p.Failed = p.Fired+out.Fired, p.Succeeded+out.Success, p.Failed+out.Failed
		}
	}
	var failed []*record
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktInstances).ForEach(func(k, v []byte) error {
			st, fired, finished, ok := recordTimes(v)
			if !ok {
				return errRecord
			}
			if fired != 0 {
				add(fired, live.Outcomes{Fired: 1})
			}
			var out live.Outcomes
			switch st {
			case stSuccess:
				out.Success = 1
			case stFailed:
				out.Failed = 1
			case stTerm:
				out.Terminated = 1
			case stCanceled:
				out.Canceled = 1
			case stSkipped:
				out.Skipped = 1
			default:
				return nil
			}
			add(finished, out)
			if st == stFailed || st == stTerm {
				r, err := decodeRecord(binary.BigEndian.Uint64(k), v)
				if err != nil {
					return err
				}
				failed = append(failed, r)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(failed, func(a, b *record) int {
		return cmp.Or(cmp.Compare(b.FinishedAt, a.FinishedAt), cmp.Compare(b.ID, a.ID))
	})
	o.RecentFailures = []live.RecentFailure{}
	for _, r := range failed[:min(20, len(failed))] {
		lastErr := r.LastError
		if len(lastErr) > recentErrorMax {
			lastErr = lastErr[:recentErrorMax]
		}
		o.RecentFailures = append(o.RecentFailures, live.RecentFailure{ID: model.FormatID(r.ID), Task: r.Task,
			State: name(stateNames, r.State), Attempts: int(r.Attempts), FinishedAt: model.UnixMilli(r.FinishedAt), LastError: lastErr})
	}
	return o, nil
}

// recordTimes reads only an instance record's state, FiredAt and
// FinishedAt (decodeRecord copies every field out; this copies none).
func recordTimes(b []byte) (st uint8, fired, finished int64, ok bool) {
	if len(b) < 3 || b[0] != recordVersion {
		return 0, 0, 0, false
	}
	st, b = b[1], b[3:]
	_, n := binary.Uvarint(b) // attempts
	if n <= 0 {
		return 0, 0, 0, false
	}
	b = b[n:]
	var t [5]int64 // created, scheduled, fired, started, finished
	for i := range t {
		if t[i], n = binary.Varint(b); n <= 0 {
			return 0, 0, 0, false
		}
		b = b[n:]
	}
	return st, t[2], t[4], true
}
