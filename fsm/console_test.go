package fsm

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// listIDs lists instances with flt, following cursors, and returns the
// ids in order.
func listIDs(t *testing.T, f *FSM, flt model.InstanceFilter) []uint64 {
	t.Helper()
	var out []uint64
	for page := 0; page < 100; page++ {
		l, err := f.ListInstances(flt)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range l.Instances {
			id, _ := model.ParseID(in.ID)
			out = append(out, id)
		}
		if l.NextCursor == "" {
			return out
		}
		flt.Cursor = l.NextCursor
	}
	t.Fatal("more than 100 pages")
	return nil
}

// TestFSM_ListInstancesFilters: source and until select, an active state
// walks the active index (newest first, with cursor paging) and keeps
// the other filters.
func TestFSM_ListInstancesFilters(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 100})
	trig := []uint64{fx.trigger(), fx.trigger(), fx.trigger()} // source api, READY
	fx.now += 1000
	split := fx.now
	sub := fx.ready(3) // source delay, READY
	fx.lease(sub[0])   // RUNNING
	fx.lease(trig[0])
	fx.complete(trig[0], true, false) // SUCCESS
	rev := func(ids ...uint64) []uint64 {
		out := append([]uint64(nil), ids...)
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	tests := []struct {
		name string
		flt  model.InstanceFilter
		want []uint64
	}{
		{"READY, paged by 1", model.InstanceFilter{State: model.StateReady, Limit: 1}, rev(trig[1], trig[2], sub[1], sub[2])},
		{"READY of source api", model.InstanceFilter{State: model.StateReady, Source: model.SourceAPI}, rev(trig[1], trig[2])},
		{"READY created before split", model.InstanceFilter{State: model.StateReady, Until: model.UnixMilli(split)}, rev(trig[1], trig[2])},
		{"READY since split", model.InstanceFilter{State: model.StateReady, Since: model.UnixMilli(split)}, rev(sub[1], sub[2])},
		{"RUNNING of the task", model.InstanceFilter{State: model.StateRunning, Task: "job"}, []uint64{sub[0]}},
		{"READY of another task", model.InstanceFilter{State: model.StateReady, Task: "other"}, nil},
		{"source delay", model.InstanceFilter{Source: model.SourceDelay, Limit: 2}, rev(sub...)},
		{"task and until", model.InstanceFilter{Task: "job", Until: model.UnixMilli(split)}, rev(trig...)},
		{"SUCCESS (not active)", model.InstanceFilter{State: model.StateSuccess}, []uint64{trig[0]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := listIDs(t, fx.f, tt.flt); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFSM_TaskSummaries: the runs of each task newest first, SCHEDULED
// instances left out, at most runs.
func TestFSM_TaskSummaries(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 100})
	writeResult(t, fx.a.apply(cmd(t, CmdPutTask, "", fx.now, PutTask{Task: wideTask("idle")})))
	ids := []uint64{fx.trigger(), fx.trigger(), fx.trigger()}
	fx.now += 10
	fx.a.apply(submitCmd(t, "job", fx.now, SubmitItem{DelayMs: 60_000}))
	fx.lease(ids[2])
	fx.complete(ids[2], true, false)
	tests := []struct {
		runs int
		want []string
	}{
		{1, []string{model.FormatID(ids[2]) + " SUCCESS api"}},
		{30, []string{model.FormatID(ids[2]) + " SUCCESS api", model.FormatID(ids[1]) + " READY api", model.FormatID(ids[0]) + " READY api"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("runs=", tt.runs), func(t *testing.T) {
			l, err := fx.f.TaskSummaries(model.TaskFilter{}, tt.runs)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Tasks) != 2 || l.Tasks[0].Name != "idle" || len(l.Tasks[0].Summary.RecentRuns) != 0 || l.Tasks[0].Summary.LastRun != nil {
				t.Fatalf("tasks %+v", l.Tasks)
			}
			s := l.Tasks[1].Summary
			var got []string
			for _, r := range s.RecentRuns {
				got = append(got, r.ID+" "+r.State+" "+r.Source)
			}
			if !reflect.DeepEqual(got, tt.want) || s.LastRun == nil || s.LastRun.ID != model.FormatID(ids[2]) || s.LastRun.FinishedAt.IsZero() {
				t.Errorf("runs %q last %+v, want %q", got, s.LastRun, tt.want)
			}
		})
	}
}

// TestFSM_ScanTask: every instance of the task, oldest first, with its
// scheduled time; a missing task is not found.
func TestFSM_ScanTask(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 100})
	writeResult(t, fx.a.apply(cmd(t, CmdPutTask, "", fx.now, PutTask{Task: wideTask("other")})))
	fx.trigger()
	fx.now += 10
	fx.a.apply(submitCmd(t, "other", fx.now, SubmitItem{}))
	fx.a.apply(submitCmd(t, "job", fx.now, SubmitItem{DelayMs: 60_000}, SubmitItem{AtMs: t0 + 3_600_000}))
	var got []string
	if err := fx.f.ScanTask("job", func(b Brief) { got = append(got, fmt.Sprint(b.State, " ", b.Source, " ", b.ScheduledAt-t0)) }); err != nil {
		t.Fatal(err)
	}
	want := []string{"READY api 10", "SCHEDULED delay 60020", "SCHEDULED delay 3600000"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := fx.f.ScanTask("nope", func(Brief) {}); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("missing task: %v, want not found", err)
	}
}

// TestFSM_InstanceWhy: the facts behind BLOCKED (dependsOn from the
// waiting index, or slots), RETRYING and mid-run approval.
func TestFSM_InstanceWhy(t *testing.T) {
	t.Run("dependsOn", func(t *testing.T) {
		fx := newExecFixture(t, model.Policy{})
		for _, n := range []string{"up1", "up2"} {
			writeResult(t, fx.a.apply(cmd(t, CmdPutTask, "", fx.now, PutTask{Task: wideTask(n)})))
		}
		down := cronTask("down", "0 2 * * *")
		down.Policy.DependsOn = []string{"up1", "up2"}
		writeResult(t, fx.a.apply(cmd(t, CmdPutTask, "", fx.now, PutTask{Task: down})))
		var s model.Submitted
		if err := fx.do(CmdTrigger, Trigger{Task: "up2", Date: "2026-11-30", Source: model.SourceCron}).Decode(&s); err != nil {
			t.Fatal(err)
		}
		up2, _ := model.ParseID(s.ID)
		fx.lease(up2)
		fx.do(CmdComplete, Complete{ID: up2, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: true}})
		r := fx.do(CmdFire, Fire{Tasks: []TaskFire{{Task: "down", Version: 1, At: fx.now, Key: "k", Date: "2026-11-30"}}})
		var fr FireResult
		if err := r.Decode(&fr); err != nil || len(fr.Created) != 1 {
			t.Fatalf("fire: %+v %v", fr, err)
		}
		id, _ := model.ParseID(fr.Created[0])
		wf, err := fx.f.InstanceWhy(id)
		if err != nil {
			t.Fatal(err)
		}
		if wf.State != model.StateBlocked || !reflect.DeepEqual(wf.WaitingFor, []string{"up1"}) || wf.Date != "2026-11-30" {
			t.Errorf("facts %+v, want BLOCKED waiting for up1 on 2026-11-30", wf)
		}
	})
	t.Run("slots and retry", func(t *testing.T) {
		fx := newExecFixture(t, model.Policy{MaxConcurrency: 1, Overlap: "queue", MaxRetries: 3})
		a, b := fx.trigger(), fx.trigger()
		fx.lease(a)
		fx.complete(a, false, true)
		wa, err := fx.f.InstanceWhy(a)
		if err != nil {
			t.Fatal(err)
		}
		if wa.State != model.StateRetrying || wa.MaxRetries != 3 || wa.LastAttempt == nil || deref(wa.LastAttempt.ExitCode) != 3 || wa.RetryAt == 0 {
			t.Errorf("retrying facts %+v, last attempt %+v", wa, wa.LastAttempt)
		}
		wb, _ := fx.f.InstanceWhy(b)
		if wb.State != model.StateBlocked || len(wb.WaitingFor) != 0 || wb.Inflight != 1 || wb.Limit != 1 {
			t.Errorf("blocked facts %+v", wb)
		}
	})
	t.Run("mid-run approval", func(t *testing.T) {
		fx := newExecFixture(t, model.Policy{})
		id := fx.trigger()
		fx.lease(id)
		fx.do(CmdDecide, Decide{ID: id, Action: DecideRequestApproval, Attempt: 1, Comment: "drop table?"})
		wf, _ := fx.f.InstanceWhy(id)
		if !wf.MidRun || wf.Approval == nil || wf.Approval.Message != "drop table?" || wf.Executor != "e1" {
			t.Errorf("facts %+v approval %+v", wf, wf.Approval)
		}
	})
}
