package api

import (
	"context"
	"net/http"

	"github.com/ax-scheduler/ax/api/pages"
	"github.com/ax-scheduler/ax/api/visible"
	"github.com/ax-scheduler/ax/model"
)

// ChannelTester sends a test notification through the real notifier to
// one channel, once, and says what became of it (an unknown channel is
// a not_found error; a delivery that failed is an answer, not an error).
// A ChannelBackend that is not one answers 503.
type ChannelTester interface {
	TestChannel(ctx context.Context, c Caller, name string) (*pages.ChannelTest, error)
}

// audit serves GET /v1/audit?task=&actor=&limit=&cursor=.
func (s taskRoutes) audit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := pages.AuditFilter{Task: q.Get("task"), Actor: q.Get("actor"), Cursor: q.Get("cursor")}
	if f.Task != "" {
		if err := model.ValidateName("task", f.Task); err != nil {
			writeError(w, err)
			return
		}
	}
	if s.b.pages == nil {
		writeError(w, model.Errorf(model.CodeUnavailable, "this node cannot read the audit"))
		return
	}
	s.list(w, r, &f.Limit, func() (any, error) {
		p, err := s.b.pages.Audit(r.Context(), f)
		return visible.For(PrincipalFrom(r.Context()), p), err
	})
}

// testChannel: operator, since it sends a message to people (a chat
// room, an inbox), which a reader may not do, yet changes no definition.
func (s alertRoutes) testChannel(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	t, ok := s.b.channels.(ChannelTester)
	if !ok {
		writeError(w, model.Errorf(model.CodeUnavailable, "this node cannot send test notifications"))
		return
	}
	reply(w)(t.TestChannel(r.Context(), c, name))
}
