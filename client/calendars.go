package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// calendarCalls are the Client's calls on what tasks share: exclusion
// calendars, blackout windows and pools (embedded in Client: they are its
// methods).
type calendarCalls struct {
	*transport
}

// PutCalendar creates or replaces an exclusion calendar
// (PUT /v1/calendars/{name}); the server's fields of c are ignored.
func (c *calendarCalls) PutCalendar(ctx context.Context, cal *calendar.Calendar) (*calendar.Calendar, error) {
	return call[calendar.Calendar](ctx, c.transport, http.MethodPut, calendarPath(cal.Name), cal)
}

// ListCalendars lists the calendars (GET /v1/calendars).
func (c *calendarCalls) ListCalendars(ctx context.Context) (*calendar.List, error) {
	return call[calendar.List](ctx, c.transport, http.MethodGet, "/v1/calendars", nil)
}

// GetCalendar returns one calendar, with the tasks that use it.
func (c *calendarCalls) GetCalendar(ctx context.Context, name string) (*calendar.Calendar, error) {
	return call[calendar.Calendar](ctx, c.transport, http.MethodGet, calendarPath(name), nil)
}

// DeleteCalendar deletes a calendar and returns what it was.
func (c *calendarCalls) DeleteCalendar(ctx context.Context, name string) (*calendar.Calendar, error) {
	return call[calendar.Calendar](ctx, c.transport, http.MethodDelete, calendarPath(name), nil)
}

// PutWindow creates or replaces a blackout window
// (PUT /v1/windows/{name}); the server's fields of w are ignored.
func (c *calendarCalls) PutWindow(ctx context.Context, w *calendar.Window) (*calendar.Window, error) {
	return call[calendar.Window](ctx, c.transport, http.MethodPut, windowPath(w.Name), w)
}

// ListWindows lists the windows with their status at the server's time
// (GET /v1/windows).
func (c *calendarCalls) ListWindows(ctx context.Context) (*calendar.WindowList, error) {
	return call[calendar.WindowList](ctx, c.transport, http.MethodGet, "/v1/windows", nil)
}

// GetWindow returns one window with its status.
func (c *calendarCalls) GetWindow(ctx context.Context, name string) (*calendar.Window, error) {
	return call[calendar.Window](ctx, c.transport, http.MethodGet, windowPath(name), nil)
}

// DeleteWindow deletes a window and returns what it was.
func (c *calendarCalls) DeleteWindow(ctx context.Context, name string) (*calendar.Window, error) {
	return call[calendar.Window](ctx, c.transport, http.MethodDelete, windowPath(name), nil)
}

func calendarPath(name string) string { return "/v1/calendars/" + url.PathEscape(name) }
func windowPath(name string) string   { return "/v1/windows/" + url.PathEscape(name) }
func poolPath(name string) string     { return "/v1/pools/" + url.PathEscape(name) }

// PutPool creates or replaces a pool of slots (PUT /v1/pools/{name});
// the server's fields of p (its counts) are ignored.
func (c *calendarCalls) PutPool(ctx context.Context, p *model.Pool) (*model.Pool, error) {
	return call[model.Pool](ctx, c.transport, http.MethodPut, poolPath(p.Name), p)
}

// ListPools lists the pools with their counts (GET /v1/pools).
func (c *calendarCalls) ListPools(ctx context.Context) (*model.PoolList, error) {
	return call[model.PoolList](ctx, c.transport, http.MethodGet, "/v1/pools", nil)
}

// GetPool returns one pool with its counts and tasks.
func (c *calendarCalls) GetPool(ctx context.Context, name string) (*model.Pool, error) {
	return call[model.Pool](ctx, c.transport, http.MethodGet, poolPath(name), nil)
}

// DeletePool deletes a pool and returns what it was.
func (c *calendarCalls) DeletePool(ctx context.Context, name string) (*model.Pool, error) {
	return call[model.Pool](ctx, c.transport, http.MethodDelete, poolPath(name), nil)
}

// call sends one request with body (nil for none) and decodes the answer
// into a new T.
func call[T any](ctx context.Context, t *transport, method, path string, body any) (*T, error) {
	var out T
	return &out, t.Do(ctx, Request{Method: method, Path: path, Body: body}, &out)
}
