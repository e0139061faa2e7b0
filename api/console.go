package api

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// Bounds of the console's query parameters.
const (
	defaultCalendarDays = 90
	maxCalendarDays     = 400
	defaultFires        = 20
	maxFires            = 200
)

func (s consoleRoutes) overview(w http.ResponseWriter, r *http.Request) {
	if !s.barrier(w, r) {
		return
	}
	reply(w)(s.b.console.Overview(r.Context()))
}

func (s consoleRoutes) taskCalendar(w http.ResponseWriter, r *http.Request) {
	s.taskIntRead(w, r, "days", defaultCalendarDays, maxCalendarDays,
		func(ctx contextT, name string, days int) (any, error) {
			return s.b.console.TaskCalendar(ctx, name, days)
		})
}

// taskFires serves GET /v1/tasks/{name}/fires?n=&cursor=: a page of n
// fire times, and the cursor of the next page when there are more (one
// more is asked for to know).
func (s consoleRoutes) taskFires(w http.ResponseWriter, r *http.Request) {
	from, err := live.ParseFireCursor(r.URL.Query().Get("cursor"))
	if err != nil {
		writeError(w, err)
		return
	}
	s.taskIntRead(w, r, "n", defaultFires, maxFires,
		func(ctx contextT, name string, n int) (any, error) {
			f, err := s.b.console.TaskFires(ctx, name, n+1, from)
			if err != nil || len(f.Fires) <= n {
				return f, err
			}
			f.Fires = f.Fires[:n]
			return firesPage{f, live.FireCursor{After: f.Fires[n-1].Time.Time, Shown: from.Shown + n}.String()}, nil
		})
}

// firesPage is a page of fires that has a next one.
type firesPage struct {
	*live.TaskFires
	NextCursor string `json:"nextCursor"`
}

// taskIntRead serves a read of one task that takes the integer query
// parameter key (def when absent, 1 to hi): calendar?days=, fires?n=.
func (s consoleRoutes) taskIntRead(w http.ResponseWriter, r *http.Request, key string, def, hi int, fn func(ctx contextT, name string, n int) (any, error)) {
	n, err := intParam(r.URL.Query(), key, def, 1, hi)
	if err != nil {
		writeError(w, err)
		return
	}
	s.readTask(w, r, func(ctx contextT, name string) (any, error) { return fn(ctx, name, n) })
}

// taskCounts serves GET /v1/tasks/{name}/counts?source=&from=&to=.
func (s consoleRoutes) taskCounts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := live.CountFilter{Source: q.Get("source")}
	err := validSource(f.Source)
	if err == nil {
		f.From, err = timeParam(q, "from")
	}
	if err == nil {
		f.To, err = timeParam(q, "to")
	}
	if err == nil && !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From.Time) {
		err = model.FieldErrorf("to", "must not be before from")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.readTask(w, r, func(ctx contextT, n string) (any, error) { return s.b.console.TaskCounts(ctx, n, f) })
}

// summaryParams reads ?summary= and ?runs= of GET /v1/tasks: whether to
// answer summaries and with how many runs.
func summaryParams(q url.Values) (bool, int, error) {
	on := false
	if v := q.Get("summary"); v != "" {
		var err error
		if on, err = strconv.ParseBool(v); err != nil {
			return false, 0, model.FieldErrorf("summary", "must be true or false, got %q", v)
		}
	}
	if !on && q.Get("runs") != "" {
		return false, 0, model.FieldErrorf("runs", "applies with summary=true only")
	}
	runs, err := intParam(q, "runs", live.DefaultSummaryRuns, 1, live.MaxSummaryRuns)
	return on, runs, err
}

// intParam reads the integer query parameter key: def when absent, else
// from lo to hi.
func intParam(q url.Values, key string, def, lo, hi int) (int, error) {
	v := q.Get(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, model.FieldErrorf(key, "must be an integer from %d to %d, got %q", lo, hi, v)
	}
	return n, nil
}

// timeParam reads the RFC 3339 query parameter key (zero when absent).
func timeParam(q url.Values, key string) (model.Time, error) {
	var t model.Time
	v := q.Get(key)
	if v == "" {
		return t, nil
	}
	if err := t.UnmarshalJSON([]byte(strconv.Quote(v))); err != nil {
		return t, model.FieldErrorf(key, "%q is not an RFC 3339 time", v)
	}
	return t, nil
}

// validSource checks ?source= ("" for any).
func validSource(v string) error {
	if v != "" && !slices.Contains(model.Sources, v) {
		return model.FieldErrorf("source", "unknown source %q (one of %v)", v, model.Sources)
	}
	return nil
}
