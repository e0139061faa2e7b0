package fsm

import (
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

func shellTask(name, command string) model.Task {
	t := eventTask(name, model.Policy{MaxConcurrency: 1000})
	t.Action.Command = command
	return t
}

func withRollout(t model.Task, percent, after int, abort *bool, labels map[string]string) model.Task {
	t.Rollout = &model.RolloutSpec{Percent: percent, PromoteAfter: after, AbortOnFailure: abort, TestLabels: labels}
	return t
}

func (fx *policyFixture) rollout(task string) *model.Rollout {
	fx.t.Helper()
	ro, err := fx.f.Rollout(task)
	if err != nil {
		fx.t.Fatal(err)
	}
	return ro
}

// job leases id and returns the job its executor gets.
func (fx *policyFixture) job(id uint64) model.Job {
	fx.t.Helper()
	fx.do(CmdLease, "", Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 10_000})
	jobs, err := fx.f.Jobs([]AttemptRef{{ID: id, Attempt: fx.inst(id).Attempts}})
	if err != nil || len(jobs) != 1 {
		fx.t.Fatalf("jobs of %d: %v %v", id, jobs, err)
	}
	return jobs[0]
}

func (fx *policyFixture) taskEvents(task string) string {
	fx.t.Helper()
	evs, err := fx.f.TaskEvents(task)
	if err != nil {
		fx.t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Events {
		out = append(out, e.Type)
	}
	return strings.Join(out, " ")
}

// triggerSplit triggers task until it has n canary and at least one
// stable instance, and returns both.
func (fx *policyFixture) triggerSplit(task string, n int) (canary, stable []uint64) {
	fx.t.Helper()
	for i := 0; i < 200 && (len(canary) < n || len(stable) == 0); i++ {
		id := fx.trigger(task)
		if fx.inst(id).Canary {
			canary = append(canary, id)
		} else {
			stable = append(stable, id)
		}
	}
	if len(canary) < n || len(stable) == 0 {
		fx.t.Fatalf("200 triggers at 50%%: %d canaries, %d stable", len(canary), len(stable))
	}
	return canary, stable
}

// TestFSM_RolloutPromote: a change at 50% with promoteAfter 3 keeps the
// stable version as the task; its canary fires record the canary version
// and run its command, the others the stable one; three canary successes
// promote it (a new version with the canary's definition), and fires
// after it are plain.
func TestFSM_RolloutPromote(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.mustPut(shellTask("a", "echo stable"))
	fx.mustPut(shellTask("a", "echo stable 2")) // version 2
	var wr model.WriteResult
	if err := fx.put(withRollout(shellTask("a", "echo canary"), 50, 3, nil, nil)).Decode(&wr); err != nil || wr.Version != 3 || !wr.Changed {
		t.Fatalf("put with a rollout: %+v %v, want version 3", wr, err)
	}
	if tk, _ := fx.f.GetTask("a"); tk.Version != 2 || tk.Action.Command != "echo stable 2" || tk.Rollout != nil {
		t.Fatalf("task during the rollout: version %d %q, want the stable version 2", tk.Version, tk.Action.Command)
	}
	ro := fx.rollout("a")
	if ro.Phase != model.RolloutProgressing || ro.Stable != 2 || ro.Canary != 3 || ro.Percent != 50 || ro.PromoteAfter != 3 || !ro.AbortOnFailure {
		t.Fatalf("rollout %+v", ro)
	}
	canary, stable := fx.triggerSplit("a", 4)
	for _, id := range canary {
		if in := fx.inst(id); in.TaskVersion != 3 {
			t.Errorf("canary instance version %d, want 3", in.TaskVersion)
		}
	}
	for _, id := range stable {
		if in := fx.inst(id); in.TaskVersion != 2 || in.Canary {
			t.Errorf("stable instance %+v, want version 2, not canary", in)
		}
	}
	if ro := fx.rollout("a"); ro.Fires != uint64(len(canary)) {
		t.Errorf("canary fires %d, want %d", ro.Fires, len(canary))
	}
	if j := fx.job(stable[0]); j.Action.Command != "echo stable 2" {
		t.Errorf("stable job runs %q", j.Action.Command)
	}
	fx.complete(stable[0], true, "")
	for i, id := range canary[:3] {
		if j := fx.job(id); j.Action.Command != "echo canary" {
			t.Errorf("canary job runs %q", j.Action.Command)
		}
		fx.complete(id, true, "")
		if ro := fx.rollout("a"); i < 2 && (ro.Phase != model.RolloutProgressing || ro.Successes != uint64(i+1)) {
			t.Errorf("after %d canary successes: %+v", i+1, ro)
		}
	}
	ro = fx.rollout("a")
	if ro.Phase != model.RolloutPromoted || ro.Successes != 3 || ro.Promoted != 4 || !strings.Contains(ro.Reason, "3 canary fires succeeded") {
		t.Fatalf("after 3 canary successes: %+v, want promoted as version 4", ro)
	}
	tk, _ := fx.f.GetTask("a")
	if tk.Version != 4 || tk.Action.Command != "echo canary" {
		t.Errorf("task after the promotion: version %d %q", tk.Version, tk.Action.Command)
	}
	h, _ := fx.f.TaskHistory("a")
	var ops []string
	for _, v := range h.Versions {
		ops = append(ops, v.Op)
	}
	if got := strings.Join(ops, " "); got != "create update canary promote" {
		t.Errorf("history ops %q", got)
	}
	if got := fx.taskEvents("a"); got != "rollout_started promoted" {
		t.Errorf("task events %q", got)
	}
	// The fourth canary, created before the promotion, runs what the task
	// is now; new fires are plain.
	if j := fx.job(canary[3]); j.Action.Command != "echo canary" {
		t.Errorf("a canary instance after the promotion runs %q", j.Action.Command)
	}
	if in := fx.inst(fx.trigger("a")); in.Canary || in.TaskVersion != 4 {
		t.Errorf("a fire after the promotion: canary %v version %d", in.Canary, in.TaskVersion)
	}
}

// TestFSM_RolloutRollback: a failed canary rolls back: the stable version
// stays, a rollback event and a firing rollback alert; a canary instance
// created before it runs the stable version. The alert resolves when a
// later rollout of the task is promoted.
func TestFSM_RolloutRollback(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.mustPut(shellTask("a", "echo stable"))
	fx.mustPut(withRollout(shellTask("a", "exit 1"), 50, 3, nil, nil))
	canary, _ := fx.triggerSplit("a", 2)
	fx.job(canary[0])
	fx.complete(canary[0], false, "")
	ro := fx.rollout("a")
	if ro.Phase != model.RolloutRolledBack || ro.Failures != 1 || !strings.Contains(ro.Reason, "failed: exit 3") || ro.EndedAt == nil {
		t.Fatalf("after a canary failure: %+v", ro)
	}
	if tk, _ := fx.f.GetTask("a"); tk.Version != 1 || tk.Action.Command != "echo stable" {
		t.Errorf("task after the rollback: version %d %q", tk.Version, tk.Action.Command)
	}
	if got := fx.taskEvents("a"); got != "rollout_started rollback" {
		t.Errorf("task events %q", got)
	}
	al, ok := fx.f.FiringAlert("rollback:a")
	if !ok || al.Rule != "rollback" || al.Severity != model.SeverityCritical || al.Subject.Task != "a" || !strings.Contains(al.Summary, "rolled back to stable version 1") {
		t.Fatalf("rollback alert: %+v %v", al, ok)
	}
	if j := fx.job(canary[1]); j.Action.Command != "echo stable" {
		t.Errorf("a canary instance after the rollback runs %q, want the stable command", j.Action.Command)
	}
	if in := fx.inst(fx.trigger("a")); in.Canary {
		t.Error("a fire after the rollback is a canary")
	}
	// A plain update goes on from the last version, past the canary's.
	var wr model.WriteResult
	if err := fx.put(shellTask("a", "echo fixed")).Decode(&wr); err != nil || wr.Version != 3 {
		t.Fatalf("update after a rollback: %+v %v, want version 3", wr, err)
	}
	fx.mustPut(withRollout(shellTask("a", "echo better"), 100, 1, nil, nil))
	fx.run(fx.trigger("a"), true, "")
	if ro := fx.rollout("a"); ro.Phase != model.RolloutPromoted {
		t.Fatalf("second rollout: %+v", ro)
	}
	if _, ok := fx.f.FiringAlert("rollback:a"); ok {
		t.Error("the rollback alert still fires after a later promotion")
	}
}

// TestFSM_RolloutAbortOnFailureFalse: with abortOnFailure false a canary
// failure is counted and the rollout goes on to its promotion.
func TestFSM_RolloutAbortOnFailureFalse(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.mustPut(shellTask("a", "echo stable"))
	off := false
	fx.mustPut(withRollout(shellTask("a", "echo canary"), 100, 2, &off, nil))
	c1, c2, c3 := fx.trigger("a"), fx.trigger("a"), fx.trigger("a")
	fx.run(c1, false, "")
	if ro := fx.rollout("a"); ro.Phase != model.RolloutProgressing || ro.Failures != 1 || ro.AbortOnFailure {
		t.Fatalf("after a failure: %+v, want still progressing", ro)
	}
	fx.run(c2, true, "")
	fx.run(c3, true, "")
	if ro := fx.rollout("a"); ro.Phase != model.RolloutPromoted || ro.Successes != 2 || ro.Failures != 1 {
		t.Fatalf("after two successes: %+v", ro)
	}
	if _, ok := fx.f.FiringAlert("rollback:a"); ok {
		t.Error("an alert without a rollback")
	}
}

// TestFSM_RolloutCommands: promote_rollout and abort_rollout by hand;
// both refused without a rollout in progress; a put without a rollout
// refused while one progresses, one with a rollout replacing the canary
// (counts reset); pause and resume keep it going; delete drops it; a
// rollout refused below protocol 8; a bad spec names its field.
func TestFSM_RolloutCommands(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.mustPut(shellTask("a", "echo stable"))
	for _, typ := range []CommandType{CmdPromoteRollout, CmdAbortRollout} {
		if r := fx.do(typ, "", TaskRef{Name: "a"}); r.Err == nil || r.Err.Code != model.CodePrecondition {
			t.Errorf("%s without a rollout: %v", typ, r.Err)
		}
	}
	if r := fx.do(CmdPromoteRollout, "", TaskRef{Name: "nope"}); r.Err == nil || r.Err.Code != model.CodeNotFound {
		t.Errorf("promote of a missing task: %v", r.Err)
	}
	fx.mustPut(withRollout(shellTask("a", "echo c1"), 100, 5, nil, nil)) // version 2
	fx.run(fx.trigger("a"), true, "")
	if r := fx.put(shellTask("a", "echo plain")); r.Err == nil || r.Err.Code != model.CodeConflict || r.Err.Field != "rollout" {
		t.Fatalf("a plain put during a rollout: %v, want a conflict on rollout", r.Err)
	}
	// The same canary again changes nothing; another replaces it.
	var wr model.WriteResult
	if err := fx.put(withRollout(shellTask("a", "echo c1"), 100, 5, nil, nil)).Decode(&wr); err != nil || wr.Changed || wr.Version != 1 {
		t.Errorf("the same rollout again: %+v %v", wr, err)
	}
	if err := fx.put(withRollout(shellTask("a", "echo c2"), 100, 5, nil, nil)).Decode(&wr); err != nil || wr.Version != 3 {
		t.Fatalf("a replacing rollout: %+v %v", wr, err)
	}
	if ro := fx.rollout("a"); ro.Canary != 3 || ro.Successes != 0 || ro.Stable != 1 {
		t.Errorf("replaced rollout %+v", ro)
	}
	fx.do(CmdPauseTask, "", TaskRef{Name: "a"})
	if tk, _ := fx.f.GetTask("a"); tk.Version != 4 || !tk.Paused {
		t.Fatalf("pause during a rollout: version %d, want 4 (past the canary's)", tk.Version)
	}
	fx.do(CmdResumeTask, "", TaskRef{Name: "a"})
	if ro := fx.rollout("a"); ro.Stable != 5 || !ro.Active() {
		t.Errorf("rollout after pause and resume: %+v", ro)
	}
	if r := fx.do(CmdPromoteRollout, "", TaskRef{Name: "a"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	tk, _ := fx.f.GetTask("a")
	if ro := fx.rollout("a"); ro.Phase != model.RolloutPromoted || tk.Action.Command != "echo c2" || tk.Version != 6 || !strings.Contains(ro.Reason, "promoted by") {
		t.Errorf("promoted by hand: %+v, task %q v%d", ro, tk.Action.Command, tk.Version)
	}
	fx.mustPut(withRollout(shellTask("a", "echo c3"), 100, 5, nil, nil))
	if r := fx.do(CmdAbortRollout, "", TaskRef{Name: "a"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if tk, _ := fx.f.GetTask("a"); fx.rollout("a").Phase != model.RolloutAborted || tk.Action.Command != "echo c2" || tk.Paused {
		t.Errorf("aborted: %+v, task %q", fx.rollout("a"), tk.Action.Command)
	}
	if got := fx.taskEvents("a"); !strings.HasSuffix(got, "rollout_aborted") {
		t.Errorf("events %q", got)
	}
	fx.mustPut(withRollout(shellTask("a", "echo c4"), 100, 5, nil, nil))
	fx.do(CmdDeleteTask, "", TaskRef{Name: "a"})
	if _, err := fx.f.Rollout("a"); err == nil {
		t.Error("a deleted task's rollout is still there")
	}
	if r := fx.put(withRollout(shellTask("b", "x"), 100, 0, nil, nil)); r.Err == nil || r.Err.Field != "rollout.promoteAfter" {
		t.Errorf("promoteAfter 0: %v", r.Err)
	}
	if r := fx.put(withRollout(shellTask("b", "x"), 101, 1, nil, nil)); r.Err == nil || r.Err.Field != "rollout.percent" {
		t.Errorf("percent 101: %v", r.Err)
	}
	old := newPolicyFixture(t, 7)
	old.mustPut(shellTask("a", "echo stable"))
	if r := old.put(withRollout(shellTask("a", "x"), 50, 1, nil, nil)); r.Err == nil || r.Err.Field != "rollout" || r.Err.Code != model.CodePrecondition {
		t.Errorf("a rollout at protocol 7: %v", r.Err)
	}
}

// TestFSM_RolloutNewTask: a new task with testLabels: every fire is a
// canary, routed to executors carrying the test labels beside its
// executorLabels; its promotion keeps the definition and drops the test
// labels; a failing new task is paused, with the rollback alert.
func TestFSM_RolloutNewTask(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	tk := shellTask("n", "echo new")
	tk.Policy.ExecutorLabels = map[string]string{"zone": "a"}
	fx.mustPut(withRollout(tk, 0, 2, nil, map[string]string{"env": "test"}))
	ro := fx.rollout("n")
	if ro.Stable != 0 || ro.Canary != 1 || ro.Percent != 100 {
		t.Fatalf("new task's rollout %+v", ro)
	}
	ct, err := fx.f.CanaryTask("n")
	if err != nil || ct.Policy.ExecutorLabels["env"] != "test" || ct.Policy.ExecutorLabels["zone"] != "a" {
		t.Fatalf("canary route %+v %v", ct, err)
	}
	for i := 0; i < 2; i++ {
		id := fx.trigger("n")
		if !fx.inst(id).Canary {
			t.Fatal("a new task's fire is not a canary")
		}
		if f, err := fx.f.InstanceWhy(id); err != nil || f.Labels["env"] != "test" {
			t.Errorf("why facts of a READY canary: labels %v %v, want the test labels", f.Labels, err)
		}
		if j := fx.job(id); j.Policy.ExecutorLabels["env"] != "test" {
			t.Errorf("canary job labels %v", j.Policy.ExecutorLabels)
		}
		fx.complete(id, true, "")
	}
	if ro := fx.rollout("n"); ro.Phase != model.RolloutPromoted || ro.Promoted != 1 {
		t.Fatalf("after 2 successes: %+v", ro)
	}
	if ct, _ := fx.f.CanaryTask("n"); ct.Policy.ExecutorLabels["env"] != "" {
		t.Errorf("route after the promotion %v", ct.Policy.ExecutorLabels)
	}

	fx.mustPut(withRollout(shellTask("m", "exit 1"), 0, 2, nil, map[string]string{"env": "test"}))
	fx.run(fx.trigger("m"), false, "")
	if tk, _ := fx.f.GetTask("m"); !tk.Paused || fx.rollout("m").Phase != model.RolloutRolledBack {
		t.Errorf("a new task's failed canary: paused %v, %+v", tk.Paused, fx.rollout("m"))
	}
	if al, ok := fx.f.FiringAlert("rollback:m"); !ok || !strings.Contains(al.Summary, "paused") {
		t.Errorf("alert %+v %v", al, ok)
	}
}

// TestCanaryPick: the split is a function of task and fire time alone,
// and near the percent over fire times a second apart.
func TestCanaryPick(t *testing.T) {
	for _, p := range []int{1, 10, 50, 90} {
		n := 0
		const fires = 20_000
		for i := int64(0); i < fires; i++ {
			at := t0 + i*1000
			got := CanaryPick("nightly-report", at, p)
			if got != CanaryPick("nightly-report", at, p) {
				t.Fatal("not deterministic")
			}
			if got {
				n++
			}
		}
		share := float64(n) * 100 / fires
		if share < float64(p)-1.5 || share > float64(p)+1.5 {
			t.Errorf("percent %d: %.2f%% of %d fires picked", p, share, fires)
		}
	}
	if CanaryPick("a", t0, 0) || !CanaryPick("a", t0, 100) {
		t.Error("0% picks, or 100% does not")
	}
}

// TestRecord_Canary: the canary flag round-trips as a trailing field; a
// record without it is encoded as before.
func TestRecord_Canary(t *testing.T) {
	for _, r := range []record{
		{ID: 1, State: stReady, Task: "a", TaskVersion: 3, Canary: true},
		{ID: 2, State: stReady, Task: "a", Pool: "p", Canary: true, Executor: "e"},
		{ID: 3, State: stReady, Task: "a", Pool: "p"},
	} {
		b := r.encode()
		got, err := decodeRecord(r.ID, b)
		if err != nil || got.Canary != r.Canary || got.Pool != r.Pool || got.TaskVersion != r.TaskVersion {
			t.Errorf("round trip of %+v: %+v %v", r, got, err)
		}
		plain := r
		plain.Canary = false
		if pb := plain.encode(); r.Canary && (len(b) != len(pb)+1 && len(pb) > 40) {
			t.Errorf("canary flag costs %d bytes", len(b)-len(pb))
		}
	}
	plain := record{ID: 4, State: stReady, Task: "a"}
	if b := plain.encode(); len(b) > 30 {
		t.Errorf("a pending record without the flag grew to %d bytes", len(b))
	}
}

// TestFSM_RolloutReplacedCanary: a canary instance of a canary that was
// replaced before it ran runs the stable version, and its success
// counts for no rollout.
func TestFSM_RolloutReplacedCanary(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.mustPut(shellTask("a", "echo stable"))
	fx.mustPut(withRollout(shellTask("a", "echo c1"), 100, 1, nil, nil))
	old := fx.trigger("a")
	fx.mustPut(withRollout(shellTask("a", "echo c2"), 100, 1, nil, nil))
	if j := fx.job(old); j.Action.Command != "echo stable" {
		t.Errorf("a canary of the replaced canary runs %q, want the stable command", j.Action.Command)
	}
	fx.complete(old, true, "")
	if ro := fx.rollout("a"); ro.Phase != model.RolloutProgressing || ro.Successes != 0 || ro.Canary != 3 {
		t.Errorf("rollout after the old canary's success: %+v, want the replacement untouched", ro)
	}
	if got := fx.taskEvents("a"); got != "rollout_started rollout_started" {
		t.Errorf("events %q", got)
	}
}
