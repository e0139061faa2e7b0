package api

import (
	"context"
	"net/http"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// SharedBackend stores what tasks share (protocol 8): exclusion
// calendars, blackout windows and pools of slots. Reads of windows carry
// their status at the node's time, reads of pools their counts.
type SharedBackend interface {
	PutCalendar(ctx context.Context, c Caller, def *calendar.Calendar) (*calendar.Calendar, error)
	ListCalendars(ctx context.Context) (*calendar.List, error)
	GetCalendar(ctx context.Context, name string) (*calendar.Calendar, error)
	DeleteCalendar(ctx context.Context, c Caller, name string) (*calendar.Calendar, error)
	PutWindow(ctx context.Context, c Caller, def *calendar.Window) (*calendar.Window, error)
	ListWindows(ctx context.Context) (*calendar.WindowList, error)
	GetWindow(ctx context.Context, name string) (*calendar.Window, error)
	DeleteWindow(ctx context.Context, c Caller, name string) (*calendar.Window, error)
	PutPool(ctx context.Context, c Caller, def *model.Pool) (*model.Pool, error)
	ListPools(ctx context.Context) (*model.PoolList, error)
	GetPool(ctx context.Context, name string) (*model.Pool, error)
	DeletePool(ctx context.Context, c Caller, name string) (*model.Pool, error)
}

// defRoutes are the four routes of a kind of named definition (a
// calendar, a window, a pool): put, list, get and delete.
type defRoutes[T calendar.Calendar | calendar.Window | model.Pool] struct {
	s      *Server
	name   func(*T) *string
	check  func(*T) error
	put    func(b SharedBackend, ctx context.Context, c Caller, def *T) (*T, error)
	list   func(b SharedBackend, ctx context.Context) (any, error)
	get    func(b SharedBackend, ctx context.Context, name string) (*T, error)
	delete func(b SharedBackend, ctx context.Context, c Caller, name string) (*T, error)
}

func calendarRoutes(s *Server) defRoutes[calendar.Calendar] {
	return defRoutes[calendar.Calendar]{s: s, name: func(c *calendar.Calendar) *string { return &c.Name },
		check: func(c *calendar.Calendar) error { *c = c.Definition(); c.Normalize(); return c.Validate() },
		put:   SharedBackend.PutCalendar, list: func(b SharedBackend, ctx context.Context) (any, error) { return b.ListCalendars(ctx) },
		get: SharedBackend.GetCalendar, delete: SharedBackend.DeleteCalendar}
}

func windowRoutes(s *Server) defRoutes[calendar.Window] {
	return defRoutes[calendar.Window]{s: s, name: func(w *calendar.Window) *string { return &w.Name },
		check: func(w *calendar.Window) error { *w = w.Definition(); w.Normalize(); return w.Validate() },
		put:   SharedBackend.PutWindow, list: func(b SharedBackend, ctx context.Context) (any, error) { return b.ListWindows(ctx) },
		get: SharedBackend.GetWindow, delete: SharedBackend.DeleteWindow}
}

func poolRoutes(s *Server) defRoutes[model.Pool] {
	return defRoutes[model.Pool]{s: s, name: func(p *model.Pool) *string { return &p.Name },
		check: func(p *model.Pool) error { *p = p.Definition(); return p.Validate() },
		put:   SharedBackend.PutPool, list: func(b SharedBackend, ctx context.Context) (any, error) { return b.ListPools(ctx) },
		get: SharedBackend.GetPool, delete: SharedBackend.DeletePool}
}

func (d defRoutes[T]) putDef(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	var def T
	if err := decode(r, &def); err != nil {
		writeError(w, err)
		return
	}
	if n := d.name(&def); *n != "" && *n != name {
		writeError(w, model.FieldErrorf("name", "%q differs from the name in the path (%q)", *n, name))
		return
	}
	*d.name(&def) = name
	if err := d.check(&def); err != nil {
		writeError(w, err)
		return
	}
	reply(w)(d.put(d.s.b.shared, r.Context(), c, &def))
}

func (d defRoutes[T]) listDefs(w http.ResponseWriter, r *http.Request) {
	if !d.s.barrier(w, r) {
		return
	}
	reply(w)(d.list(d.s.b.shared, r.Context()))
}

func (d defRoutes[T]) getDef(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := model.ValidateName("name", name); err != nil {
		writeError(w, err)
		return
	}
	if !d.s.barrier(w, r) {
		return
	}
	reply(w)(d.get(d.s.b.shared, r.Context(), name))
}

func (d defRoutes[T]) deleteDef(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	reply(w)(d.delete(d.s.b.shared, r.Context(), c, name))
}
