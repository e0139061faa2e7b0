package agent

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestAgent_AttemptLog: GET /v1/instances/{id}/log?attempt=N answers
// attempt N's own output (before, every attempt but the latest was out
// of reach: the answer was the latest one's whatever N), the latest by
// default, and a 404 naming attempt for one the instance never made.
func TestAgent_AttemptLog(t *testing.T) {
	a := startAgent(t, func(c *Config) { c.Executor = true })
	ctx := context.Background()
	task := &model.Task{Name: "flaky", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: `echo "output of attempt $AX_ATTEMPT"; exit 75`},
		Policy: model.Policy{MaxRetries: 2, RetryInterval: model.Duration(10 * time.Millisecond), RetryableExitCodes: []int{75}}}
	if _, err := a.tasks.PutTask(ctx, api.Caller{Actor: "t"}, task, api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	sub, err := a.tasks.Trigger(ctx, api.Caller{Actor: "t"}, "flaky", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 30*time.Second, "the instance to fail after 3 attempts", func() bool {
		in, err := a.tasks.GetInstance(ctx, sub.ID)
		return err == nil && in.State == model.StateFailed && in.Attempts == 3
	})
	for q, want := range map[string]string{"": "output of attempt 3\n", "?attempt=1": "output of attempt 1\n",
		"?attempt=2": "output of attempt 2\n", "?attempt=3": "output of attempt 3\n", "?attempt=2&offset=10": "attempt 2\n"} {
		var l model.InstanceLog
		if code := apiCall(t, a, http.MethodGet, "/v1/instances/"+sub.ID+"/log"+q, "", &l); code != 200 || l.Output != want {
			t.Errorf("log%s: %d %q (attempt %d), want %q", q, code, l.Output, l.Attempt, want)
		}
	}
	var e model.ErrorBody
	if code := apiCall(t, a, http.MethodGet, "/v1/instances/"+sub.ID+"/log?attempt=4", "", &e); code != 404 || e.Error == nil || e.Error.Field != "attempt" {
		t.Errorf("attempt 4 of 3: %d %+v", code, e.Error)
	}
}
