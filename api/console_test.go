package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/api/visible"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

func (f fakeConsole) Overview(ctx context.Context) (*live.Overview, error) {
	f.record(ctx, call{Method: "Overview"})
	return answer(f.fakeBackend, f.OverviewV, &live.Overview{})
}

func (f fakeConsole) TaskSummaries(ctx context.Context, flt model.TaskFilter, runs int) (*live.TaskSummaryList, error) {
	f.record(ctx, call{Method: "TaskSummaries", Filter: flt, N: runs})
	return answer(f.fakeBackend, f.Summaries, &live.TaskSummaryList{Tasks: []live.SummarizedTask{}})
}

func (f fakeConsole) TaskCalendar(ctx context.Context, name string, days int) (*live.TaskCalendar, error) {
	f.record(ctx, call{Method: "TaskCalendar", Name: name, N: days})
	return answer(f.fakeBackend, f.Calendar, &live.TaskCalendar{Task: name, Days: []live.CalendarDay{}})
}

func (f fakeConsole) TaskFires(ctx context.Context, name string, n int, from live.FireCursor) (*live.TaskFires, error) {
	f.record(ctx, call{Method: "TaskFires", Name: name, N: n, Cursor: from})
	return answer(f.fakeBackend, f.Fires, &live.TaskFires{Fires: []live.FirePreview{}})
}

func (f fakeConsole) TaskGraph(ctx context.Context, name string, depth int) (*live.TaskGraph, error) {
	f.record(ctx, call{Method: "TaskGraph", Name: name, N: depth})
	return answer(f.fakeBackend, f.Graph, &live.TaskGraph{Task: name, Depth: depth})
}

func (f fakeConsole) TaskCounts(ctx context.Context, name string, flt live.CountFilter) (*live.InstanceCounts, error) {
	f.record(ctx, call{Method: "TaskCounts", Name: name, Counts: flt})
	return answer(f.fakeBackend, f.CountsV, &live.InstanceCounts{Counts: map[string]int{}})
}

// answer returns the fake's error if set, else its configured value, else
// def.
func answer[T any](f *fakeBackend, v, def *T) (*T, error) {
	if f.Err != nil {
		return nil, f.Err
	}
	if v != nil {
		return v, nil
	}
	return def, nil
}

// jsonKeys returns the sorted keys of a JSON object.
func jsonKeys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s is not an object: %v", raw, err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func keys(s string) []string {
	out := strings.Fields(s)
	slices.Sort(out)
	return out
}

// TestServer_ConsoleShapes pins the JSON of the console's reads to the
// contract the console is written against (plan/console-api.md).
func TestServer_ConsoleShapes(t *testing.T) {
	at := model.UnixMilli(1_795_000_000_000)
	outcomes := `fired SUCCESS FAILED TERMINATED CANCELED SKIPPED`
	fb := &fakeBackend{
		OverviewV: &live.Overview{Time: at, PerMinute: []live.MinuteStats{{Minute: at}},
			RecentFailures: []live.RecentFailure{{ID: "00000000000000ff", Task: "daily", State: model.StateFailed, FinishedAt: at}},
			RecentMisfires: []live.RecentMisfire{{Task: "daily", Time: at}}, ExecutorsError: "no leader"},
		Summaries: &live.TaskSummaryList{Tasks: []live.SummarizedTask{{Task: model.Task{Name: "daily"},
			Summary: live.TaskSummary{RecentRuns: []live.RunBrief{{ID: "00000000000000ff"}}}}}},
		Calendar: &live.TaskCalendar{Task: "daily", Timezone: "UTC", Days: []live.CalendarDay{{Date: "2026-11-30", Counts: map[string]int{"SUCCESS": 3}}}},
		Fires:    &live.TaskFires{Timezone: "America/Los_Angeles", Fires: []live.FirePreview{{Time: at, Local: "x", Zone: "PDT", Offset: -25200}}},
		CountsV:  &live.InstanceCounts{Total: 4, Counts: map[string]int{"SUCCESS": 3, "RUNNING": 1}},
	}
	tests := []struct {
		name string
		path string
		// want lists the keys of each object: the path to it ("" for the
		// body), then its keys.
		want map[string]string
	}{
		{"overview", "/v1/overview", map[string]string{
			"":                 "time counts tasks lastHour lastDay perMinute recentFailures recentMisfires alertsPending alerts alertsFiring notificationsPending cluster executors executorsError",
			"counts":           "SCHEDULED READY RUNNING RETRYING BLOCKED WAITING_APPROVAL",
			"tasks":            "total paused",
			"lastHour":         outcomes,
			"lastDay":          outcomes,
			"perMinute.0":      "minute fired succeeded failed",
			"recentFailures.0": "id task state attempts finishedAt lastError",
			"recentMisfires.0": "task time message",
		}},
		{"summaries", "/v1/tasks?summary=true", map[string]string{
			"tasks.0.summary":              "nextFire lastRun recentRuns",
			"tasks.0.summary.recentRuns.0": "id state source scheduledAt finishedAt",
		}},
		{"calendar", "/v1/tasks/daily/calendar", map[string]string{
			"": "task timezone days", "days.0": "date counts",
		}},
		{"fires", "/v1/tasks/daily/fires", map[string]string{
			"": "timezone fires", "fires.0": "time local zone offset dstChange",
		}},
		{"counts", "/v1/tasks/daily/counts", map[string]string{"": "total counts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, api.Config{}, fb, getReq(tt.path))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d (body %s)", rec.Code, rec.Body)
			}
			for path, want := range tt.want {
				raw := json.RawMessage(rec.Body.Bytes())
				for _, step := range strings.Split(path, ".") {
					if step == "" {
						continue
					}
					var next json.RawMessage
					if i := strings.IndexFunc(step, func(r rune) bool { return r < '0' || r > '9' }); i < 0 {
						var arr []json.RawMessage
						if err := json.Unmarshal(raw, &arr); err != nil || len(arr) == 0 {
							t.Fatalf("%s: not a non-empty array in %s", path, rec.Body)
						}
						next = arr[0]
					} else {
						var m map[string]json.RawMessage
						if err := json.Unmarshal(raw, &m); err != nil {
							t.Fatalf("%s: not an object in %s", path, rec.Body)
						}
						next = m[step]
					}
					raw = next
				}
				if got := jsonKeys(t, raw); !reflect.DeepEqual(got, keys(want)) {
					t.Errorf("%q: keys %v, want %v", path, got, keys(want))
				}
			}
		})
	}
}

// TestServer_ConsoleReads: each read validates its parameters and calls
// the backend with them (defaults filled in).
func TestServer_ConsoleReads(t *testing.T) {
	from := *timeAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	to := *timeAt(time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC))
	paused := true
	tests := []struct {
		name string
		path string
		want []call
	}{
		{"overview", "/v1/overview", []call{{Method: "Overview"}}},
		{"overview consistent", "/v1/overview?consistent=true", []call{{Method: "Overview"}}},
		{"summaries default runs", "/v1/tasks?summary=true", []call{{Method: "TaskSummaries", N: live.DefaultSummaryRuns}}},
		{"summaries with filters", "/v1/tasks?summary=true&runs=100&paused=true&limit=5&cursor=a",
			[]call{{Method: "TaskSummaries", N: 100, Filter: model.TaskFilter{Paused: &paused, Limit: 5, Cursor: "a"}}}},
		{"summary=false lists", "/v1/tasks?summary=false", []call{{Method: "ListTasks"}}},
		{"calendar default", "/v1/tasks/daily/calendar", []call{{Method: "TaskCalendar", Name: "daily", N: 90}}},
		{"calendar 400 days", "/v1/tasks/daily/calendar?days=400", []call{{Method: "TaskCalendar", Name: "daily", N: 400}}},
		// One fire more than asked for: it says whether there is a next page.
		{"fires default", "/v1/tasks/daily/fires", []call{{Method: "TaskFires", Name: "daily", N: 21}}},
		{"fires 200 consistent", "/v1/tasks/daily/fires?n=200&consistent=true", []call{{Method: "TaskFires", Name: "daily", N: 201}}},
		{"fires after a cursor", "/v1/tasks/daily/fires?n=5&cursor=1795000000000000000.40",
			[]call{{Method: "TaskFires", Name: "daily", N: 6, Cursor: live.FireCursor{After: time.Unix(0, 1795000000000000000).UTC(), Shown: 40}}}},
		{"graph default", "/v1/tasks/daily/graph", []call{{Method: "TaskGraph", Name: "daily", N: 3}}},
		{"graph depth 10", "/v1/tasks/daily/graph?depth=10", []call{{Method: "TaskGraph", Name: "daily", N: 10}}},
		{"counts", "/v1/tasks/daily/counts", []call{{Method: "TaskCounts", Name: "daily"}}},
		{"counts filtered", "/v1/tasks/daily/counts?source=backfill&from=2026-01-02T03:04:05Z&to=2026-02-02T00:00:00Z",
			[]call{{Method: "TaskCounts", Name: "daily", Counts: live.CountFilter{Source: model.SourceBackfill, From: from, To: to}}}},
		{"counts from only", "/v1/tasks/daily/counts?from=2026-01-02T03:04:05Z", []call{{Method: "TaskCounts", Name: "daily", Counts: live.CountFilter{From: from}}}},
		{"instances source and until", "/v1/instances?source=backfill&until=2026-02-02T00:00:00Z&state=READY",
			[]call{{Method: "ListInstances", Instances: model.InstanceFilter{Source: model.SourceBackfill, Until: to, State: model.StateReady}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{}, fb, getReq(tt.path))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d (body %s)", rec.Code, rec.Body)
			}
			if got := fb.Calls(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("backend calls:\ngot  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestServer_FiresPaged: a page of fires that has more after it carries
// the cursor of the next page (the last fire's time and the count listed
// so far), and the last page none.
func TestServer_FiresPaged(t *testing.T) {
	fires := make([]live.FirePreview, 4)
	for i := range fires {
		fires[i].Time = model.UnixMilli(1_795_000_000_000 + int64(i)*60_000)
	}
	for _, tt := range []struct {
		name, path string
		answer     int
		want       int
		cursor     string
	}{
		{"more", "/v1/tasks/daily/fires?n=3", 4, 3, "1795000120000000000.3"},
		{"more after a cursor", "/v1/tasks/daily/fires?n=3&cursor=1794999940000000000.7", 4, 3, "1795000120000000000.10"},
		{"last page", "/v1/tasks/daily/fires?n=3", 3, 3, ""},
		{"short last page", "/v1/tasks/daily/fires?n=5", 2, 2, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{Fires: &live.TaskFires{Timezone: "UTC", Fires: fires[:tt.answer]}}
			rec := serve(t, api.Config{}, fb, getReq(tt.path))
			var got struct {
				Fires      []live.FirePreview `json:"fires"`
				NextCursor *string            `json:"nextCursor"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK {
				t.Fatalf("status %d, %v (body %s)", rec.Code, err, rec.Body)
			}
			if len(got.Fires) != tt.want || (got.NextCursor == nil) != (tt.cursor == "") || got.NextCursor != nil && *got.NextCursor != tt.cursor {
				t.Errorf("got %d fires, cursor %v; want %d, %q (body %s)", len(got.Fires), got.NextCursor, tt.want, tt.cursor, rec.Body)
			}
		})
	}
}

// TestServer_ConsoleBadInput: bad parameters are 400s naming the field,
// and reach no backend method (not even the read barrier).
func TestServer_ConsoleBadInput(t *testing.T) {
	tests := []struct {
		name      string
		path      string
		wantField string
	}{
		{"overview consistent=maybe", "/v1/overview?consistent=maybe", "consistent"},
		{"summary=maybe", "/v1/tasks?summary=maybe", "summary"},
		{"runs without summary", "/v1/tasks?runs=5", "runs"},
		{"runs 0", "/v1/tasks?summary=true&runs=0", "runs"},
		{"runs 101", "/v1/tasks?summary=true&runs=101", "runs"},
		{"runs abc", "/v1/tasks?summary=true&runs=abc", "runs"},
		{"summary with bad limit", "/v1/tasks?summary=true&limit=0", "limit"},
		{"calendar days 0", "/v1/tasks/daily/calendar?days=0", "days"},
		{"calendar days 401", "/v1/tasks/daily/calendar?days=401", "days"},
		{"calendar days x", "/v1/tasks/daily/calendar?days=x", "days"},
		{"calendar bad name", "/v1/tasks/Daily/calendar", "name"},
		{"fires n 0", "/v1/tasks/daily/fires?n=0", "n"},
		{"fires n 201", "/v1/tasks/daily/fires?n=201", "n"},
		{"fires bad name", "/v1/tasks/-d/fires", "name"},
		{"fires consistent=maybe", "/v1/tasks/daily/fires?consistent=maybe", "consistent"},
		{"fires cursor not one", "/v1/tasks/daily/fires?cursor=abc", "cursor"},
		{"fires cursor without count", "/v1/tasks/daily/fires?cursor=1795000000000000000", "cursor"},
		{"fires cursor count 0", "/v1/tasks/daily/fires?cursor=1795000000000000000.0", "cursor"},
		{"graph depth 0", "/v1/tasks/daily/graph?depth=0", "depth"},
		{"graph depth 11", "/v1/tasks/daily/graph?depth=11", "depth"},
		{"graph bad name", "/v1/tasks/-d/graph", "name"},
		{"counts unknown source", "/v1/tasks/daily/counts?source=manual", "source"},
		{"counts bad from", "/v1/tasks/daily/counts?from=yesterday", "from"},
		{"counts bad to", "/v1/tasks/daily/counts?to=2026-01-02", "to"},
		{"counts to before from", "/v1/tasks/daily/counts?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "to"},
		{"counts bad name", "/v1/tasks/_x/counts", "name"},
		{"instances unknown source", "/v1/instances?source=cronjob", "source"},
		{"instances uppercase source", "/v1/instances?source=CRON", "source"},
		{"instances bad until", "/v1/instances?until=tomorrow", "until"},
		{"instances bad until with consistent=true", "/v1/instances?consistent=true&until=1", "until"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{}, fb, getReq(tt.path))
			checkRejected(t, fb, rec, http.StatusBadRequest, model.CodeInvalid, tt.wantField)
		})
	}
}

// TestServer_SummariesRedacted: summaries are redacted like task lists.
func TestServer_SummariesRedacted(t *testing.T) {
	task := model.Task{Name: "daily", Action: model.Action{Type: model.ActionShell, Command: "x",
		Env: map[string]model.Value{"TOKEN": {Text: "hunter2"}}}}
	fb := &fakeBackend{Summaries: &live.TaskSummaryList{Tasks: []live.SummarizedTask{{Task: task}}}}
	rec := serve(t, api.Config{Auth: roleTokens}, fb, request{method: http.MethodGet, path: "/v1/tasks?summary=true",
		header: map[string]string{"Authorization": "Bearer reader"}})
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "hunter2") || !strings.Contains(rec.Body.String(), visible.Redacted) {
		t.Fatalf("status %d, body %s: want the env value redacted", rec.Code, rec.Body)
	}
	if fb.Summaries.Tasks[0].Action.Env["TOKEN"].Text != "hunter2" {
		t.Error("the backend's task was changed")
	}
}
