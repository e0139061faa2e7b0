package agent

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// TestAgent_ConsoleReads runs the console's reads against a one-node
// agent: the overview counts what was fired and finished, an instance says
// why it waits, summaries, counts, calendar and fires answer.
func TestAgent_ConsoleReads(t *testing.T) {
	a := startAgent(t)
	ctx := context.Background()
	c := api.Caller{Actor: "tester"}
	task := &model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "30 2 * * *", Timezone: "America/Los_Angeles"},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 5, ExecutorLabels: map[string]string{"region": "eu"}}}
	if _, err := a.tasks.PutTask(ctx, c, task, api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		in, err := a.tasks.Trigger(ctx, c, "job", model.TriggerRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	if _, err := a.tasks.Decide(ctx, c, ids[0], command.DecideCancel, 0, ""); err != nil {
		t.Fatal(err)
	}

	o, err := a.console.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o.Counts.Ready != 2 || o.LastHour.Fired != 3 || o.LastHour.Canceled != 1 || o.Tasks.Total != 1 ||
		o.Cluster == nil || o.Executors == nil || o.ClusterError != "" || o.ExecutorsError != "" || time.Since(o.Time.Time) > time.Minute {
		t.Errorf("overview %+v", o)
	}

	in, err := a.tasks.GetInstance(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if want := "waiting for an executor with label region=eu and a free slot: no executor is connected"; in.Why != want {
		t.Errorf("why: got %q, want %q", in.Why, want)
	}
	if in, _ := a.tasks.GetInstance(ctx, ids[0]); in.Why != "" {
		t.Errorf("a canceled instance says why: %q", in.Why)
	}

	l, err := a.console.TaskSummaries(ctx, model.TaskFilter{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tasks) != 1 || l.Tasks[0].Summary.NextFire == nil || len(l.Tasks[0].Summary.RecentRuns) != 2 || l.Tasks[0].Summary.LastRun.ID != ids[2] {
		t.Errorf("summaries %+v", l)
	}

	counts, err := a.console.TaskCounts(ctx, "job", live.CountFilter{Source: model.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	if counts.Total != 3 || counts.Counts[model.StateReady] != 2 || counts.Counts[model.StateCanceled] != 1 ||
		counts.Slots == nil || *counts.Slots != (live.SlotUse{Busy: 2, Limit: 5}) {
		t.Errorf("counts %+v (slots %+v)", counts, counts.Slots)
	}
	if counts, _ := a.console.TaskCounts(ctx, "job", live.CountFilter{Source: model.SourceBackfill}); counts.Total != 0 {
		t.Errorf("backfill counts %+v, want none", counts)
	}

	cal, err := a.console.TaskCalendar(ctx, "job", 90)
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().In(mustZone(t, "America/Los_Angeles")).Format("2006-01-02")
	if cal.Timezone != "America/Los_Angeles" || len(cal.Days) != 1 || cal.Days[0].Date != today || cal.Days[0].Counts[model.StateReady] != 2 {
		t.Errorf("calendar %+v, want today %s", cal, today)
	}

	fires, err := a.console.TaskFires(ctx, "job", 400, live.FireCursor{})
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	for _, f := range fires.Fires {
		if !strings.HasSuffix(f.Local[:19], "02:30:00") && !strings.HasSuffix(f.Local[:19], "03:30:00") {
			t.Errorf("fire %+v is not at 02:30 local", f)
		}
		if f.DSTChange {
			changes++
		}
	}
	if len(fires.Fires) != 400 || changes < 1 {
		t.Errorf("%d fires, %d offset changes; want 400 fires over a year, with DST changes", len(fires.Fires), changes)
	}
	// Paged: two pages, the second after the first's last fire, are the
	// same fires as one page (DST flags included).
	p1, err1 := a.console.TaskFires(ctx, "job", 150, live.FireCursor{})
	p2, err2 := a.console.TaskFires(ctx, "job", 250, live.FireCursor{After: p1.Fires[149].Time.Time, Shown: 150})
	if err1 != nil || err2 != nil || !reflect.DeepEqual(append(p1.Fires, p2.Fires...), fires.Fires) {
		t.Errorf("150 + 250 fires paged (%v, %v) differ from 400 at once", err1, err2)
	}
	if _, err := a.console.TaskFires(ctx, "nope", 1, live.FireCursor{}); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("fires of a missing task: %v, want not found", err)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestAgent_TaskGraph: the graph of a task follows dependsOn, onSuccess
// and onFailure both ways up to the depth asked for, each node with its
// newest instance, and says when it left tasks out.
func TestAgent_TaskGraph(t *testing.T) {
	a := startAgent(t)
	ctx := context.Background()
	c := api.Caller{Actor: "tester"}
	put := func(name string, p model.Policy) {
		t.Helper()
		task := &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 3 * * *"},
			Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: p}
		if _, err := a.tasks.PutTask(ctx, c, task, api.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("ingest", model.Policy{})
	put("page", model.Policy{})
	put("extract", model.Policy{DependsOn: []string{"ingest"}, OnFailure: []string{"page"}})
	put("report", model.Policy{})
	put("transform", model.Policy{DependsOn: []string{"extract"}, OnSuccess: []model.Chain{{Task: "report"}}})
	put("load", model.Policy{DependsOn: []string{"transform"}})
	put("alone", model.Policy{})
	in, err := a.tasks.Trigger(ctx, c, "extract", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		Name  string
		Level int
	}
	for _, tt := range []struct {
		depth     int
		nodes     []node
		edges     int
		truncated bool
	}{
		{1, []node{{"extract", -1}, {"transform", 0}, {"load", 1}, {"report", 1}}, 3, true},
		{3, []node{{"ingest", -2}, {"extract", -1}, {"transform", 0}, {"load", 1}, {"report", 1}}, 4, false},
	} {
		g, err := a.console.TaskGraph(ctx, "transform", tt.depth)
		if err != nil {
			t.Fatal(err)
		}
		var got []node
		for _, n := range g.Nodes {
			got = append(got, node{n.Name, n.Level})
			if (n.Name == "extract") != (n.LastRun != nil) || n.LastRun != nil && n.LastRun.ID != in.ID {
				t.Errorf("depth %d: node %+v: only extract has a newest instance, %s", tt.depth, n, in.ID)
			}
		}
		if !reflect.DeepEqual(got, tt.nodes) || len(g.Edges) != tt.edges || g.Truncated != tt.truncated {
			t.Errorf("depth %d: nodes %v, edges %+v, truncated %v; want %v, %d edges, truncated %v", tt.depth, got, g.Edges, g.Truncated, tt.nodes, tt.edges, tt.truncated)
		}
	}
	g, err := a.console.TaskGraph(ctx, "extract", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(g.Edges, live.GraphEdge{From: "extract", To: "page", Kind: "onFailure"}) {
		t.Errorf("extract's graph %+v lacks its onFailure edge to page", g)
	}
	if _, err := a.console.TaskGraph(ctx, "nope", 1); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("graph of a missing task: %v, want not found", err)
	}
}
