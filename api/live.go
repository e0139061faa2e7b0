package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/internal/sse"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// Bounds of GET /v1/upcoming.
const (
	defaultWithin   = time.Hour
	maxWithin       = 7 * 24 * time.Hour
	defaultUpcoming = 500
	maxUpcoming     = 5000
)

// whoami answers who the request's credentials make it: any valid
// principal, executor tokens included.
func (s consoleRoutes) whoami(w http.ResponseWriter, r *http.Request) {
	p := PrincipalFrom(r.Context())
	writeJSON(w, http.StatusOK, live.Whoami{Name: p.Name, Role: p.Role, ACL: s.b.acl.ACLEnabled(), Node: s.cfg.NodeID})
}

// events streams this node's applied changes as Server-Sent Events until
// the client goes away or the node stops. Each event's id is the applied
// Raft index of the batch that made the change (several events may share
// one). A subscriber that fell behind gets one "resync" event once it has
// read what was buffered.
func (s consoleRoutes) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := live.Filter{Task: q.Get("task"), Instance: q.Get("instance")}
	if f.Task != "" {
		if err := model.ValidateName("task", f.Task); err != nil {
			writeError(w, err)
			return
		}
	}
	if f.Instance != "" {
		if _, err := model.ParseID(f.Instance); err != nil {
			writeError(w, model.FieldErrorf("instance", "%q is not an instance id (16 hex digits)", f.Instance))
			return
		}
	}
	// The stream starts once this node reflects every write acknowledged
	// before the request (unless ?stale=true): what it sends is newer.
	if !s.barrier(w, r) {
		return
	}
	sub, err := s.b.live.Subscribe(r.Context(), f)
	if err != nil {
		writeError(w, err)
		return
	}
	defer sub.Close()
	st := sse.Start(w)
	defer st.End()
	keep := time.NewTicker(s.keepalive)
	defer keep.Stop()
	// Events are written as they come and flushed at most every
	// liveFlush: a burst within it leaves in one write. At 1,000 fires a
	// second a stream is flushed ten times a second, not thousands
	// (which cost the browser reading it a third of a core).
	flush := time.NewTimer(s.liveFlush)
	flush.Stop()
	pending := false
	events, resync := sub.Events(), false
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-s.cfg.Stopping:
			return
		case <-keep.C:
			err = st.Comment("keepalive")
		case <-sub.Lost():
			resync = true
		case <-flush.C:
			pending = false
			err = st.Flush()
		case ev := <-events:
			if err = writeLive(st, &ev); err == nil && !pending {
				pending = true
				flush.Reset(s.liveFlush)
			}
		}
		if err == nil && resync && len(events) == 0 {
			resync = false
			err = st.Event(live.TypeResync, 0, struct{}{})
		}
		if err != nil {
			return
		}
	}
}

func writeLive(st *sse.Stream, ev *live.Event) error {
	switch {
	case ev.Instance != nil:
		return st.Queue(live.TypeInstance, ev.Instance.Index, ev.Instance)
	case ev.Task != nil:
		return st.Queue(live.TypeTask, ev.Task.Index, ev.Task)
	}
	return nil
}

// upcoming answers the fire times of unpaused tasks from now to now +
// within, merged by time.
func (s consoleRoutes) upcoming(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	within := defaultWithin
	if v := q.Get("within"); v != "" {
		d, ok := live.ParseWithin(v)
		if !ok || d <= 0 || d > maxWithin {
			writeError(w, model.FieldErrorf("within", "must be a duration above 0 and at most 7d, such as 1h or 2d, got %q", v))
			return
		}
		within = d
	}
	limit := defaultUpcoming
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxUpcoming {
			writeError(w, model.FieldErrorf("limit", "must be an integer from 1 to %d, got %q", maxUpcoming, v))
			return
		}
		limit = n
	}
	task := q.Get("task")
	if task != "" {
		if err := model.ValidateName("task", task); err != nil {
			writeError(w, err)
			return
		}
	}
	if !s.barrier(w, r) {
		return
	}
	from := s.cfg.Now().UTC().Truncate(time.Millisecond)
	reply(w)(s.b.live.Upcoming(r.Context(), live.UpcomingQuery{From: from, To: from.Add(within), Limit: limit, Task: task}))
}

// logChunk is the data of a "log" event.
type logChunk struct {
	Offset  int64  `json:"offset"`
	Data    string `json:"data"`
	Attempt int    `json:"attempt"`
}

// followLog streams an instance's output as "log" events, asking the
// backend for what follows the last offset every logPoll (InstanceLog
// answers on any node), and ends with an "end" event once the instance is
// in a terminal state and its tail was sent. A new attempt (a retry)
// starts again at offset 0. Stops on disconnect and node shutdown.
func (s instanceRoutes) followLog(w http.ResponseWriter, r *http.Request, id string, offset int64, attempt int) {
	ctx := r.Context()
	l, err := s.b.instances.InstanceLog(ctx, id, offset)
	if err != nil {
		writeError(w, err)
		return
	}
	st := sse.Start(w)
	defer st.End()
	poll := time.NewTimer(s.logPoll)
	defer poll.Stop()
	keep := time.NewTicker(s.keepalive)
	defer keep.Stop()
	if attempt == 0 {
		// The offset is in whichever attempt runs now. A client that
		// resumes says which attempt its offset is in (?attempt=), so
		// that a retry begun meanwhile is sent from its start.
		attempt = l.Attempt
	}
	for {
		if l != nil && l.Attempt != attempt {
			// A new attempt (a retry): its output starts over, and this
			// answer was asked from the old attempt's offset.
			attempt = l.Attempt
			if offset != 0 {
				offset, l = 0, nil
			}
		}
		if l != nil {
			// Offsets never go back within an attempt: a committed tail
			// that does not line up with what was streamed (output over
			// 64 KiB) is not sent again.
			if l.Output != "" && l.Offset >= offset {
				if err := st.Event("log", 0, logChunk{Offset: l.Offset, Data: l.Output, Attempt: l.Attempt}); err != nil {
					return
				}
				offset = l.Offset + int64(len(l.Output))
			}
			if terminal(l.State) {
				_ = st.Event("end", 0, map[string]string{"state": l.State})
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.Stopping:
			return
		case <-keep.C:
			if st.Comment("keepalive") != nil {
				return
			}
			continue
		case <-poll.C:
			poll.Reset(s.logPoll)
		}
		l, err = s.b.instances.InstanceLog(ctx, id, offset)
		switch {
		case errors.Is(err, model.ErrNotFound):
			return // deleted (retention) while followed
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			s.log.Debug("log follow: poll failed", "instance", id, "error", err)
			l = nil // try again at the next poll
		}
	}
}

// terminal reports whether an instance state is final.
func terminal(state string) bool {
	switch state {
	case model.StateSuccess, model.StateFailed, model.StateTerminated, model.StateSkipped, model.StateCanceled:
		return true
	}
	return false
}
