package api_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// fakeCalendars records the calendar role's calls, the definitions put in
// Cmd (their exclude or ranges, joined).
type fakeCalendars struct{ *fakeBackend }

var _ api.SharedBackend = fakeCalendars{}

func (f fakeCalendars) PutCalendar(ctx context.Context, c api.Caller, d *calendar.Calendar) (*calendar.Calendar, error) {
	f.record(ctx, call{Method: "PutCalendar", Name: d.Name, Cmd: d.Timezone + " " + strings.Join(d.Exclude, ",")})
	return d, f.Err
}

func (f fakeCalendars) ListCalendars(ctx context.Context) (*calendar.List, error) {
	f.record(ctx, call{Method: "ListCalendars"})
	return &calendar.List{Calendars: []calendar.Calendar{}}, f.Err
}

func (f fakeCalendars) GetCalendar(ctx context.Context, name string) (*calendar.Calendar, error) {
	f.record(ctx, call{Method: "GetCalendar", Name: name})
	return &calendar.Calendar{Name: name}, f.Err
}

func (f fakeCalendars) DeleteCalendar(ctx context.Context, c api.Caller, name string) (*calendar.Calendar, error) {
	f.record(ctx, call{Method: "DeleteCalendar", Name: name})
	return &calendar.Calendar{Name: name}, f.Err
}

func (f fakeCalendars) PutWindow(ctx context.Context, c api.Caller, d *calendar.Window) (*calendar.Window, error) {
	f.record(ctx, call{Method: "PutWindow", Name: d.Name, Cmd: d.Timezone + " " + d.Cron + " " + strings.Join(d.Ranges, ",")})
	return d, f.Err
}

func (f fakeCalendars) ListWindows(ctx context.Context) (*calendar.WindowList, error) {
	f.record(ctx, call{Method: "ListWindows"})
	return &calendar.WindowList{Windows: []calendar.Window{}}, f.Err
}

func (f fakeCalendars) GetWindow(ctx context.Context, name string) (*calendar.Window, error) {
	f.record(ctx, call{Method: "GetWindow", Name: name})
	return &calendar.Window{Name: name}, f.Err
}

func (f fakeCalendars) DeleteWindow(ctx context.Context, c api.Caller, name string) (*calendar.Window, error) {
	f.record(ctx, call{Method: "DeleteWindow", Name: name})
	return &calendar.Window{Name: name}, f.Err
}

func (f fakeCalendars) PutPool(ctx context.Context, c api.Caller, d *model.Pool) (*model.Pool, error) {
	f.record(ctx, call{Method: "PutPool", Name: d.Name, N: d.Slots})
	return d, f.Err
}

func (f fakeCalendars) ListPools(ctx context.Context) (*model.PoolList, error) {
	f.record(ctx, call{Method: "ListPools"})
	return &model.PoolList{Pools: []model.Pool{}}, f.Err
}

func (f fakeCalendars) GetPool(ctx context.Context, name string) (*model.Pool, error) {
	f.record(ctx, call{Method: "GetPool", Name: name})
	return &model.Pool{Name: name, Slots: 1}, f.Err
}

func (f fakeCalendars) DeletePool(ctx context.Context, c api.Caller, name string) (*model.Pool, error) {
	f.record(ctx, call{Method: "DeletePool", Name: name})
	return &model.Pool{Name: name}, f.Err
}

// TestServer_Calendars: definitions are normalized and checked before
// the backend sees them; a bad one is a 400 naming its field, and
// nothing is written.
func TestServer_Calendars(t *testing.T) {
	tests := []struct {
		name       string
		req        request
		wantStatus int
		wantField  string
		wantCalls  []call
	}{
		{"put a calendar", request{method: "PUT", path: "/v1/calendars/holidays", body: `{"exclude":[" 2026-12-25 ","2026-12-24/2026-12-26","sat"]}`},
			200, "", []call{{Method: "PutCalendar", Name: "holidays", Cmd: "UTC 2026-12-25,2026-12-24/2026-12-26,sat"}}},
		{"a bad date names its entry", request{method: "PUT", path: "/v1/calendars/holidays", body: `{"exclude":["2026-12-25","Dec 26"]}`},
			400, "exclude[1]", nil},
		{"a bad zone", request{method: "PUT", path: "/v1/calendars/holidays", body: `{"timezone":"Mars/Olympus","exclude":[]}`},
			400, "timezone", nil},
		{"a name that differs from the path", request{method: "PUT", path: "/v1/calendars/holidays", body: `{"name":"other","exclude":[]}`},
			400, "name", nil},
		{"an unknown field", request{method: "PUT", path: "/v1/calendars/holidays", body: `{"exclude":[],"weekly":["sat"]}`},
			400, "weekly", nil},
		{"list calendars", getReq("/v1/calendars"), 200, "", []call{{Method: "ListCalendars"}}},
		{"get a calendar", getReq("/v1/calendars/holidays"), 200, "", []call{{Method: "GetCalendar", Name: "holidays"}}},
		{"delete a calendar", request{method: "DELETE", path: "/v1/calendars/holidays"}, 200, "", []call{{Method: "DeleteCalendar", Name: "holidays"}}},
		{"put a window", request{method: "PUT", path: "/v1/windows/freeze", body: `{"timezone":"Europe/Berlin","cron":"0 22 * * 5","duration":"56h"}`},
			200, "", []call{{Method: "PutWindow", Name: "freeze", Cmd: "Europe/Berlin 0 22 * * 5 "}}},
		{"a window needs a schedule", request{method: "PUT", path: "/v1/windows/freeze", body: `{"selector":{"team":"a"}}`}, 400, "cron", nil},
		{"a repeat longer than its period", request{method: "PUT", path: "/v1/windows/freeze", body: `{"cron":"0 * * * *","duration":"2h"}`},
			400, "duration", nil},
		{"a bad range", request{method: "PUT", path: "/v1/windows/freeze", body: `{"ranges":["2026-12-31T18:00"]}`}, 400, "ranges[0]", nil},
		{"a bad selector", request{method: "PUT", path: "/v1/windows/freeze", body: `{"ranges":["2026-12-31"],"selector":{"a b":"1"}}`},
			400, "selector.a b", nil},
		{"list windows", getReq("/v1/windows"), 200, "", []call{{Method: "ListWindows"}}},
		{"delete a window", request{method: "DELETE", path: "/v1/windows/freeze"}, 200, "", []call{{Method: "DeleteWindow", Name: "freeze"}}},
		{"put a pool", request{method: "PUT", path: "/v1/pools/db", body: `{"slots":4,"busy":9}`}, 200, "", []call{{Method: "PutPool", Name: "db", N: 4}}},
		{"a pool without slots", request{method: "PUT", path: "/v1/pools/db", body: `{"description":"x"}`}, 400, "slots", nil},
		{"list pools", getReq("/v1/pools"), 200, "", []call{{Method: "ListPools"}}},
		{"get a pool", getReq("/v1/pools/db"), 200, "", []call{{Method: "GetPool", Name: "db"}}},
		{"delete a pool", request{method: "DELETE", path: "/v1/pools/db"}, 200, "", []call{{Method: "DeletePool", Name: "db"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{}, fb, tt.req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantField != "" && !strings.Contains(rec.Body.String(), `"field":"`+tt.wantField+`"`) {
				t.Errorf("body %s does not name field %s", rec.Body, tt.wantField)
			}
			got := fb.Calls()
			for i := range got {
				got[i].Caller = api.Caller{}
			}
			if !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("backend calls:\ngot  %+v\nwant %+v", got, tt.wantCalls)
			}
		})
	}
}
