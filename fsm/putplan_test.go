package fsm

import (
	"errors"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// TestFSM_PutTaskKeepPaused checks that from protocol 5 a put with
// KeepPaused leaves paused as it is (a re-apply of a paused task is
// unchanged and stays paused) and answers Created, and that before it the
// flag is ignored, as a replica of the previous release ignores it.
func TestFSM_PutTaskKeepPaused(t *testing.T) {
	tests := []struct {
		name  string
		proto int
		// after pausing "a", a put of the same definition with KeepPaused
		wantChanged, wantPaused bool
		wantCreated             bool
	}{
		{"protocol 4: paused comes from the body", 4, true, false, false},
		{"protocol 5: paused is kept", 5, false, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newPolicyFixture(t, tt.proto)
			put := func(task model.Task, keep bool) model.WriteResult {
				t.Helper()
				return writeResult(t, fx.do(CmdPutTask, "", PutTask{Task: task, KeepPaused: keep}))
			}
			w := put(cronTask("a", "* * * * *"), true)
			if !w.Changed || w.Created != tt.wantCreated {
				t.Fatalf("create: got %+v, want changed, created %v", w, tt.wantCreated)
			}
			writeResult(t, fx.do(CmdPauseTask, "", TaskRef{Name: "a"}))
			w = put(cronTask("a", "* * * * *"), true)
			got, err := fx.f.GetTask("a")
			if err != nil {
				t.Fatal(err)
			}
			if w.Changed != tt.wantChanged || got.Paused != tt.wantPaused || w.Created {
				t.Fatalf("re-put of a paused task: got %+v paused %v, want changed %v paused %v, not created", w, got.Paused, tt.wantChanged, tt.wantPaused)
			}

			// A change of the definition keeps paused too.
			w = put(cronTask("a", "*/5 * * * *"), true)
			if got, _ = fx.f.GetTask("a"); !w.Changed || got.Paused != tt.wantPaused || got.Trigger.Expression != "*/5 * * * *" {
				t.Fatalf("update: got %+v, stored paused %v %q, want changed, paused %v", w, got.Paused, got.Trigger.Expression, tt.wantPaused)
			}

			// Without KeepPaused the body decides: paused, then not.
			paused := cronTask("a", "*/5 * * * *")
			paused.Paused = true
			put(paused, false)
			if got, _ = fx.f.GetTask("a"); !got.Paused {
				t.Fatal("an explicit paused=true did not pause")
			}
			put(cronTask("a", "*/5 * * * *"), false)
			if got, _ = fx.f.GetTask("a"); got.Paused {
				t.Fatal("an explicit paused=false did not resume")
			}

			// A new task put with KeepPaused starts active whatever the
			// body says, from protocol 5.
			paused.Name = "b"
			put(paused, true)
			if got, _ = fx.f.GetTask("b"); got.Paused != !tt.wantPaused {
				t.Fatalf("new task with KeepPaused and paused=true: paused %v, want %v", got.Paused, !tt.wantPaused)
			}
		})
	}
}

// TestFSM_PlanPutTask checks the dry run of a put: the same verdict as
// the put (create, update, unchanged, refusals), the normalized definition,
// and nothing written.
func TestFSM_PlanPutTask(t *testing.T) {
	fx := newPolicyFixture(t, ProtoVersion)
	fx.mustPut(cronTask("a", "* * * * *"))
	writeResult(t, fx.do(CmdPauseTask, "", TaskRef{Name: "a"}))

	withVersion := func(task model.Task, v uint64) model.Task { task.Version = v; return task }
	paused := func(task model.Task) model.Task { task.Paused = true; return task }
	tests := []struct {
		name        string
		body        PutTask
		wantOp      string
		wantPaused  bool
		wantVersion uint64
		wantErr     error
	}{
		{"new task", PutTask{Task: cronTask("b", "0 * * * *"), KeepPaused: true}, model.PlanCreate, false, 0, nil},
		{"same definition, paused kept", PutTask{Task: cronTask("a", "* * * * *"), KeepPaused: true}, model.PlanUnchanged, true, 2, nil},
		{"same definition, paused given", PutTask{Task: paused(cronTask("a", "* * * * *"))}, model.PlanUnchanged, true, 2, nil},
		{"same definition, resumed by the body", PutTask{Task: cronTask("a", "* * * * *")}, model.PlanUpdate, false, 2, nil},
		{"new schedule", PutTask{Task: cronTask("a", "*/5 * * * *"), KeepPaused: true}, model.PlanUpdate, true, 2, nil},
		{"current version as precondition", PutTask{Task: withVersion(cronTask("a", "*/5 * * * *"), 2), KeepPaused: true}, model.PlanUpdate, true, 2, nil},
		{"stale version", PutTask{Task: withVersion(cronTask("a", "*/5 * * * *"), 1), KeepPaused: true}, "", false, 0, model.ErrConflict},
		{"bad cron", PutTask{Task: cronTask("a", "61 * * * *")}, "", false, 0, model.ErrInvalid},
		{"dependsOn cycle", PutTask{Task: model.Task{Name: "a", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *"},
			Action: model.Action{Type: model.ActionShell, Command: "x"}, Policy: model.Policy{DependsOn: []string{"a"}}}}, "", false, 0, model.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cmd(t, CmdPutTask, "", fx.now+1, tt.body)
			p, err := fx.f.PlanPutTask(c)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %+v, %v; want %v", p, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Op != tt.wantOp || p.Task.Paused != tt.wantPaused || p.Version != tt.wantVersion || p.Name != tt.body.Task.Name {
				t.Fatalf("got op %s paused %v version %d name %s, want %s %v %d %s", p.Op, p.Task.Paused, p.Version, p.Name, tt.wantOp, tt.wantPaused, tt.wantVersion, tt.body.Task.Name)
			}
			if (p.Current == nil) != (tt.wantOp == model.PlanCreate) {
				t.Fatalf("current %+v with op %s", p.Current, p.Op)
			}
			if p.Task.Policy.MaxConcurrency != 1 || p.Task.Trigger.Timezone != "UTC" || p.Task.Version != 0 || !p.Task.CreatedAt.IsZero() {
				t.Fatalf("task not normalized or has server fields: %+v", p.Task)
			}
		})
	}

	// Nothing was written: "a" is still at version 2, paused, every
	// minute; "b" does not exist.
	got, err := fx.f.GetTask("a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || !got.Paused || got.Trigger.Expression != "* * * * *" {
		t.Fatalf("after the dry runs: %+v", got)
	}
	if _, err := fx.f.GetTask("b"); !errors.Is(err, model.ErrNotFound) {
		t.Fatalf("b: got %v, want not found", err)
	}

	// A relative one-shot is pinned to the command's time, as apply would.
	once := model.Task{Name: "o", Trigger: model.Trigger{Type: model.TriggerOnce, Delay: model.Duration(60e9)}, Action: model.Action{Type: model.ActionShell, Command: "x"}}
	p, err := fx.f.PlanPutTask(cmd(t, CmdPutTask, "", t0, PutTask{Task: once}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Task.Trigger.At == nil || p.Task.Trigger.At.Millis() != t0+60_000 || p.Task.Trigger.Delay != 0 {
		t.Fatalf("once: got %+v, want at t0+60s", p.Task.Trigger)
	}
	if _, err := fx.f.PlanPutTask(cmd(t, CmdDeleteTask, "", t0, TaskRef{Name: "a"})); !errors.Is(err, model.ErrInvalid) {
		t.Fatalf("plan of a delete: got %v, want invalid", err)
	}
}
