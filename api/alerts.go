package api

import (
	"net/http"
	"strconv"

	"github.com/ax-scheduler/ax/model"
)

// maxSilence bounds how long a silence may last.
const maxSilence = 366 * 24 * 3600 * 1000 // ms

func (s alertRoutes) listAlerts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	aq := model.AlertQuery{State: q.Get("state"), Task: q.Get("task"), Rule: q.Get("rule"), Cursor: q.Get("cursor")}
	if aq.State != "" && aq.State != model.AlertFiring && aq.State != model.AlertResolved {
		writeError(w, model.FieldErrorf("state", "want firing or resolved, got %q", aq.State))
		return
	}
	if aq.Task != "" {
		if err := model.ValidateName("task", aq.Task); err != nil {
			writeError(w, err)
			return
		}
	}
	if len(aq.Rule) > 64 {
		writeError(w, model.FieldErrorf("rule", "longer than 64 bytes"))
		return
	}
	if aq.Cursor != "" {
		if _, err := strconv.ParseUint(aq.Cursor, 10, 64); err != nil {
			writeError(w, model.FieldErrorf("cursor", "%q is not a cursor from a previous page", aq.Cursor))
			return
		}
	}
	s.list(w, r, &aq.Limit, func() (any, error) { return s.b.alerts.ListAlerts(r.Context(), aq) })
}

func (s alertRoutes) putSilence(w http.ResponseWriter, r *http.Request) {
	c, err := caller(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var req model.SilenceRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := validSilence(&req); err != nil {
		writeError(w, err)
		return
	}
	sil, err := s.b.alerts.PutSilence(r.Context(), c, req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, sil)
}

// validSilence checks a silence request: something to match, and one of
// for or until.
func validSilence(req *model.SilenceRequest) error {
	if req.Task == "" && req.Rule == "" && len(req.Labels) == 0 {
		return model.FieldErrorf("task", "name a task, a rule or labels to silence")
	}
	if req.Task != "" {
		if err := model.ValidateName("task", req.Task); err != nil {
			return err
		}
	}
	if len(req.Rule) > 64 {
		return model.FieldErrorf("rule", "longer than 64 bytes")
	}
	if len(req.Labels) > 32 {
		return model.FieldErrorf("labels", "at most 32 labels")
	}
	for k, v := range req.Labels {
		if k == "" || len(k) > 256 || len(v) > 1024 {
			return model.FieldErrorf("labels", "label %q invalid", k)
		}
	}
	if len(req.Comment) > 4096 {
		return model.FieldErrorf("comment", "longer than 4096 bytes")
	}
	switch {
	case req.For != 0 && !req.Until.IsZero():
		return model.FieldErrorf("for", "give for or until, not both")
	case req.For == 0 && req.Until.IsZero():
		return model.FieldErrorf("for", "required: how long (e.g. \"2h\"), or until")
	case req.For < 0 || req.For.Std().Milliseconds() > maxSilence:
		return model.FieldErrorf("for", "must be positive and at most 366 days")
	}
	return nil
}

func (s alertRoutes) listSilences(w http.ResponseWriter, r *http.Request) {
	if !s.barrier(w, r) {
		return
	}
	reply(w)(s.b.alerts.ListSilences(r.Context()))
}

func (s alertRoutes) deleteSilence(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > 64 {
		writeError(w, model.FieldErrorf("id", "want a silence id"))
		return
	}
	c, err := caller(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.b.alerts.DeleteSilence(r.Context(), c, id); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
