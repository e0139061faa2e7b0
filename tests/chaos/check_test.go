package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// cleanHistory is a history that keeps every promise: a cron firing every
// second for 10 s, a trigger and a delayed submission, each run once.
func cleanHistory() *History {
	h := &History{Start: t0, End: at(10 * time.Second), Collected: at(20 * time.Second),
		Faults:   []Fault{{Name: "isolate n1", Start: at(3 * time.Second), End: at(6 * time.Second)}},
		Crons:    []Cron{{Task: "tick", From: at(time.Second), To: at(9 * time.Second)}},
		Replicas: map[string]map[string]string{"n1": {}, "n2": {}},
		Slots:    []SlotCount{{Task: "tick"}, {Task: "long", Busy: 1, Holders: []string{"t9 RUNNING"}}},
	}
	add := func(in model.Instance, start time.Time) { addRun(h, in, start) }
	for s := 1; s <= 9; s++ {
		due := at(time.Duration(s) * time.Second)
		add(model.Instance{ID: fmt.Sprintf("c%02d", s), Task: "tick", Source: model.SourceCron, IdempotencyKey: "tick@" + fmt.Sprint(s),
			ScheduledAt: model.Time{Time: due}, FiredAt: model.Time{Time: due.Add(5 * time.Millisecond)}}, due.Add(20*time.Millisecond))
	}
	add(model.Instance{ID: "t1", Task: "long", Source: model.SourceAPI, IdempotencyKey: "l-1",
		ScheduledAt: model.Time{Time: at(2 * time.Second)}, FiredAt: model.Time{Time: at(2 * time.Second)}}, at(2050*time.Millisecond))
	add(model.Instance{ID: "d1", Task: "delayed", Source: model.SourceDelay, IdempotencyKey: "d-1",
		ScheduledAt: model.Time{Time: at(5 * time.Second)}, FiredAt: model.Time{Time: at(5 * time.Second)}}, at(5030*time.Millisecond))
	h.Acks = []Ack{
		{Kind: "trigger", Task: "long", Key: "l-1", Request: "r1", ID: "t1", At: at(2010 * time.Millisecond)},
		{Kind: "trigger", Task: "long", Key: "l-1", Request: "r2", ID: "t1", At: at(2500 * time.Millisecond)},
		{Kind: "submit", Task: "delayed", Key: "d-1", Request: "r3", ID: "d1", Due: at(5 * time.Second), At: at(time.Second)},
	}
	return h
}

// addRun adds a successful instance, run once from start, known to every
// replica.
func addRun(h *History, in model.Instance, start time.Time) {
	in.State = model.StateSuccess
	in.Attempts = 1
	h.Instances = append(h.Instances, in)
	h.Runs = append(h.Runs, Run{Instance: in.ID, Attempt: 1, Executor: "e1", Start: start, Last: start.Add(300 * time.Millisecond), Ended: "end", Starts: 1})
	for _, states := range h.Replicas {
		states[in.ID] = in.State
	}
}

var testBounds = Bounds{Firing: 4 * time.Second, Dispatch: 5 * time.Second}

func TestCheck_CleanHistoryPasses(t *testing.T) {
	r := Check(cleanHistory(), testBounds)
	if len(r.Violations) != 0 {
		t.Fatalf("got violations %+v, want none", r.Violations)
	}
	if r.Stats.Instances != 11 || r.Stats.Attempts != 11 || r.Stats.MaxFire != 5*time.Millisecond || r.Stats.NewLeader != 0 {
		t.Fatalf("stats %+v", r.Stats)
	}
	h := cleanHistory()
	h.Leaders = []Leadership{{Term: 2, Leader: "n1", Seen: at(0)}, {Term: 4, Leader: "n2", Seen: at(5500 * time.Millisecond)}}
	if r := Check(h, testBounds); r.Stats.NewLeader != 2500*time.Millisecond || r.Stats.Elections != 1 {
		t.Fatalf("new leader after %s (%d elections), want 2.5s after the fault at 3s (1)", r.Stats.NewLeader, r.Stats.Elections)
	}
}

func TestCheck_EachViolation(t *testing.T) {
	find := func(h *History, id string) *model.Instance {
		for i := range h.Instances {
			if h.Instances[i].ID == id {
				return &h.Instances[i]
			}
		}
		panic(id)
	}
	cases := []struct {
		name   string
		break_ func(h *History)
		want   string
		detail string
		also   []string // other checks the break may trip too
	}{
		{"acknowledged instance missing", func(h *History) {
			h.Acks = append(h.Acks, Ack{Kind: "trigger", Task: "quick", Request: "r9", ID: "gone", At: at(4 * time.Second)})
		}, CheckLost, "gone, which does not exist", nil},
		{"an acknowledgement naming no instance", func(h *History) {
			h.Acks = append(h.Acks, Ack{Kind: "trigger", Task: "quick", Request: "r8", At: at(4 * time.Second), Note: "200, empty body"})
		}, CheckLost, "with no instance id in the answer (200, empty body)", nil},
		{"two instances for one cron second", func(h *History) {
			dup := *find(h, "c03")
			dup.ID, dup.IdempotencyKey = "c03b", "other"
			addRun(h, dup, dup.ScheduledAt.Add(30*time.Millisecond))
		}, CheckDuplicateFire, "2 instances c03, c03b", nil},
		{"two instances for one idempotency key", func(h *History) {
			dup := *find(h, "t1")
			dup.ID = "t1b"
			addRun(h, dup, at(2100*time.Millisecond))
		}, CheckDuplicateKey, "long key l-1: 2 instances", nil},
		{"a retried key acknowledged as another instance", func(h *History) {
			h.Acks = append(h.Acks, Ack{Kind: "trigger", Task: "long", Key: "l-1", Request: "r7", ID: "c05", At: at(7 * time.Second)})
		}, CheckDuplicateKey, "acknowledged as 2 different instances", nil},
		{"a replayed request answered with another instance", func(h *History) {
			h.Acks = append(h.Acks, Ack{Kind: "trigger", Task: "long", Request: "r1", ID: "c06", At: at(9 * time.Second)})
		}, CheckDuplicateWrite, "request r1 answered with 2 different instances", nil},
		{"two attempts alive at once", func(h *History) {
			find(h, "t1").Attempts = 2
			h.Runs[9].Last, h.Runs[9].Ended = at(8*time.Second), "end"
			h.Runs = append(h.Runs, Run{Instance: "t1", Attempt: 2, Executor: "e2", Start: at(6 * time.Second), Last: at(7 * time.Second), Ended: "end", Starts: 1})
		}, CheckOverlap, "ran at once for 1s", nil},
		{"one attempt started twice", func(h *History) { h.Runs[2].Starts = 2 }, CheckOverlap, "attempt 1 started 2 times", nil},
		{"fired before scheduledAt", func(h *History) {
			find(h, "c04").FiredAt = model.Time{Time: at(3 * time.Second)}
		}, CheckEarly, "fired at 10:00:03.000, 1s before", nil},
		{"started before due by the test clock", func(h *History) {
			h.Runs[10].Start = at(4 * time.Second)
		}, CheckEarly, "started at 10:00:04.000, 1s before it was due", nil},
		{"a cron second with no instance", func(h *History) {
			h.Instances = h.Instances[1:]
			h.Runs = h.Runs[1:]
		}, CheckMissed, "1 of the seconds", nil},
		{"firing stalled past the bound", func(h *History) {
			find(h, "c05").FiredAt = model.Time{Time: at(10 * time.Second)}
			h.Runs[4].Start = at(10 * time.Second)
		}, CheckFiringResume, "fired 5s late", nil},
		{"dispatch stalled past the bound", func(h *History) {
			h.Runs[9].Start = at(9 * time.Second)
		}, CheckDispatchResume, "t1 due 10:00:02.010 started 6.99s late", nil},
		{"an instance never finished", func(h *History) {
			find(h, "d1").State = model.StateRunning
		}, CheckStuck, "still RUNNING at 10:00:20.000, 10s after the workload ended (attempts 1, attempt 1 last seen alive at 10:00:05.330)", nil},
		{"an instance never started", func(h *History) {
			find(h, "t1").State = model.StateReady
			h.Runs = append(h.Runs[:9], h.Runs[10:]...)
		}, CheckStuck, "still READY", nil},
		{"a replica lacks a finished instance", func(h *History) {
			delete(h.Replicas["n2"], "c07")
		}, CheckReplicas, "node n2 disagrees on 1 finished instances: c07 missing", nil},
		{"a success the log never saw", func(h *History) {
			h.Runs = h.Runs[:len(h.Runs)-1]
		}, CheckRecorded, "d1 (delayed) succeeded", nil},
		{"a slot busy with no instance holding it", func(h *History) {
			h.Slots = append(h.Slots, SlotCount{Task: "long", Busy: 1})
		}, CheckSlots, "task long: 1 concurrency slots busy, 0 instances hold one (none)", nil},
		{"a run of an attempt never leased", func(h *History) {
			h.Runs[3].Attempt = 0
			h.Runs = append(h.Runs, Run{Instance: h.Runs[3].Instance, Attempt: 1, Executor: "e2", Start: h.Runs[3].Last.Add(time.Second), Last: h.Runs[3].Last.Add(2 * time.Second), Ended: "end", Starts: 1})
		}, CheckPhantom, "ran as attempt 0 on e1", []string{CheckAttemptOrder}},
		{"a lost attempt that never ran", func(h *History) {
			in := find(h, "t1")
			in.Attempts = 2
			in.AttemptList = append(in.AttemptList, model.Attempt{Number: 2, Executor: "e2", Outcome: model.OutcomeLost})
		}, CheckCharged, "attempt 2 on e2 recorded lost (a retry used) but neither the action log nor its executor saw it start", nil},
		{"an attempt number that went down", func(h *History) {
			h.Runs = append(h.Runs, Run{Instance: h.Runs[3].Instance, Attempt: 1, Executor: "e2", Start: h.Runs[3].Last.Add(time.Second),
				Last: h.Runs[3].Last.Add(2 * time.Second), Ended: "end", Starts: 1})
			h.Runs[3].Attempt = 2
			find(h, h.Runs[3].Instance).Attempts = 2
		}, CheckAttemptOrder, "attempt 1 on e2 started at", []string{CheckOverlap}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := cleanHistory()
			tc.break_(h)
			r := Check(h, testBounds)
			got := r.Failed(tc.want)
			if len(got) == 0 {
				t.Fatalf("no %s violation; got %+v", tc.want, r.Violations)
			}
			if !strings.Contains(got[0].Detail, tc.detail) {
				t.Fatalf("%s detail %q, want it to contain %q", tc.want, got[0].Detail, tc.detail)
			}
			for _, v := range r.Violations {
				if v.Check != tc.want && !slices.Contains(tc.also, v.Check) {
					t.Errorf("unexpected %s violation: %s", v.Check, v.Detail)
				}
			}
		})
	}
}

func TestCheck_RunningAtCollectionIsNotStuck(t *testing.T) {
	h := cleanHistory()
	for i := range h.Instances {
		if h.Instances[i].ID == "d1" {
			h.Instances[i].State = model.StateRunning
		}
	}
	h.Runs[10].Last, h.Runs[10].Ended = h.Collected.Add(-time.Second), ""
	if r := Check(h, testBounds); len(r.Violations) != 0 {
		t.Fatalf("got %+v, want none: d1 was running when the history was collected", r.Violations)
	}
}

func TestCheck_SequentialRetryIsNoOverlap(t *testing.T) {
	h := cleanHistory()
	for i := range h.Instances {
		if h.Instances[i].ID == "t1" {
			h.Instances[i].Attempts = 2
		}
	}
	h.Runs[9].Last, h.Runs[9].Ended = at(3*time.Second), ""
	h.Runs = append(h.Runs, Run{Instance: "t1", Attempt: 2, Executor: "e2", Start: at(3100 * time.Millisecond), Last: at(4 * time.Second), Ended: "end", Starts: 1})
	if r := Check(h, testBounds); len(r.Violations) != 0 {
		t.Fatalf("got %+v, want none: attempt 2 started after attempt 1 was last alive", r.Violations)
	}
}

func TestParseRuns(t *testing.T) {
	log := strings.Join([]string{
		"start i1 1 1000000000 e1 long",
		"tick i1 1 1200000000",
		"start i2 1 1300000000 e2 quick",
		"tick i1 1 1400000000",
		"stop i1 1 1450000000",
		"start i1 2 2000000000 e2 long",
		"end i1 2 2500000000",
		"tick i2 1 15", // cut short: a bad line would have fewer fields
		"tick i2",
		"garbage here x y",
	}, "\n")
	runs, bad, err := ParseRuns(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if bad != 2 {
		t.Errorf("bad = %d, want 2", bad)
	}
	want := []Run{
		{Instance: "i1", Attempt: 1, Task: "long", Executor: "e1", Start: time.Unix(1, 0), Last: time.Unix(0, 1450000000), Ended: "stop", Starts: 1},
		{Instance: "i2", Attempt: 1, Task: "quick", Executor: "e2", Start: time.Unix(0, 1300000000), Last: time.Unix(0, 1300000000), Starts: 1},
		{Instance: "i1", Attempt: 2, Task: "long", Executor: "e2", Start: time.Unix(2, 0), Last: time.Unix(0, 2500000000), Ended: "end", Starts: 1},
	}
	if len(runs) != len(want) {
		t.Fatalf("got %d runs %+v, want %d", len(runs), runs, len(want))
	}
	for i := range want {
		g, w := runs[i], want[i]
		if g.Instance != w.Instance || g.Attempt != w.Attempt || g.Executor != w.Executor || g.Task != w.Task || !g.Start.Equal(w.Start) ||
			!g.Last.Equal(w.Last) || g.Ended != w.Ended || g.Starts != w.Starts {
			t.Errorf("run %d = %+v, want %+v", i, g, w)
		}
	}
}

// TestActionScript runs the script for real: a run to completion leaves
// start, ticks and end; a SIGTERM leaves a stop line at once.
func TestActionScript(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "act.sh")
	if err := os.WriteFile(script, []byte(ActionScript), 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "actions.log")
	env := func(id string) []string {
		return append(os.Environ(), "AX_INSTANCE_ID="+id, "AX_ATTEMPT=1", "AX_EXECUTOR=e1", "AX_TASK=t")
	}
	done := exec.Command("/bin/sh", script, logPath, "2", "0.05")
	done.Env = env("full")
	if out, err := done.CombinedOutput(); err != nil {
		t.Fatalf("script: %v: %s", err, out)
	}
	stopped := exec.Command("/bin/sh", script, logPath, "100", "0.1")
	stopped.Env = env("stopped")
	stopped.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := stopped.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		f, err := os.Open(logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		if runs, _, _ := ParseRuns(f); len(runs) != 2 {
			return fmt.Errorf("%d runs in the log, want the second one started", len(runs))
		}
		return nil
	})
	sent := time.Now()
	_ = syscall.Kill(-stopped.Process.Pid, syscall.SIGTERM) // as an executor stops an attempt: the whole group
	_ = stopped.Wait()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, bad, err := ParseRuns(f)
	if err != nil || bad != 0 || len(runs) != 2 {
		t.Fatalf("runs %+v, bad %d, err %v", runs, bad, err)
	}
	if runs[0].Instance != "full" || runs[0].Ended != "end" || runs[0].Executor != "e1" || runs[0].Last.Sub(runs[0].Start) < 100*time.Millisecond {
		t.Errorf("full run %+v, want a 2-tick run to its end", runs[0])
	}
	if runs[1].Instance != "stopped" || runs[1].Ended != "stop" {
		t.Errorf("stopped run %+v, want a stop line", runs[1])
	}
	if d := runs[1].Last.Sub(sent); d > time.Second || d < -time.Second {
		t.Errorf("stop line %s after the SIGTERM, want at once", d)
	}
}

// TestParseLaunched reads the attempts an executor's log says it started
// and how they ended; a lost attempt it launched is no charged-unrun.
func TestParseLaunched(t *testing.T) {
	log := `2026-12-02T20:28:02.609Z [INFO]  ax.executor: attempt started: executor=e2 execution=00ab-2 task=quick
2026-12-02T20:28:02.700Z [INFO]  ax.executor: attempt started: executor=e2 execution=00ab-3 task=quick
2026-12-02T20:28:03.239Z [INFO]  ax.executor: attempt ended: executor=e2 execution=00ab-2 success=false error="stopped: lease lost: not renewed within 2.25s"
2026-12-02T20:28:03.300Z [INFO]  ax.executor: attempt ended: executor=e2 execution=00ab-3 success=true error=""
2026-12-02T20:28:03.400Z [WARN]  ax.executor: heartbeat failed: executor=e2 error="x"
`
	got := map[string]string{}
	if err := ParseLaunched(strings.NewReader(log), got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"00ab-2": "ended: stopped: lease lost: not renewed within 2.25s", "00ab-3": "ended"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	h := cleanHistory()
	for i := range h.Instances {
		if h.Instances[i].ID == "t1" {
			h.Instances[i].Attempts = 2
			h.Instances[i].AttemptList = append(h.Instances[i].AttemptList, model.Attempt{Number: 2, Executor: "e2", Outcome: model.OutcomeLost})
		}
	}
	h.Launched = map[string]string{"t1-2": "ended: stopped: lease lost"}
	if v := Check(h, testBounds).Failed(CheckCharged); len(v) != 0 {
		t.Fatalf("a lost attempt its executor launched: %+v, want no violation", v)
	}
}

// shardedHistory is cleanHistory with a sharded instance s1 of two
// shards (s1a, s1b), each run once, and the instance a success.
func shardedHistory() *History {
	h := cleanHistory()
	due := at(3 * time.Second)
	h.Instances = append(h.Instances, model.Instance{ID: "s1", Task: "sharded", Source: model.SourceAPI, IdempotencyKey: "s-1",
		State: model.StateSuccess, ScheduledAt: model.Time{Time: due}, FiredAt: model.Time{Time: due},
		Shards: &model.ShardSummary{Total: 2, ByState: map[string]int{model.StateSuccess: 2}}})
	h.Acks = append(h.Acks, Ack{Kind: "trigger", Task: "sharded", Key: "s-1", Request: "r9", ID: "s1", At: due})
	for i, id := range []string{"s1a", "s1b"} {
		addRun(h, model.Instance{ID: id, Task: "sharded", Source: model.SourceAPI, IdempotencyKey: "s-1", Parent: "s1",
			Shard: &model.ShardRef{Index: i, Total: 2}, ScheduledAt: model.Time{Time: due}, FiredAt: model.Time{Time: due}},
			due.Add(50*time.Millisecond))
	}
	for _, states := range h.Replicas {
		states["s1"] = model.StateSuccess
	}
	return h
}

// TestCheckShards: the history checker knows shards: a sharded instance
// and its shards (which share its key and fire time, and which alone
// run) keep every promise; a shard with two successes, a success with a
// failed shard, a failure whose shards all succeeded and a missing shard
// are each caught.
func TestCheckShards(t *testing.T) {
	if r := Check(shardedHistory(), Bounds{}); len(r.Violations) > 0 {
		t.Fatalf("a clean sharded history: %v", r.Violations)
	}
	find := func(h *History, id string) *model.Instance {
		for i := range h.Instances {
			if h.Instances[i].ID == id {
				return &h.Instances[i]
			}
		}
		t.Fatalf("no instance %s", id)
		return nil
	}
	for _, tt := range []struct {
		name   string
		mutate func(*History)
		want   string
	}{
		{"a shard succeeded twice", func(h *History) {
			s := find(h, "s1b")
			s.Attempts = 2
			s.AttemptList = []model.Attempt{{Number: 1, Outcome: model.OutcomeSuccess}, {Number: 2, Outcome: model.OutcomeSuccess}}
		}, "shard s1b of instance s1: 2 successful attempts, want exactly 1"},
		{"a success with a failed shard", func(h *History) {
			find(h, "s1a").State = model.StateFailed
		}, "instance s1 ended SUCCESS with 1 of its 2 shards successful"},
		{"a failure whose shards succeeded", func(h *History) {
			find(h, "s1").State = model.StateFailed
		}, "instance s1 ended FAILED with 2 of its 2 shards successful"},
		{"a missing shard", func(h *History) {
			h.Instances = h.Instances[:len(h.Instances)-1]
		}, "instance s1 (sharded) SUCCESS with 2 shards, 1 found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := shardedHistory()
			tt.mutate(h)
			r := Check(h, Bounds{})
			found := false
			for _, v := range r.Failed(CheckShards) {
				found = found || strings.Contains(v.Detail, tt.want)
			}
			if !found {
				t.Errorf("want a %s violation %q, got %v", CheckShards, tt.want, r.Violations)
			}
		})
	}
}

// TestCheckPools: a pool whose counts at the end differ from its task's
// instances that hold or wait for a slot (a slot leaked by a leader
// change, or counted twice) is a slot-leak violation; counts that agree
// are not.
func TestCheckPools(t *testing.T) {
	h := cleanHistory()
	h.Pools = []PoolCount{{Pool: "p", Task: "long", Busy: 0}}
	if r := Check(h, Bounds{}); len(r.Failed(CheckSlots)) > 0 {
		t.Fatalf("agreeing counts: %v", r.Violations)
	}
	h.Pools[0].Busy = 1
	r := Check(h, Bounds{})
	if v := r.Failed(CheckSlots); len(v) != 1 || !strings.Contains(v[0].Detail, "pool p: 1 slots busy and 0 waiting, while 0 instances hold one") {
		t.Errorf("a leaked pool slot: %v", r.Violations)
	}
}
