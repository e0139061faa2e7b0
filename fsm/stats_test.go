package fsm

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// statMinutes returns the minutes the stats bucket holds.
func statMinutes(t *testing.T, f *FSM) []int64 {
	t.Helper()
	var out []int64
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktStats).ForEach(func(k, _ []byte) error {
			out = append(out, int64(binary.BigEndian.Uint64(k)))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func overview(t *testing.T, f *FSM, now int64) *live.Overview {
	t.Helper()
	o, err := f.Overview(now)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestFSM_OverviewCounts: fires and finishes are counted in the minute of
// their leader time, unfinished instances by state, failures listed newest
// first.
func TestFSM_OverviewCounts(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 10, Overlap: "queue"})
	ids := []uint64{fx.trigger(), fx.trigger(), fx.trigger(), fx.trigger(), fx.trigger()}
	fx.a.apply(submitCmd(t, "job", fx.now, SubmitItem{DelayMs: 3_600_000})) // SCHEDULED, not fired
	fx.lease(ids[0])
	fx.complete(ids[0], true, false)
	fx.lease(ids[1])
	fx.complete(ids[1], false, false)
	fx.do(CmdDecide, Decide{ID: ids[2], Action: DecideCancel})
	fx.lease(ids[3])
	fx.now += 2 * minuteMs // the terminate falls in a later minute
	fx.do(CmdDecide, Decide{ID: ids[3], Action: DecideTerminate})

	o := overview(t, fx.f, fx.now)
	wantHour := live.Outcomes{Fired: 5, Success: 1, Failed: 1, Terminated: 1, Canceled: 1}
	if o.LastHour != wantHour || o.LastDay != wantHour {
		t.Errorf("last hour %+v, day %+v; want %+v", o.LastHour, o.LastDay, wantHour)
	}
	if want := (live.StateCounts{Scheduled: 1, Ready: 1}); o.Counts != want {
		t.Errorf("counts: got %+v, want %+v", o.Counts, want)
	}
	if want := (live.TaskTotals{Total: 1}); o.Tasks != want {
		t.Errorf("tasks: got %+v, want %+v", o.Tasks, want)
	}
	if len(o.PerMinute) != 60 {
		t.Fatalf("per minute: %d entries, want 60", len(o.PerMinute))
	}
	last, first := o.PerMinute[59], o.PerMinute[57]
	if last.Minute.Millis() != fx.now/minuteMs*minuteMs || first.Fired != 5 || first.Succeeded != 1 || first.Failed != 1 || last.Fired != 0 {
		t.Errorf("per minute: last %+v, two before %+v", last, first)
	}
	var got []string
	for _, rf := range o.RecentFailures {
		got = append(got, rf.ID+" "+rf.State+" "+rf.LastError)
	}
	want := []string{model.FormatID(ids[3]) + " TERMINATED ", model.FormatID(ids[1]) + " FAILED x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("recent failures: got %q, want %q", got, want)
	}
	// An hour and a half later the minutes are in the last day only.
	o = overview(t, fx.f, fx.now+90*minuteMs)
	if o.LastHour != (live.Outcomes{}) || o.LastDay != wantHour {
		t.Errorf("90 minutes later: last hour %+v, day %+v", o.LastHour, o.LastDay)
	}
}

// TestFSM_StatsPrunedAfter48h: an entry that writes stats drops the
// minutes more than 48 h before its time.
func TestFSM_StatsPrunedAfter48h(t *testing.T) {
	tests := []struct {
		name  string
		later time.Duration
		want  int
	}{
		{"47h later both kept", 47 * time.Hour, 2},
		{"exactly 48h later both kept", 48 * time.Hour, 2},
		{"49h later the first dropped", 49 * time.Hour, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newExecFixture(t, model.Policy{MaxConcurrency: 10})
			fx.trigger()
			fx.now = t0 + tt.later.Milliseconds()
			fx.trigger()
			if got := statMinutes(t, fx.f); len(got) != tt.want || got[len(got)-1] != fx.now/minuteMs {
				t.Fatalf("minutes %v, want %d ending at %d", got, tt.want, fx.now/minuteMs)
			}
		})
	}
}

// TestFSM_RecentCapped: the recent failures and misfires keep the newest
// recentCap, whatever the entries that add them.
func TestFSM_RecentCapped(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 1000})
	ids := fx.ready(recentCap + 30)
	for _, id := range ids[:recentCap+20] {
		fx.lease(id)
		fx.complete(id, false, false)
	}
	// One entry finishing more than the cap at once.
	fx.do(CmdLease, Lease{Executor: "e1", IDs: ids[recentCap+20:], LeaseMs: 10_000})
	var items []Complete
	for _, id := range ids[recentCap+20:] {
		items = append(items, Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Error: "batch"}})
	}
	fx.now += 10
	fx.a.apply(&Command{Type: CmdCompleteBatch, Now: fx.now, Node: "n1", Body: EncodeCompleteBatch(items)})
	var n int
	_ = fx.f.view(func(tx *bolt.Tx) error {
		n = tx.Bucket(bktRecentFailures).Stats().KeyN
		if c := metaU64(tx, keyRecentFailures); int(c) != n {
			t.Errorf("meta count %d, bucket holds %d", c, n)
		}
		return nil
	})
	if n != recentCap {
		t.Fatalf("recent failures hold %d, want %d", n, recentCap)
	}
	o := overview(t, fx.f, fx.now)
	if len(o.RecentFailures) != 20 || o.RecentFailures[0].ID != model.FormatID(ids[len(ids)-1]) || o.RecentFailures[0].LastError != "batch" {
		t.Fatalf("recent failures: %d, first %+v", len(o.RecentFailures), o.RecentFailures[0])
	}
}

// TestFSM_RecentMisfires: a misfire the leader records is listed with its
// task and message, newest first.
func TestFSM_RecentMisfires(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	for i, name := range []string{"a", "b"} {
		writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask(name, "* * * * *")})))
		now := t0 + int64(i+1)*minuteMs*10
		r := a.apply(cmd(t, CmdFire, "", now, Fire{Tasks: []TaskFire{{Task: name, Version: 1, At: now,
			Key: name + "-k", Missed: 3, MissedFirst: now - 3*minuteMs, MissedLast: now - minuteMs}}}))
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	o := overview(t, f, t0+30*minuteMs)
	if len(o.RecentMisfires) != 2 || o.RecentMisfires[0].Task != "b" || o.RecentMisfires[1].Task != "a" ||
		o.RecentMisfires[0].Time.Millis() != t0+20*minuteMs || o.RecentMisfires[0].Message == "" {
		t.Fatalf("recent misfires: %+v", o.RecentMisfires)
	}
	if o.LastHour.Fired != 2 {
		t.Errorf("fired: got %d, want 2", o.LastHour.Fired)
	}
}

// TestFSM_ConsoleBucketsCreatedOnOpen: a file of a release without the
// console aggregates gets their buckets when it is opened, and counting
// starts from there.
func TestFSM_ConsoleBucketsCreatedOnOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fsm.db")
	f := openTest(t, path, false)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	editFile(t, path, func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bktStats, bktRecentFailures, bktRecentMisfires} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	f = openTest(t, path, false)
	a := &applier{t: t, f: f}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: wideTask("x")})))
	if r := a.apply(cmd(t, CmdTrigger, "", t0, Trigger{Task: "x"})); r.Err != nil {
		t.Fatal(r.Err)
	}
	if o := overview(t, f, t0); o.LastHour.Fired != 1 {
		t.Fatalf("fired %d after reopening, want 1", o.LastHour.Fired)
	}
}

// TestFSM_OverviewDeterministicAcrossBatching: the aggregates of two
// replicas that apply one log in other batches are the same (the property
// test compares whole dumps; this one names what differs).
func TestFSM_OverviewDeterministicAcrossBatching(t *testing.T) {
	g := newLogGen(7, 0)
	entries := make([]*raft.Log, 600)
	for i := range entries {
		entries[i] = g.entry(t)
	}
	var views []string
	for _, maxBatch := range []int{1, 50} {
		f := openTest(t, filepath.Join(t.TempDir(), "fsm.db"), true)
		applyLog(t, f, rand.New(rand.NewSource(7)), entries, maxBatch)
		o := overview(t, f, g.now)
		views = append(views, fmt.Sprintf("%+v", *o))
		if o.LastDay.Fired == 0 {
			t.Fatal("the log fired nothing: the generator is off")
		}
	}
	if views[0] != views[1] {
		t.Fatalf("overviews differ:\n%s\n%s", views[0], views[1])
	}
}
