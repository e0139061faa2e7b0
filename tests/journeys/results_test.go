package journeys

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// journeyResults: a shell task publishes a result through
// $AX_RESULT_FILE; the user reads it (ax instance result, GET
// /v1/instances/{id}/result); its onSuccess task's command reads fields
// of it as {{.Upstream.<task>.Result.x}}, and a dependsOn task's command
// reads its upstream's result for the same date.
func journeyResults(c *cell) {
	d, user, r := c.d, c.d.User(), c.d.runners[0]
	// Template fields are identifiers: no '-' in the chained task's name.
	extract, load := strings.ReplaceAll(c.n("rs_extract"), "-", "_"), c.n("rs-load")
	up, down := c.n("rs-up"), c.n("rs-down")
	yesterday := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1).Format(time.RFC3339)
	c.step("define", func(t *testing.T) {
		// Results need every member at protocol 8, which a new cluster's
		// leader raises it to a moment after it starts.
		testkit.Eventually(t, 30*time.Second, func() error {
			h, err := user.Health(c.ctx)
			if err == nil && h.Protocol < 8 {
				err = fmt.Errorf("cluster protocol %d", h.Protocol)
			}
			return err
		})
		c.put(t,
			r.route(shellTask(extract, `printf '{"file": "%s", "rows": 3}\n' "it's.csv" > "$AX_RESULT_FILE"; echo extracted`,
				model.Policy{OnSuccess: []model.Chain{{Task: load}}})),
			r.route(shellTask(load, fmt.Sprintf(`echo loading {{.Upstream.%s.Result.file}} rows={{.Upstream.%[1]s.Result.rows}}`, extract), model.Policy{})),
			r.route(dailyTask(up, `echo '{"day": "{{.Date}}"}' > "$AX_RESULT_FILE"`, model.Policy{})),
			r.route(dailyTask(down, fmt.Sprintf(`echo "day={{(index .Upstream %q).Result.day}}"`, up), model.Policy{DependsOn: []string{up}})))
	})
	var eid string
	c.step("result", func(t *testing.T) {
		eid = strings.Fields(d.ax(t, 0, "trigger", extract).stdout)[0]
		agenttest.WaitState(t, user, eid, 30*time.Second, model.StateSuccess)
		if out := d.ax(t, 0, "instance", "result", eid).stdout; out != "{\n  \"file\": \"it's.csv\",\n  \"rows\": 3\n}\n" {
			t.Fatalf("ax instance result printed %q", out)
		}
		code, body := d.get(c.ctx, t, "/v1/instances/"+eid+"/result")
		var got model.InstanceResult
		if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || got.Task != extract || got.Attempt != 1 || string(got.Result) != `{"file":"it's.csv","rows":3}` {
			t.Fatalf("GET .../result: %d %s", code, body)
		}
	})
	c.step("on-success-reads-it", func(t *testing.T) {
		var lid string
		testkit.Eventually(t, 30*time.Second, func() error {
			l, err := user.ListInstances(c.ctx, model.InstanceFilter{Task: load})
			if err != nil || len(l.Instances) != 1 {
				return fmt.Errorf("instances of %s: %v %v", load, l, err)
			}
			lid = l.Instances[0].ID
			return nil
		})
		in := agenttest.WaitState(t, user, lid, 30*time.Second, model.StateSuccess)
		if out := in.AttemptList[0].Output; out != "loading it's.csv rows=3\n" {
			t.Fatalf("%s's output %q, want the upstream result's fields", load, out)
		}
		if r := d.ax(t, 1, "instance", "result", lid); !strings.Contains(r.stderr, "has no result: it is SUCCESS, and its successful attempt published none") {
			t.Fatalf("ax instance result of an instance without one: %q", r.stderr)
		}
	})
	c.step("depends-on-reads-it", func(t *testing.T) {
		did := strings.Fields(d.ax(t, 0, "backfill", down, "-from", yesterday, "-to", yesterday).stdout)[0]
		d.ax(t, 0, "backfill", up, "-from", yesterday, "-to", yesterday)
		in := agenttest.WaitState(t, user, did, 30*time.Second, model.StateSuccess)
		if out := in.AttemptList[0].Output; out != "day="+yesterday[:10]+"\n" {
			t.Fatalf("%s's output %q, want its upstream's result for %s", down, out, yesterday[:10])
		}
	})
}
