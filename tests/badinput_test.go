package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestCluster_BadInputWritesNothing sends invalid requests to a follower
// and checks each gets a 4xx naming the field while the leader's applied
// index does not move.
func TestCluster_BadInputWritesNothing(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	target := c.Nodes[0]
	if target == leader {
		target = c.Nodes[1]
	}
	if _, err := c.Client().PutTask(ctx, eventTask("exists")); err != nil {
		t.Fatal(err)
	}
	applied := func() uint64 {
		t.Helper()
		h, err := leader.Client().Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h.AppliedIndex
	}
	testkit.Eventually(t, 5*time.Second, func() error { return nil })
	before := applied()

	good := `"trigger":{"type":"cron","expression":"* * * * *"},"action":{"type":"shell","command":"true"}`
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantStatus int
		wantField  string
	}{
		{"unknown field", "PUT", "/v1/tasks/a", `{` + good + `,"colour":"red"}`, 400, "colour"},
		{"bad name", "PUT", "/v1/tasks/Bad_Name", `{` + good + `}`, 400, "name"},
		{"name mismatch", "PUT", "/v1/tasks/a", `{"name":"b",` + good + `}`, 400, "name"},
		{"bad cron minute", "PUT", "/v1/tasks/a", `{"trigger":{"type":"cron","expression":"61 * * * *"},"action":{"type":"shell","command":"true"}}`, 400, "trigger.expression"},
		{"bad cron field count", "PUT", "/v1/tasks/a", `{"trigger":{"type":"cron","expression":"* * *"},"action":{"type":"shell","command":"true"}}`, 400, "trigger.expression"},
		{"unknown timezone", "PUT", "/v1/tasks/a", `{"trigger":{"type":"cron","expression":"* * * * *","timezone":"Mars/Olympus"},"action":{"type":"shell","command":"true"}}`, 400, "trigger.timezone"},
		{"bad duration", "PUT", "/v1/tasks/a", `{` + good + `,"policy":{"timeout":"10 minutes"}}`, 400, "policy.timeout"},
		{"interval too short", "PUT", "/v1/tasks/a", `{"trigger":{"type":"interval","every":"100ms"},"action":{"type":"shell","command":"true"}}`, 400, "trigger.every"},
		{"template that cannot expand", "PUT", "/v1/tasks/a", `{"trigger":{"type":"event"},"action":{"type":"shell","command":"echo {{.Nope}}"}}`, 400, "action.command"},
		{"no action", "PUT", "/v1/tasks/a", `{"trigger":{"type":"event"}}`, 400, "action.type"},
		{"rollout percent over 100", "PUT", "/v1/tasks/exists", `{` + good + `,"rollout":{"percent":150,"promoteAfter":3}}`, 400, "rollout.percent"},
		{"rollout without promoteAfter", "PUT", "/v1/tasks/exists", `{` + good + `,"rollout":{"percent":10}}`, 400, "rollout.promoteAfter"},
		{"rollout bad test label", "PUT", "/v1/tasks/exists", `{` + good + `,"rollout":{"promoteAfter":1,"testLabels":{"Bad Key":"x"}}}`, 400, "rollout.testLabels.Bad Key"},
		{"malformed json", "PUT", "/v1/tasks/a", `{"trigger":`, 400, ""},
		{"oversize body", "PUT", "/v1/tasks/a", `{"name":"a","labels":{"x":"` + strings.Repeat("x", 2<<20) + `"}}`, 413, ""},
		{"delete missing", "DELETE", "/v1/tasks/missing", ``, 404, "name"},
		{"pause missing", "POST", "/v1/tasks/missing/pause", ``, 404, "name"},
		{"stale version", "PUT", "/v1/tasks/exists", `{"version":7,"trigger":{"type":"event"},"action":{"type":"shell","command":"x"}}`, 409, "version"},
		{"join bad address", "POST", "/v1/cluster/join", `{"id":"n9","raftAddr":"nope","httpAddr":"127.0.0.1:1"}`, 400, "raftAddr"},
		{"remove unknown node", "DELETE", "/v1/cluster/n9", ``, 404, "node"},
		{"submit past at", "POST", "/v1/tasks/exists/submit", `{"at":"2020-01-01T00:00:00Z"}`, 400, "at"},
		{"submit negative delay", "POST", "/v1/tasks/exists/submit", `{"delay":"-5s"}`, 400, "delay"},
		{"submit bad delay in array", "POST", "/v1/tasks/exists/submit", `[{"delay":"1s"},{"delay":"soon"}]`, 400, "[1].delay"},
		{"submit oversize payload", "POST", "/v1/tasks/exists/submit", `{"delay":"1s","payload":"` + strings.Repeat("p", 70<<10) + `"}`, 413, "payload"},
		{"submit array over limit", "POST", "/v1/tasks/exists/submit", `[` + strings.Repeat(`{},`, 10000) + `{}]`, 413, ""},
		{"submit unknown task", "POST", "/v1/tasks/nope/submit", `{"delay":"1s"}`, 404, "name"},
		{"trigger unknown task", "POST", "/v1/tasks/nope/trigger", `{}`, 404, "name"},
		{"trigger bad param", "POST", "/v1/tasks/exists/trigger", `{"params":{"a-b":"x"}}`, 400, "params.a-b"},
		{"instances bad state", "GET", "/v1/instances?state=running", ``, 400, "state"},
		{"rerun unknown instance", "POST", "/v1/instances/00000fff00000000/rerun", ``, 404, "id"},
		{"rerun bad id", "POST", "/v1/instances/nope/rerun", ``, 400, "id"},
		{"rerun with a body field", "POST", "/v1/instances/00000fff00000000/rerun", `{"comment":"x"}`, 400, "comment"},
		{"task rerun from after to", "POST", "/v1/tasks/exists/rerun", `{"from":"2020-01-02T00:00:00Z","to":"2020-01-01T00:00:00Z"}`, 400, "to"},
		{"task rerun of a running state", "POST", "/v1/tasks/exists/rerun", `{"from":"2020-01-01T00:00:00Z","to":"2020-01-02T00:00:00Z","states":["FAILED","RUNNING"]}`, 400, "states[1]"},
		{"task rerun unknown task", "POST", "/v1/tasks/nope/rerun", `{"from":"2020-01-01T00:00:00Z","to":"2020-01-02T00:00:00Z"}`, 404, "name"},
		{"backfill into the future", "POST", "/v1/tasks/exists/backfill", `{"from":"2020-01-01T00:00:00Z","to":"2999-01-01T00:00:00Z"}`, 400, "to"},
		{"backfill an event task", "POST", "/v1/tasks/exists/backfill", `{"from":"2020-01-01T00:00:00Z","to":"2020-01-02T00:00:00Z"}`, 400, "name"},
		{"backfill without from", "POST", "/v1/tasks/exists/backfill", `{"to":"2020-01-02T00:00:00Z"}`, 400, "from"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, tc.method, "http://"+target.HTTPAddr+tc.path, bytes.NewBufferString(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("got HTTP %d (%s), want %d", resp.StatusCode, data, tc.wantStatus)
			}
			var eb model.ErrorBody
			if err := json.Unmarshal(data, &eb); err != nil || eb.Error == nil || eb.Error.Message == "" {
				t.Fatalf("got body %s, want {\"error\":{...}}", data)
			}
			if eb.Error.Field != tc.wantField {
				t.Fatalf("got field %q (%s), want %q", eb.Error.Field, eb.Error.Message, tc.wantField)
			}
		})
	}
	if after := applied(); after != before {
		t.Fatalf("leader applied index moved from %d to %d: bad input was written", before, after)
	}
}
