package execution

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// rerunHTTP posts a re-run of instance id to addr with an
// Idempotency-Key and returns the status and the answer's body.
func rerunHTTP(ctx context.Context, t *testing.T, addr, id, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/instances/"+id+"/rerun", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-AX-Actor", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestRerun_ReleasesDependsOn, on a three-node cluster through a
// follower: a downstream task's instance that depends on a date whose
// upstream instance failed stays BLOCKED; the upstream instance, re-run
// (the cause fixed), runs a second attempt as the same instance and
// succeeds, and the downstream instance runs. The re-run is idempotent
// with its Idempotency-Key; an unfinished instance is a 409 naming its
// state, an unknown one a 404; a re-run that fails again triggers its
// onFailure task again; a terminated instance is re-run only once its
// stopped process is surely gone; ax task rerun re-runs a range's FAILED
// instances, which release their own dependents.
func TestRerun_ReleasesDependsOn(t *testing.T) {
	c := startCluster(t, 3, withArgs("-lease", "2s"))
	if _, err := c.StartExecutor("exec-a", "-capacity", "4"); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 3*time.Minute)
	cl := c.Client()
	follower, _, err := c.Follower(ctx, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fixed := filepath.Join(t.TempDir(), "fixed")
	for _, task := range []*model.Task{dailyTask("rr-up", "test -f "+fixed, model.Policy{}),
		dailyTask("rr-down", "echo downstream ran", model.Policy{DependsOn: []string{"rr-up"}})} {
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	midnight := time.Now().UTC().Truncate(24 * time.Hour)
	day := func(n int) model.BackfillRequest {
		d := model.Time{Time: midnight.Add(-time.Duration(n) * 24 * time.Hour)}
		return model.BackfillRequest{From: d, To: d}
	}
	backfill := func(task string, n int) string {
		t.Helper()
		res, err := cl.Backfill(ctx, task, day(n))
		if err != nil || len(res.Created) != 1 {
			t.Fatalf("backfill %s: %+v %v", task, res, err)
		}
		return res.Created[0]
	}
	down := backfill("rr-down", 1)
	agenttest.WaitState(t, cl, down, 10*time.Second, model.StateBlocked)
	up := backfill("rr-up", 1)
	agenttest.WaitState(t, cl, up, 30*time.Second, model.StateFailed)
	// The failure does not release the downstream instance.
	in, err := cl.GetInstance(ctx, down, client.Consistent())
	if err != nil {
		t.Fatal(err)
	}
	if in.State != model.StateBlocked || !strings.Contains(in.Why, "waiting for upstream task rr-up to succeed") {
		t.Fatalf("downstream after its upstream failed: %s (why %q), want BLOCKED waiting for rr-up", in.State, in.Why)
	}

	if err := os.WriteFile(fixed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, first := rerunHTTP(ctx, t, follower.HTTPAddr, up, "rerun-up-1")
	var s model.Submitted
	if code != http.StatusOK || json.Unmarshal([]byte(first), &s) != nil || s.ID != up {
		t.Fatalf("re-run through a follower: %d %s, want 200 with the same instance", code, first)
	}
	upIn := agenttest.WaitState(t, cl, up, 30*time.Second, model.StateSuccess)
	if len(upIn.AttemptList) != 2 || upIn.AttemptList[0].Outcome != model.OutcomeFailed || upIn.AttemptList[1].Outcome != model.OutcomeSuccess ||
		upIn.AttemptList[1].ExecutionID != up+"-2" || !hasEvent(upIn, "rerun", "re-run by anonymous (for alice); it had ended FAILED") {
		t.Fatalf("the re-run instance: attempts %+v, events %+v; want attempt 1 failed, attempt 2 (%s-2) succeeded, a rerun event", upIn.AttemptList, upIn.Events, up)
	}
	downIn := agenttest.WaitState(t, cl, down, 30*time.Second, model.StateSuccess)
	if !hasEvent(downIn, "unblocked", "dependsOn satisfied") {
		t.Errorf("downstream events %+v, want it unblocked by its dependsOn", downIn.Events)
	}
	// The same key again: the first answer, and nothing re-run twice.
	if code, again := rerunHTTP(ctx, t, follower.HTTPAddr, up, "rerun-up-1"); code != http.StatusOK || again != first {
		t.Errorf("the re-run retried with its key: %d %s, want the first answer %s", code, again, first)
	}
	if upIn, err = cl.GetInstance(ctx, up, client.Consistent()); err != nil || upIn.State != model.StateSuccess || upIn.Attempts != 2 {
		t.Errorf("after the retried re-run: %+v %v, want SUCCESS after 2 attempts", upIn, err)
	}

	// An unfinished instance: 409 naming its state; an unknown one: 404.
	waiting := backfill("rr-down", 2)
	agenttest.WaitState(t, cl, waiting, 10*time.Second, model.StateBlocked)
	if code, body := rerunHTTP(ctx, t, follower.HTTPAddr, waiting, "rerun-blocked"); code != http.StatusConflict ||
		!strings.Contains(body, `"field":"state"`) || !strings.Contains(body, "is BLOCKED") {
		t.Errorf("re-run of a BLOCKED instance: %d %s, want 409 naming the state", code, body)
	}
	if code, body := rerunHTTP(ctx, t, follower.HTTPAddr, "00000fff00000000", "rerun-unknown"); code != http.StatusNotFound {
		t.Errorf("re-run of an unknown instance: %d %s, want 404", code, body)
	}

	// A range: the upstream fails for days 2 and 3, the fix comes, ax
	// task rerun re-runs both, and day 2's waiting downstream runs.
	if err := os.Remove(fixed); err != nil {
		t.Fatal(err)
	}
	failed := []string{backfill("rr-up", 2), backfill("rr-up", 3)}
	for _, id := range failed {
		agenttest.WaitState(t, cl, id, 30*time.Second, model.StateFailed)
	}
	if err := os.WriteFile(fixed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	from, to := day(3).From.Format(time.RFC3339), day(2).To.Format(time.RFC3339)
	if _, err := axCLI(t, "task", "rerun", "rr-up", "-from", to, "-to", from, "-addr", follower.HTTPAddr); err == nil || !strings.Contains(err.Error(), "to: must not be before from") {
		t.Errorf("ax task rerun with -from after -to: %v, want the field named", err)
	}
	out, err := axCLI(t, "task", "rerun", "rr-up", "-from", from, "-to", to, "-state", "failed", "-addr", follower.HTTPAddr, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Rerun     int               `json:"rerun"`
		Instances []model.Submitted `json:"instances"`
	}
	if json.Unmarshal([]byte(out), &res) != nil || res.Rerun != 2 || len(res.Instances) != 2 || res.Instances[0].ID != failed[0] || res.Instances[1].ID != failed[1] {
		t.Fatalf("ax task rerun: %s, want instances %v re-run", out, failed)
	}
	for _, id := range append(failed, waiting) {
		agenttest.WaitState(t, cl, id, 30*time.Second, model.StateSuccess)
	}
	// A re-run that fails again is handled as a new failure: its
	// onFailure task runs again.
	for _, task := range []*model.Task{shellTask("rr-cleanup", "true", model.Policy{}), shellTask("rr-flaky", "exit 3", model.Policy{OnFailure: []string{"rr-cleanup"}})} {
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	flaky := trigger(t, cl, "rr-flaky")
	for round := 1; round <= 2; round++ {
		agenttest.WaitState(t, cl, flaky, 30*time.Second, model.StateFailed)
		testkit.Eventually(t, 30*time.Second, func() error {
			if n := len(instancesOf(t, cl, "rr-cleanup")); n != round {
				return fmt.Errorf("%d onFailure instances after failure %d", n, round)
			}
			return nil
		})
		if round == 1 {
			if code, body := rerunHTTP(ctx, t, follower.HTTPAddr, flaky, "rerun-flaky"); code != http.StatusOK {
				t.Fatalf("re-run of rr-flaky: %d %s", code, body)
			}
		}
	}

	// A terminated attempt's process may run on until its executor learns
	// of the stop: the instance is not re-run before that hold (1.5 leases
	// and the clock skew: 4s here) has passed.
	if _, err := cl.PutTask(ctx, shellTask("rr-slow", "echo started; sleep 30", model.Policy{})); err != nil {
		t.Fatal(err)
	}
	slow := trigger(t, cl, "rr-slow")
	agenttest.WaitState(t, cl, slow, 30*time.Second, model.StateRunning)
	if _, err := cl.Decide(ctx, slow, client.Terminate, "stuck"); err != nil {
		t.Fatal(err)
	}
	if code, body := rerunHTTP(ctx, t, follower.HTTPAddr, slow, "rerun-slow-1"); code != http.StatusConflict || !strings.Contains(body, "may run until") {
		t.Errorf("re-run right after a terminate: %d %s, want 409 saying until when the stopped attempt may run", code, body)
	}
	testkit.Eventually(t, 20*time.Second, func() error {
		if code, body := rerunHTTP(ctx, t, follower.HTTPAddr, slow, fmt.Sprint("rerun-slow-", time.Now().UnixNano())); code != http.StatusOK {
			return fmt.Errorf("re-run after the terminate: %d %s", code, body)
		}
		return nil
	})
	agenttest.WaitState(t, cl, slow, 30*time.Second, model.StateRunning)

	// Nothing of the range is FAILED any more: a second run re-runs nothing.
	if out, err := axCLI(t, "task", "rerun", "rr-up", "-from", from, "-to", to, "-addr", follower.HTTPAddr); err != nil || out != "0 re-run" {
		t.Errorf("a second ax task rerun: %q %v, want 0 re-run", out, err)
	}
}
