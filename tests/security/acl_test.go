package security

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

// TestACL_RolesAcrossNodes: a three-node cluster without TLS and without
// -token bootstraps ACLs; from then on every route needs a token of its
// role on every node, writes sent to followers are forwarded (members
// prove themselves with the member key), the audit actor is the token's
// name, revoked and expired tokens stop working, and /v1/internal refuses
// even an admin token.
func TestACL_RolesAcrossNodes(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 90*time.Second)
	follower, _, err := c.Follower(ctx, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Every member speaks this version's protocol, so the leader raises
	// the cluster's.
	testkit.Eventually(t, 10*time.Second, func() error {
		st, err := follower.Client().Cluster(ctx)
		if err == nil && st.Protocol != command.ProtoVersion {
			err = fmt.Errorf("cluster protocol %d, want %d", st.Protocol, command.ProtoVersion)
		}
		return err
	})
	// Bootstrap with the CLI, through a follower.
	admin, err := axCLI(t, "acl", "bootstrap", "-addr", follower.HTTPAddr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := axCLI(t, "acl", "bootstrap", "-addr", follower.HTTPAddr, "-token", admin); err == nil || !strings.Contains(err.Error(), "already bootstrapped") {
		t.Fatalf("second bootstrap: got %v, want already bootstrapped", err)
	}
	for _, n := range c.Nodes {
		// Each node closes once it has applied the bootstrap.
		testkit.Eventually(t, 10*time.Second, func() error {
			_, err := tokenClient(c, "", n.HTTPAddr).ListTasks(ctx, model.TaskFilter{})
			if !errors.Is(err, model.ErrUnauthorized) {
				return fmt.Errorf("no token on %s: got %v, want unauthorized", n.ID, err)
			}
			return nil
		})
		if _, err := n.Client().Health(ctx); err != nil {
			t.Fatalf("healthz on %s needs no token: %v", n.ID, err)
		}
	}
	adm := tokenClient(c, admin, follower.HTTPAddr)
	reader := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "viewer", Role: model.RoleReader})
	operator := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "oncall", Role: model.RoleOperator})
	writer := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "deployer", Role: model.RoleWriter})
	shortLived := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "brief", Role: model.RoleReader, TTL: model.Duration(2 * time.Second)})

	// Every token is used on a follower: writes are forwarded.
	viaFollower := func(tok string) *client.Client { return tokenClient(c, tok, follower.HTTPAddr) }
	task := eventTask("acl-task")
	_, err = viaFollower(reader).PutTask(ctx, task)
	wantCode(t, "reader writes a task", err, model.CodeForbidden)
	_, err = viaFollower(operator).PutTask(ctx, task)
	wantCode(t, "operator writes a task", err, model.CodeForbidden)
	if _, err := viaFollower(writer).PutTask(ctx, task); err != nil {
		t.Fatalf("writer writes a task through a follower: %v", err)
	}
	if _, err := viaFollower(operator).PauseTask(ctx, task.Name); err != nil {
		t.Fatalf("operator pauses: %v", err)
	}
	_, err = viaFollower(reader).PauseTask(ctx, task.Name)
	wantCode(t, "reader pauses", err, model.CodeForbidden)
	h, err := viaFollower(reader).TaskHistory(ctx, task.Name, client.Consistent())
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{h.Versions[0].Actor, h.Versions[1].Actor}; got[0] != "deployer (for alice@laptop)" || got[1] != "oncall (for alice@laptop)" {
		t.Errorf("history actors: got %q, want the token names on behalf of the X-AX-Actor", got)
	}
	_, err = viaFollower(writer).ListTokens(ctx)
	wantCode(t, "writer lists tokens", err, model.CodeForbidden)

	// A canary rollout: the writer starts it, a reader sees it and may not
	// end it, the operator promotes it.
	canary := eventTask("acl-task")
	canary.Action.Command = "echo canary"
	canary.Rollout = &model.RolloutSpec{Percent: 10, PromoteAfter: 5}
	if _, err := viaFollower(writer).PutTask(ctx, canary); err != nil {
		t.Fatalf("writer starts a rollout: %v", err)
	}
	if ro, err := viaFollower(reader).Rollout(ctx, task.Name); err != nil || ro.Phase != model.RolloutProgressing {
		t.Fatalf("reader reads the rollout: %+v %v", ro, err)
	}
	_, err = viaFollower(reader).PromoteRollout(ctx, task.Name)
	wantCode(t, "reader promotes", err, model.CodeForbidden)
	if out, err := axCLI(t, "task", "get", "-addr", follower.HTTPAddr, "-token", reader, task.Name); err != nil ||
		!strings.Contains(out, "Rollout:") || !strings.Contains(out, "on 10% of the fires, 0 of 5 canary successes") {
		t.Errorf("ax task get during the rollout: %q %v", out, err)
	}
	if out, err := axCLI(t, "task", "promote", "-addr", follower.HTTPAddr, "-token", reader, task.Name); err == nil {
		t.Errorf("ax task promote as a reader: %q, want refused", out)
	}
	if _, err := viaFollower(operator).PromoteRollout(ctx, task.Name); err != nil {
		t.Fatalf("operator promotes: %v", err)
	}

	// /v1/internal is for members only, even with an admin token.
	err = adm.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/internal/apply", Body: []byte("x"), NoRetry: true}, nil)
	wantCode(t, "admin token on /v1/internal/apply", err, model.CodeForbidden)

	// Revoked and expired tokens stop working on every node.
	if _, err := adm.RevokeToken(ctx, "viewer"); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		testkit.Eventually(t, 10*time.Second, func() error {
			_, err := tokenClient(c, reader, n.HTTPAddr).ListTasks(ctx, model.TaskFilter{})
			if !errors.Is(err, model.ErrUnauthorized) {
				return fmt.Errorf("revoked token on %s: got %v, want unauthorized", n.ID, err)
			}
			return nil
		})
		testkit.Eventually(t, 10*time.Second, func() error {
			_, err := tokenClient(c, shortLived, n.HTTPAddr).ListTasks(ctx, model.TaskFilter{})
			if err == nil || !strings.Contains(err.Error(), "expired") {
				return fmt.Errorf("expired token on %s: got %v", n.ID, err)
			}
			return nil
		})
	}
	_, err = adm.RevokeToken(ctx, "bootstrap")
	wantCode(t, "revoke the last admin token", err, model.CodePrecondition)
	list, err := adm.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range list.Tokens {
		if tk.Secret != "" {
			t.Errorf("token %s listed with its secret", tk.Name)
		}
	}
}

// TestACL_ExecutorTokens: an executor token runs only as its executor with
// its labels, and cannot report on another executor's attempt.
func TestACL_ExecutorTokens(t *testing.T) {
	c := startCluster(t, 1, withArgs("-lease", "3s"))
	ctx := ctxT(t, 60*time.Second)
	boot, err := tokenClient(c, "").ACLBootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm := tokenClient(c, boot.Secret)
	w1 := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "w1", Role: model.RoleExecutor, Executor: "w1", Labels: map[string]string{"pool": "gpu"}})
	w2 := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "w2", Role: model.RoleExecutor, Executor: "w2"})

	// Claiming another name, or a label the token does not carry, is 403.
	_, err = worker.NewProtocol(tokenClient(c, w2)).Poll(ctx, model.PollRequest{Executor: "w1", Free: 1, WaitMs: 1})
	wantCode(t, "w2 polls as w1", err, model.CodeForbidden)
	_, err = worker.NewProtocol(tokenClient(c, w2)).Poll(ctx, model.PollRequest{Executor: "w2", Labels: map[string]string{"pool": "gpu"}, Free: 1, WaitMs: 1})
	wantCode(t, "w2 claims pool=gpu", err, model.CodeForbidden)
	_, err = tokenClient(c, w1).ListTasks(ctx, model.TaskFilter{})
	wantCode(t, "an executor token reads tasks", err, model.CodeForbidden)

	task := shellTask("gpu-job", "sleep 4", model.Policy{ExecutorLabels: map[string]string{"pool": "gpu"}})
	if _, err := adm.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartExecutor("w1", "-token", w1, "-labels", "pool=gpu"); err != nil {
		t.Fatal(err)
	}
	id := trigger(t, adm, task.Name)
	agenttest.WaitState(t, adm, id, 15*time.Second, model.StateRunning)
	// w2 reports the end of w1's attempt, as itself or as w1.
	_, err = worker.NewProtocol(tokenClient(c, w2)).Complete(ctx, id+"-1", model.CompleteRequest{Executor: "w2", Success: true})
	wantCode(t, "w2 completes w1's attempt", err, model.CodeForbidden)
	_, err = worker.NewProtocol(tokenClient(c, w2)).Complete(ctx, id+"-1", model.CompleteRequest{Executor: "w1", Success: true})
	wantCode(t, "w2 completes as w1", err, model.CodeForbidden)
	in := agenttest.WaitState(t, adm, id, 20*time.Second, model.StateSuccess)
	if in.Executor != "w1" {
		t.Errorf("ran on %q, want w1", in.Executor)
	}
}

// TestACL_OverTLS: on a TLS cluster, a follower forwards a token's writes
// over mutual TLS with the principal it verified, and the leader holds the
// principal to its role; a request without a token is refused once ACLs
// are bootstrapped, client certificate or not.
func TestACL_OverTLS(t *testing.T) {
	c := startCluster(t, 3, withTLS(t.TempDir()))
	ctx := ctxT(t, 60*time.Second)
	follower, leader, err := c.Follower(ctx, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Before the bootstrap the cluster's client certificate admits.
	boot, err := tokenClient(c, "", follower.HTTPAddr).ACLBootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm := tokenClient(c, boot.Secret, follower.HTTPAddr)
	writer := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "deployer", Role: model.RoleWriter})
	reader := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "viewer", Role: model.RoleReader})
	testkit.Eventually(t, 10*time.Second, func() error {
		_, err := tokenClient(c, "", follower.HTTPAddr).ListTasks(ctx, model.TaskFilter{})
		if !errors.Is(err, model.ErrUnauthorized) {
			return fmt.Errorf("client certificate without a token after the bootstrap: got %v, want unauthorized", err)
		}
		return nil
	})
	_, err = tokenClient(c, reader, follower.HTTPAddr).PutTask(ctx, eventTask("tls-task"))
	wantCode(t, "reader writes through a follower", err, model.CodeForbidden)
	if _, err := tokenClient(c, writer, follower.HTTPAddr).PutTask(ctx, eventTask("tls-task")); err != nil {
		t.Fatalf("writer writes through a follower: %v", err)
	}
	tk, err := tokenClient(c, reader, leader.HTTPAddr).GetTask(ctx, "tls-task", client.Consistent())
	if err != nil || tk.UpdatedBy != "deployer (for alice@laptop)" {
		t.Fatalf("task: %+v, %v; want it written by deployer", tk, err)
	}
}

// TestACL_Rerun: re-running goes with the operator role, as trigger and
// cancel do: a reader's re-run of an instance or of a task's range is
// refused (403) and writes nothing; an operator's is recorded under its
// token's name.
func TestACL_Rerun(t *testing.T) {
	c := startCluster(t, 1)
	ctx := ctxT(t, 60*time.Second)
	boot, err := tokenClient(c, "").ACLBootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm := tokenClient(c, boot.Secret)
	reader := tokenClient(c, createToken(t, ctx, adm, model.ACLTokenRequest{Name: "viewer", Role: model.RoleReader}))
	operator := tokenClient(c, createToken(t, ctx, adm, model.ACLTokenRequest{Name: "oncall", Role: model.RoleOperator}))
	task := eventTask("gated")
	task.Policy.Approval = "before_run" // no executor needed: canceled before it runs
	if _, err := adm.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	id := trigger(t, operator, "gated")
	if _, err := operator.Decide(ctx, id, client.Cancel, "not now"); err != nil {
		t.Fatal(err)
	}
	before, err := adm.GetInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	_, err = reader.Rerun(ctx, id)
	wantCode(t, "reader re-runs an instance", err, model.CodeForbidden)
	day := model.Time{Time: time.Now().UTC().Add(-time.Hour)}
	_, err = reader.RerunTask(ctx, "gated", model.RerunRequest{From: day, To: model.Time{Time: time.Now().UTC()}, States: []string{model.StateCanceled}})
	wantCode(t, "reader re-runs a task's instances", err, model.CodeForbidden)
	after, err := adm.GetInstance(ctx, id, client.Consistent())
	if err != nil {
		t.Fatal(err)
	}
	if after.State != model.StateCanceled || len(after.Events) != len(before.Events) {
		t.Fatalf("after the refused re-runs: %s with %d events, want CANCELED with %d: nothing written", after.State, len(after.Events), len(before.Events))
	}
	s, err := operator.Rerun(ctx, id)
	if err != nil || s.State != model.StateWaitingApproval {
		t.Fatalf("operator re-runs: %+v %v, want WAITING_APPROVAL (approval asked again)", s, err)
	}
	in, err := adm.GetInstance(ctx, id, client.Consistent())
	if err != nil {
		t.Fatal(err)
	}
	var actor string
	for _, e := range in.Events {
		if e.Type == "rerun" {
			actor = e.Actor
		}
	}
	if actor != "oncall (for alice@laptop)" || !strings.Contains(in.Why, "re-run by oncall (for alice@laptop)") {
		t.Errorf("rerun event by %q, why %q: want the operator token's name", actor, in.Why)
	}
}
