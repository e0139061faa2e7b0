package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// startAgent starts a one-node agent (tweaks change its configuration
// first) and waits until it leads, runs its dispatcher and has recorded
// itself.
func startAgent(t *testing.T, tweaks ...func(*Config)) *Agent {
	t.Helper()
	cfg := Config{NodeID: "n1", DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: testkit.FreeAddr(t),
		Logger: testkit.Logger(t, "")}
	for _, tw := range tweaks {
		tw(&cfg)
	}
	a := newAgent(t, cfg)
	testkit.Until(t, 20*time.Second, "leadership", func() bool {
		nodes, err := a.fsm.Nodes()
		return err == nil && a.exec.Dispatcher() != nil && nodes["n1"].Proto == command.ProtoVersion
	})
	return a
}

// TestAgent_RejectedWritesAddNoEntries: writes the state machine would
// refuse (decisions on missing or wrongly placed instances, reports of
// fenced attempts, heartbeats of dead attempts) and writes that would
// change nothing (the stored definition put again) are answered without a
// Raft entry.
func TestAgent_RejectedWritesAddNoEntries(t *testing.T) {
	a := startAgent(t)
	ctx := context.Background()
	c := api.Caller{Actor: "tester"}
	task := &model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionShell, Command: "true"}}
	if _, err := a.tasks.PutTask(ctx, c, task, api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	in, err := a.tasks.Trigger(ctx, c, "job", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	missing := model.FormatID(1 << 40)
	lastIndex := func() string { return a.node.Stats()["last_log_index"] }
	beforeLog, beforeApplied := lastIndex(), a.fsm.AppliedIndex()
	report := model.CompleteRequest{Executor: "e1", Success: true}
	for i := 0; i < 100; i++ {
		if _, err := a.tasks.Decide(ctx, c, missing, command.DecideApprove, 0, ""); !errors.Is(err, model.ErrNotFound) {
			t.Fatalf("approve a missing instance: %v, want not found", err)
		}
		if _, err := a.tasks.Decide(ctx, c, in.ID, command.DecideApprove, 0, ""); !errors.Is(err, model.ErrPrecondition) {
			t.Fatalf("approve a READY instance: %v, want failed precondition", err)
		}
		if _, err := a.exec.Complete(ctx, c, in.ID+"-1", report); !errors.Is(err, model.ErrConflict) {
			t.Fatalf("complete a READY instance: %v, want conflict", err)
		}
		out, err := a.exec.CompleteBatch(ctx, c, []model.CompleteItem{{ExecutionID: in.ID + "-1", Report: report}, {ExecutionID: missing + "-2", Report: report}})
		if err != nil || len(out) != 2 || out[0].Code != model.CodeConflict || out[1].Code != model.CodeNotFound {
			t.Fatalf("a batch of fenced reports: %+v, %v", out, err)
		}
		hb, err := a.exec.Heartbeat(ctx, model.HeartbeatRequest{Executor: "e1", Running: []model.RunningAttempt{{InstanceID: in.ID, Attempt: 1}}})
		if err != nil || len(hb.Stop) != 1 {
			t.Fatalf("a heartbeat of an attempt that does not run: %+v, %v", hb, err)
		}
		same := *task
		res, err := a.tasks.PutTask(ctx, c, &same, api.PutOptions{KeepPaused: i%2 == 0})
		if err != nil || res.Changed || res.Version != 1 {
			t.Fatalf("the same definition again: %+v, %v; want unchanged at version 1", res, err)
		}
	}
	if got, gotApplied := lastIndex(), a.fsm.AppliedIndex(); got != beforeLog || gotApplied != beforeApplied {
		t.Fatalf("last log index %s -> %s, applied %d -> %d: rejected writes wrote entries", beforeLog, got, beforeApplied, gotApplied)
	}
	// A write that applies still does.
	if _, err := a.tasks.Decide(ctx, c, in.ID, command.DecideCancel, 0, ""); err != nil {
		t.Fatal(err)
	}
	if a.fsm.AppliedIndex() == beforeApplied {
		t.Fatal("an accepted write was not applied")
	}
}

// TestAgent_RecordsProtocol: a node records the protocol it speaks with
// its addresses, and the cluster status shows it.
func TestAgent_RecordsProtocol(t *testing.T) {
	a := startAgent(t)
	st, err := a.cl.Cluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 1 || st.Nodes[0].Proto != command.ProtoVersion {
		t.Fatalf("cluster status %+v, want n1 at protocol %d", st.Nodes, command.ProtoVersion)
	}
	// A command of a protocol every member speaks passes the gate.
	cmd, err := command.New(command.TypePutSecret, "", "tester", command.PutSecret{Name: "s", Value: []byte("v")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.rep.Propose(context.Background(), cmd)
	if err != nil || res.Err != nil {
		t.Fatalf("a protocol 2 command: %+v, %v; want it applied", res, err)
	}
}
