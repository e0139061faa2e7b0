package api

import (
	"net/http"
	"strconv"

	"github.com/ax-scheduler/ax/model"
)

// decodeExec decodes an executor-protocol body and checks the executor
// name in it, and that the caller's token may act as that executor; on
// failure it has answered already.
func decodeExec[T any](w http.ResponseWriter, r *http.Request, executor func(*T) string) (*T, bool) {
	var req T
	err := decode(r, &req)
	if err == nil {
		err = model.ValidateName("executor", executor(&req))
	}
	if err == nil {
		err = PrincipalFrom(r.Context()).ExecutorAllowed(executor(&req), nil)
	}
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	return &req, true
}

func (s execRoutes) poll(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeExec(w, r, func(q *model.PollRequest) string { return q.Executor })
	if !ok {
		return
	}
	if req.Free < 1 || req.Free > 1024 {
		writeError(w, model.FieldErrorf("free", "must be 1 to 1024, got %d", req.Free))
		return
	}
	err := model.ValidateLabels("labels", req.Labels)
	if err == nil && len(req.Host) > 255 {
		err = model.FieldErrorf("host", "at most 255 bytes")
	}
	if err == nil {
		err = validateCapabilities(req.Capabilities)
	}
	if err == nil {
		err = PrincipalFrom(r.Context()).ExecutorAllowed(req.Executor, req.Labels)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	release, ok := s.polls.acquire(req.Executor)
	if !ok {
		writeError(w, &model.Error{Code: model.CodeTooMany, Field: "executor",
			Message: "executor " + req.Executor + " already has " + strconv.Itoa(maxPollsPerExecutor) + " long-polls open on this node"})
		return
	}
	defer release()
	reply(w)(s.b.executors.Poll(r.Context(), *req))
}

func (s execRoutes) heartbeat(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeExec(w, r, func(q *model.HeartbeatRequest) string { return q.Executor })
	if !ok {
		return
	}
	for i, a := range req.Running {
		if _, err := model.ParseID(a.InstanceID); err != nil {
			writeError(w, model.FieldErrorf("running["+strconv.Itoa(i)+"].instanceId", "%q is not an instance id", a.InstanceID))
			return
		}
		if a.Attempt < 1 {
			writeError(w, model.FieldErrorf("running["+strconv.Itoa(i)+"].attempt", "must be at least 1, got %d", a.Attempt))
			return
		}
	}
	reply(w)(s.b.executors.Heartbeat(r.Context(), *req))
}

func (s execRoutes) complete(w http.ResponseWriter, r *http.Request) {
	c, err := caller(r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, ok := decodeExec(w, r, func(q *model.CompleteRequest) string { return q.Executor })
	if !ok {
		return
	}
	if err := req.CheckResult(); err != nil {
		writeError(w, err)
		return
	}
	state, err := s.b.executors.Complete(r.Context(), c, r.PathValue("id"), *req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"state": state})
}

// completeBatch takes several attempt reports in one request (executors
// batch their reports under load).
func (s execRoutes) completeBatch(w http.ResponseWriter, r *http.Request) {
	c, err := caller(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var items []model.CompleteItem
	if err := decode(r, &items); err != nil {
		writeError(w, err)
		return
	}
	if len(items) == 0 || len(items) > 1024 {
		writeError(w, model.FieldErrorf("", "want 1 to 1024 reports, got %d", len(items)))
		return
	}
	for i, it := range items {
		if err := model.ValidateName("["+strconv.Itoa(i)+"].report.executor", it.Report.Executor); err != nil {
			writeError(w, err)
			return
		}
		if err := PrincipalFrom(r.Context()).ExecutorAllowed(it.Report.Executor, nil); err != nil {
			writeError(w, err)
			return
		}
		if err := it.Report.CheckResult(); err != nil {
			writeError(w, model.FieldErrorf("["+strconv.Itoa(i)+"].report.result", "%s", err.Message))
			return
		}
		if it.Report.Executor != items[0].Report.Executor {
			writeError(w, model.FieldErrorf("["+strconv.Itoa(i)+"].report.executor", "all reports of a batch come from one executor"))
			return
		}
	}
	reply(w)(s.b.executors.CompleteBatch(r.Context(), c, items))
}

func (s execRoutes) executors(w http.ResponseWriter, r *http.Request) {
	reply(w)(s.b.executors.Executors(r.Context()))
}

// validateCapabilities checks a poll's capabilities: at most
// model.MaxHandlers handlers, each a valid handler name.
func validateCapabilities(c *model.Capabilities) error {
	if c == nil {
		return nil
	}
	if len(c.Handlers) > model.MaxHandlers {
		return model.FieldErrorf("capabilities.handlers", "at most %d handlers, got %d", model.MaxHandlers, len(c.Handlers))
	}
	for i, h := range c.Handlers {
		if err := model.ValidateName("capabilities.handlers["+strconv.Itoa(i)+"]", h); err != nil {
			return err
		}
	}
	return nil
}
