package agent

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/api/pages"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestAgent_Audit: GET /v1/audit lists the definition changes of every
// task newest first, each with who, when, the definition and the one
// before it; filtered by task and by actor; paged by a cursor that
// neither repeats nor skips a change; a deleted task's changes stay; a
// bad cursor is a 400 naming it.
func TestAgent_Audit(t *testing.T) {
	a := startAgent(t)
	ctx := context.Background()
	// Each change in a millisecond of its own, so that newest first is
	// one order (equal times go by task name).
	tick := func() {
		from := time.Now().UnixMilli()
		testkit.Until(t, time.Second, "the next millisecond", func() bool { return time.Now().UnixMilli() > from+1 })
	}
	put := func(actor, name, cmd string) {
		t.Helper()
		tick()
		task := &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: cmd}}
		if _, err := a.tasks.PutTask(ctx, api.Caller{Actor: actor}, task, api.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("alice", "extract", "echo 1")
	put("bob", "load", "echo 1")
	put("alice", "extract", "echo 2")
	tick()
	if _, err := a.tasks.PauseTask(ctx, api.Caller{Actor: "bob"}, "load"); err != nil {
		t.Fatal(err)
	}
	put("bob", "extract", "echo 3")
	tick()
	if _, err := a.tasks.DeleteTask(ctx, api.Caller{Actor: "alice"}, "load"); err != nil {
		t.Fatal(err)
	}

	get := func(q string) pages.AuditPage {
		t.Helper()
		var p pages.AuditPage
		if code := apiCall(t, a, http.MethodGet, "/v1/audit"+q, "", &p); code != 200 {
			t.Fatalf("GET /v1/audit%s: %d", q, code)
		}
		return p
	}
	line := func(e pages.AuditEntry) string {
		return fmt.Sprintf("%s v%d %s by %s", e.Task, e.Version, e.Op, e.Actor)
	}
	all := get("")
	want := []string{"load v3 delete by alice", "extract v3 update by bob", "load v2 pause by bob", "extract v2 update by alice",
		"load v1 create by bob", "extract v1 create by alice"}
	if len(all.Entries) != len(want) || all.NextCursor != "" {
		t.Fatalf("audit: %d entries, cursor %q; want %d", len(all.Entries), all.NextCursor, len(want))
	}
	for i, e := range all.Entries {
		if line(e) != want[i] {
			t.Errorf("entry %d: %s, want %s", i, line(e), want[i])
		}
		if i > 0 && e.Time.After(all.Entries[i-1].Time.Time) {
			t.Errorf("entry %d is newer than the one before it", i)
		}
	}
	if e := all.Entries[1]; e.Definition == nil || e.Definition.Action.Command != "echo 3" || e.Previous == nil || e.Previous.Action.Command != "echo 2" {
		t.Errorf("extract v3: definition %+v previous %+v", e.Definition, e.Previous)
	}
	if e := all.Entries[5]; e.Definition == nil || e.Previous != nil {
		t.Errorf("a create has its definition and no previous one: %+v", e)
	}

	// Paged by 4 then the rest, and by 1: the same changes in the same order.
	for _, limit := range []int{1, 4} {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > len(want) {
				t.Fatalf("limit %d: the cursor does not end", limit)
			}
			p := get(fmt.Sprintf("?limit=%d&cursor=%s", limit, url.QueryEscape(cursor)))
			for _, e := range p.Entries {
				got = append(got, line(e))
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("limit %d pages: %v", limit, got)
		}
	}

	if p := get("?task=extract&actor=alice"); len(p.Entries) != 2 || line(p.Entries[0]) != want[3] || line(p.Entries[1]) != want[5] {
		t.Errorf("task=extract&actor=alice: %+v", p.Entries)
	}
	if p := get("?actor=bob"); len(p.Entries) != 3 {
		t.Errorf("actor=bob: %d entries", len(p.Entries))
	}
	if p := get("?task=nothing"); len(p.Entries) != 0 {
		t.Errorf("an unknown task: %d entries", len(p.Entries))
	}
	for q, field := range map[string]string{"?cursor=abc": "cursor", "?limit=0": "limit", "?task=bad%20name": "task"} {
		var e model.ErrorBody
		if code := apiCall(t, a, http.MethodGet, "/v1/audit"+q, "", &e); code != 400 || e.Error == nil || e.Error.Field != field {
			t.Errorf("GET /v1/audit%s: %d %+v, want a 400 naming %s", q, code, e.Error, field)
		}
	}
}
