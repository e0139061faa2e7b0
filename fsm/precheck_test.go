package fsm

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// TestFSM_Precheck checks the answers given without a log entry: each is
// exactly what applying the command answers, and applying it changes
// nothing; a command Precheck lets through is one that applies.
func TestFSM_Precheck(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 10})
	ready := fx.trigger()
	running := fx.trigger()
	fx.lease(running)
	done := fx.trigger()
	fx.lease(done)
	fx.complete(done, true, false)
	missing := ready + 1000
	now := fx.now + 1000
	c := func(typ CommandType, body any) *Command { return jsonCmd(t, typ, now, body) }
	decide := func(id uint64, action string, attempt int) *Command {
		return c(CmdDecide, Decide{ID: id, Action: action, Attempt: attempt})
	}
	report := func(id uint64, attempt int, executor string) Complete {
		return Complete{ID: id, Attempt: attempt, Report: model.CompleteRequest{Executor: executor, Success: true}}
	}
	batch := func(cs ...Complete) *Command {
		return &Command{Type: CmdCompleteBatch, Now: now, Node: "n1", Body: EncodeCompleteBatch(cs)}
	}
	beat := func(refs ...AttemptRef) *Command {
		return c(CmdHeartbeat, Heartbeat{Executor: "e1", LeaseMs: 1000, Items: refs})
	}
	job := func(edit func(*model.Task)) PutTask {
		task := model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 10}}
		if edit != nil {
			edit(&task)
		}
		return PutTask{Task: task}
	}
	keepPaused := job(nil)
	keepPaused.KeepPaused = true
	fx.a.apply(withReq(decide(missing, DecideApprove, 0), "seen"))
	retry := withReq(decide(missing, DecideApprove, 0), "seen")
	tests := []struct {
		name string
		c    *Command
		want string // the answer's error code; "data" for an answer without error; "" to apply
	}{
		{"approve a missing instance", decide(missing, DecideApprove, 0), model.CodeNotFound},
		{"approve a READY instance", decide(ready, DecideApprove, 0), model.CodePrecondition},
		{"reject a RUNNING instance", decide(running, DecideReject, 0), model.CodePrecondition},
		{"cancel a RUNNING instance", decide(running, DecideCancel, 0), model.CodePrecondition},
		{"terminate a READY instance", decide(ready, DecideTerminate, 0), model.CodePrecondition},
		{"terminate a finished instance", decide(done, DecideTerminate, 0), model.CodePrecondition},
		{"request approval for another attempt", decide(running, DecideRequestApproval, 2), model.CodePrecondition},
		{"an unknown decision", decide(ready, "explode", 0), model.CodeInvalid},
		{"terminate a RUNNING instance", decide(running, DecideTerminate, 0), ""},
		{"cancel a READY instance", decide(ready, DecideCancel, 0), ""},
		{"request approval for the running attempt", decide(running, DecideRequestApproval, 1), ""},
		{"complete a fenced attempt", c(CmdComplete, report(running, 2, "e1")), model.CodeConflict},
		{"complete on another executor", c(CmdComplete, report(running, 1, "e2")), model.CodeConflict},
		{"complete a finished instance", c(CmdComplete, report(done, 1, "e1")), model.CodeConflict},
		{"complete a missing instance", c(CmdComplete, report(missing, 1, "e1")), model.CodeNotFound},
		{"complete the running attempt", c(CmdComplete, report(running, 1, "e1")), ""},
		{"a batch of refused reports", batch(report(running, 2, "e1"), report(missing, 1, "e1"), report(done, 1, "e1")), "data"},
		{"a batch with one current report", batch(report(running, 2, "e1"), report(running, 1, "e1")), ""},
		{"an invalid batch", batch(), model.CodeInvalid},
		{"a heartbeat that renews nothing", beat(AttemptRef{ID: running, Attempt: 2}, AttemptRef{ID: missing, Attempt: 1}), "data"},
		{"a heartbeat that renews a lease", beat(AttemptRef{ID: missing, Attempt: 1}, AttemptRef{ID: running, Attempt: 1}), ""},
		{"backfill a missing task", c(CmdBackfill, Backfill{Task: "nope", Version: 1}), model.CodeNotFound},
		{"backfill a changed task", c(CmdBackfill, Backfill{Task: "job", Version: 7}), model.CodeConflict},
		{"backfill the current version", c(CmdBackfill, Backfill{Task: "job", Version: 1}), ""},
		{"trigger a missing task", c(CmdTrigger, Trigger{Task: "nope"}), model.CodeNotFound},
		{"submit to a missing task", &Command{Type: CmdSubmit, Now: now, Body: EncodeSubmit(&Submit{Task: "nope", Items: []SubmitItem{{}}})}, model.CodeNotFound},
		{"an invalid submission", &Command{Type: CmdSubmit, Now: now, Body: EncodeSubmit(&Submit{Task: "job", Items: []SubmitItem{{DelayMs: -1}}})}, model.CodeInvalid},
		{"an invalid task", c(CmdPutTask, PutTask{Task: model.Task{Name: "x"}}), model.CodeInvalid},
		{"the stored definition again", c(CmdPutTask, job(nil)), "data"},
		{"the stored definition at its version", c(CmdPutTask, job(func(t *model.Task) { t.Version = 1 })), "data"},
		{"the stored definition, paused kept", c(CmdPutTask, keepPaused), "data"},
		{"the stored definition, paused", c(CmdPutTask, job(func(t *model.Task) { t.Paused = true })), ""},
		{"a changed definition", c(CmdPutTask, job(func(t *model.Task) { t.Action.Command = "false" })), ""},
		{"a stale version", c(CmdPutTask, job(func(t *model.Task) { t.Version = 7 })), model.CodeConflict},
		{"pause a missing task", c(CmdPauseTask, TaskRef{Name: "nope"}), model.CodeNotFound},
		{"an invalid lease", c(CmdLease, Lease{Executor: "e1"}), model.CodeInvalid},
		{"a lease", c(CmdLease, Lease{Executor: "e1", IDs: []uint64{ready}, LeaseMs: 1000}), ""},
		{"a node record", c(CmdSetNode, NodeInfo{ID: "n2", RaftAddr: "h:1", Proto: ProtoVersion}), ""},
		{"a secret without a name", c(CmdPutSecret, struct{}{}), model.CodeInvalid},
		{"delete a missing silence", c(CmdDeleteSilence, SilenceRef{ID: "nope"}), model.CodeNotFound},
		{"bootstrap with a reader token", c(CmdACLBootstrap, ACLBootstrap{Token: TokenRecord{Name: "r", Role: model.RoleReader,
			Hash: strings.Repeat("ab", 32)}}), model.CodeInvalid},
		{"a type this version does not know", raw(CommandType(99), now, "{}"), model.CodeInvalid},
		{"an ignorable type this version does not know", raw(command.Ignorable|99, now, "{}"), model.CodeInvalid},
		{"a batch", EncodeBatch(now, "n1", []*Command{{Type: CmdNoop}}), model.CodeInvalid},
		{"a retry of a known request", retry, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fx.f.Precheck(tc.c)
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("got %+v (data %s), want it applied", got.Err, got.Data)
			case tc.want == "":
				return
			case got == nil:
				t.Fatalf("got nil, want %s", tc.want)
			case tc.want == "data" && got.Err != nil, tc.want != "data" && (got.Err == nil || got.Err.Code != tc.want):
				t.Fatalf("got %+v (data %s), want %s", got.Err, got.Data, tc.want)
			}
			if tc.c.Type == CmdBatch || !tc.c.Type.Known() && !tc.c.Type.Ignorable() {
				return // applying an unknown type stops the node (TestFSM_UnknownTypeStops)
			}
			before := dump(t, fx.f)
			applied := fx.a.apply(tc.c)
			if !reflect.DeepEqual(applied.Err, got.Err) || !bytes.Equal(applied.Data, got.Data) {
				t.Fatalf("Precheck answered %+v %s, the state machine %+v %s", got.Err, got.Data, applied.Err, applied.Data)
			}
			if after := dump(t, fx.f); after != before {
				t.Fatalf("applying it changed the state:\n%s", diffLines(before, after))
			}
		})
	}
}

func withReq(c *Command, id string) *Command {
	c.ReqID = id
	return c
}
