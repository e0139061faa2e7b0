package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// streamEvent is one event read from an SSE stream.
type streamEvent struct{ typ, id, data string }

// readStream parses the SSE stream of resp into a channel, closed when the
// stream ends.
func readStream(resp *http.Response) <-chan streamEvent {
	out := make(chan streamEvent, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var ev streamEvent
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ": ")
			switch k {
			case "event":
				ev.typ = v
			case "id":
				ev.id = v
			case "data":
				ev.data = v
			case "":
				if ev.typ != "" {
					out <- ev
				}
				ev = streamEvent{}
			}
		}
	}()
	return out
}

// TestAgent_EventsOnFollower: a follower streams the changes it applies,
// with the applied index as the event id, and ends the stream when it
// shuts down.
func TestAgent_EventsOnFollower(t *testing.T) {
	tc := startCluster(t, 3, nil)
	l := tc.leader()
	f := tc.follower(l)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+f.HTTPAddr()+"/v1/events?task=live", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readStream(resp)
	testkit.Until(t, 5*time.Second, "the subscription", func() bool { return f.console.Subscribers() > 0 })

	c := api.Caller{Actor: "tester"}
	if _, err := l.tasks.PutTask(ctx, c, eventTask("other"), api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.tasks.PutTask(ctx, c, eventTask("live"), api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	in, err := l.tasks.Trigger(ctx, c, "live", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	next := func() streamEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended early")
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
		}
		return streamEvent{}
	}
	ev := next()
	var task live.Task
	if err := json.Unmarshal([]byte(ev.data), &task); err != nil || ev.typ != "task" || task.Name != "live" || task.Index == 0 || ev.id == "" {
		t.Fatalf("first event: got %+v (%v), want the task live with its index", ev, err)
	}
	ev = next()
	var inst live.Instance
	if err := json.Unmarshal([]byte(ev.data), &inst); err != nil || ev.typ != "instance" || inst.ID != in.ID || inst.Task != "live" || inst.State != model.StateReady {
		t.Fatalf("second event: got %+v (%v), want instance %s READY", ev, err, in.ID)
	}
	if inst.Index <= task.Index || inst.Index > f.fsm.AppliedIndex() {
		t.Errorf("index %d: want after the task's %d and at most the follower's applied %d", inst.Index, task.Index, f.fsm.AppliedIndex())
	}

	sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer scancel()
	if err := f.Shutdown(sctx); err != nil {
		t.Logf("shutdown: %v", err)
	}
	select {
	case _, ok := <-events:
		for ok {
			_, ok = <-events
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end when the node shut down")
	}
	if f.console.Subscribers() > 0 {
		t.Error("a subscriber is still registered after shutdown")
	}
}

func TestAgent_Upcoming(t *testing.T) {
	a := startAgent(t)
	ctx := context.Background()
	c := api.Caller{Actor: "tester"}
	for _, tk := range []*model.Task{
		{Name: "hourly", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 * * * *"}, Action: model.Action{Type: model.ActionShell, Command: "true"}},
		{Name: "halfhourly", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/30 * * * *"}, Action: model.Action{Type: model.ActionShell, Command: "true"}},
		eventTask("event"),
	} {
		if _, err := a.tasks.PutTask(ctx, c, tk, api.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.tasks.PauseTask(ctx, c, "halfhourly"); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	u, err := a.console.Upcoming(ctx, live.UpcomingQuery{From: from, To: from.Add(2 * time.Hour), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range u.Fires {
		got = append(got, f.Task+"@"+f.Time.Format("15:04"))
	}
	if strings.Join(got, " ") != "hourly@12:00 hourly@13:00 hourly@14:00" || u.Truncated {
		t.Errorf("got %v truncated=%v", got, u.Truncated)
	}
	if _, err := a.console.Upcoming(ctx, live.UpcomingQuery{From: from, To: from.Add(time.Hour), Limit: 10, Task: "nope"}); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("unknown task: got %v, want not found", err)
	}
}

var _ fsm.Observer = (*Agent)(nil)
