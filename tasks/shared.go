package tasks

import (
	"context"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/trigger"
	"github.com/ax-scheduler/ax/wheel"
)

// SharedState is what the Shared role reads of the state machine
// (*fsm.FSM).
type SharedState interface {
	Calendars() (*calendar.List, error)
	Calendar(name string) (*calendar.Calendar, error)
	Windows() ([]calendar.Window, error)
	Window(name string) (*calendar.Window, error)
	ListTasks(f model.TaskFilter) (*model.TaskList, error)
	Pools() (*model.PoolList, error)
	Pool(name string) (*model.Pool, error)
}

// Shared stores what tasks share: the exclusion calendars, blackout
// windows and pools (api.SharedBackend); window reads carry their status
// at the node's clock.
type Shared struct {
	rep   replica.Proposer
	state SharedState
	clock wheel.Clock
}

var _ api.SharedBackend = (*Shared)(nil)

// NewShared returns the role of what tasks share.
func NewShared(clock wheel.Clock, rep replica.Proposer, state SharedState) *Shared {
	return &Shared{rep: rep, state: state, clock: clock}
}

// PutCalendar implements api.SharedBackend.
func (cs *Shared) PutCalendar(ctx context.Context, c api.Caller, def *calendar.Calendar) (*calendar.Calendar, error) {
	var out calendar.Calendar
	if err := replica.Write(ctx, cs.rep, c, command.TypePutCalendar, command.PutCalendar{Calendar: *def}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListCalendars implements api.SharedBackend.
func (cs *Shared) ListCalendars(context.Context) (*calendar.List, error) {
	return cs.state.Calendars()
}

// GetCalendar implements api.SharedBackend.
func (cs *Shared) GetCalendar(_ context.Context, name string) (*calendar.Calendar, error) {
	return cs.state.Calendar(name)
}

// DeleteCalendar implements api.SharedBackend.
func (cs *Shared) DeleteCalendar(ctx context.Context, c api.Caller, name string) (*calendar.Calendar, error) {
	var out calendar.Calendar
	if err := replica.Write(ctx, cs.rep, c, command.TypeDeleteCalendar, command.TaskRef{Name: name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PutWindow implements api.SharedBackend.
func (cs *Shared) PutWindow(ctx context.Context, c api.Caller, def *calendar.Window) (*calendar.Window, error) {
	var out calendar.Window
	if err := replica.Write(ctx, cs.rep, c, command.TypePutWindow, command.PutWindow{Window: *def}, &out); err != nil {
		return nil, err
	}
	return cs.withStatus(&out, cs.clock.Now())
}

// ListWindows implements api.SharedBackend.
func (cs *Shared) ListWindows(context.Context) (*calendar.WindowList, error) {
	l, err := cs.state.Windows()
	if err != nil {
		return nil, err
	}
	out := &calendar.WindowList{Windows: make([]calendar.Window, 0, len(l))}
	now := cs.clock.Now()
	for i := range l {
		w, err := cs.withStatus(&l[i], now)
		if err != nil {
			return nil, err
		}
		out.Windows = append(out.Windows, *w)
	}
	return out, nil
}

// GetWindow implements api.SharedBackend.
func (cs *Shared) GetWindow(_ context.Context, name string) (*calendar.Window, error) {
	w, err := cs.state.Window(name)
	if err != nil {
		return nil, err
	}
	return cs.withStatus(w, cs.clock.Now())
}

// DeleteWindow implements api.SharedBackend.
func (cs *Shared) DeleteWindow(ctx context.Context, c api.Caller, name string) (*calendar.Window, error) {
	var out calendar.Window
	if err := replica.Write(ctx, cs.rep, c, command.TypeDeleteWindow, command.TaskRef{Name: name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// maxStatusTasks bounds the tasks a window's status lists.
const maxStatusTasks = 1000

// withStatus adds w's status at now: whether it holds its tasks, its
// next span, and the tasks its selector matches.
func (cs *Shared) withStatus(w *calendar.Window, now time.Time) (*calendar.Window, error) {
	b, err := w.Compile()
	if err != nil {
		return w, nil // a zone this node cannot load: no status
	}
	st := &calendar.Status{Tasks: []string{}}
	if h, held := trigger.Held([]*trigger.Blackout{b}, now); held {
		from, until := model.Time{Time: h.From.UTC()}, model.Time{Time: h.Until.UTC()}
		st.Active, st.From, st.Until = true, &from, &until
	}
	if from, to := b.Next(now); !from.IsZero() {
		nf, nu := model.Time{Time: from.UTC()}, model.Time{Time: to.UTC()}
		st.NextFrom, st.NextUntil = &nf, &nu
	}
	for cursor := ""; len(st.Tasks) < maxStatusTasks; {
		l, err := cs.state.ListTasks(model.TaskFilter{Labels: w.Selector, Cursor: cursor, Limit: 1000})
		if err != nil {
			return nil, err
		}
		for _, t := range l.Tasks {
			st.Tasks = append(st.Tasks, t.Name)
		}
		if cursor = l.NextCursor; cursor == "" {
			break
		}
	}
	w.Status = st
	return w, nil
}

// PutPool implements api.SharedBackend.
func (cs *Shared) PutPool(ctx context.Context, c api.Caller, def *model.Pool) (*model.Pool, error) {
	var out model.Pool
	if err := replica.Write(ctx, cs.rep, c, command.TypePutPool, command.PutPool{Pool: *def}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListPools implements api.SharedBackend.
func (cs *Shared) ListPools(context.Context) (*model.PoolList, error) { return cs.state.Pools() }

// GetPool implements api.SharedBackend.
func (cs *Shared) GetPool(_ context.Context, name string) (*model.Pool, error) {
	return cs.state.Pool(name)
}

// DeletePool implements api.SharedBackend.
func (cs *Shared) DeletePool(ctx context.Context, c api.Caller, name string) (*model.Pool, error) {
	var out model.Pool
	if err := replica.Write(ctx, cs.rep, c, command.TypeDeletePool, command.TaskRef{Name: name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
