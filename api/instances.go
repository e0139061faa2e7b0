package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/ax-scheduler/ax/internal/strictjson"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/approval"
)

func (s instanceRoutes) trigger(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	var req model.TriggerRequest
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	// Sorted, so that of several bad parameters the same one is named.
	for _, k := range slices.Sorted(maps.Keys(req.Params)) {
		v := req.Params[k]
		if !model.ValidParamName(k) {
			writeError(w, model.FieldErrorf("params."+k, "parameter names are letters, digits and '_', starting with a letter or '_'"))
			return
		}
		if len(v) > 4096 {
			writeError(w, model.FieldErrorf("params."+k, "longer than 4096 bytes"))
			return
		}
	}
	if len(req.IdempotencyKey) > 256 {
		writeError(w, model.FieldErrorf("idempotencyKey", "longer than 256 bytes"))
		return
	}
	reply(w)(s.b.instances.Trigger(r.Context(), c, name, req))
}

// submit takes one submission object or an array of up to
// model.MaxSubmitBatch.
func (s instanceRoutes) submit(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, strictjson.Error(err))
		return
	}
	var reqs []model.SubmitRequest
	array := bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("["))
	if array {
		reqs, err = decodeBatch(body)
	} else {
		var one model.SubmitRequest
		err = strictjson.Decode(body, &one)
		reqs = []model.SubmitRequest{one}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	now := s.cfg.Now()
	for i := range reqs {
		prefix := ""
		if array {
			prefix = "[" + strconv.Itoa(i) + "]."
		}
		if err := reqs[i].Validate(prefix, s.cfg.MaxPayload); err != nil {
			writeError(w, err)
			return
		}
		if at := reqs[i].At; at != nil && at.Before(now) {
			writeError(w, model.FieldErrorf(prefix+"at", "%s is in the past (node time %s); use delay for now-ish", at.Format(model.TimeLayout), now.UTC().Format(model.TimeLayout)))
			return
		}
	}
	res, err := s.b.instances.Submit(r.Context(), c, name, reqs)
	if err != nil {
		writeError(w, err)
		return
	}
	writeBody(w, http.StatusOK, append(res.AppendJSON(make([]byte, 0, 16+80*len(res.Instances))), '\n'))
}

// decodeBatch decodes a JSON array of submissions one element at a time,
// so that a decoding error names its element ("[2].bogus"): encoding/json
// leaves array indexes out of its error paths. The array's length is checked
// before any element is decoded.
func decodeBatch(body []byte) ([]model.SubmitRequest, error) {
	// Fast path: a valid array decodes in one pass. Only a bad one is
	// decoded again element by element, to name the element at fault.
	var reqs []model.SubmitRequest
	if strictjson.Decode(body, &reqs) == nil {
		switch {
		case len(reqs) == 0:
			return nil, model.FieldErrorf("", "empty array: nothing to submit")
		case len(reqs) > model.MaxSubmitBatch:
			return nil, &model.Error{Code: model.CodeTooLarge, Message: fmt.Sprintf("%d submissions in one request, more than the %d allowed", len(reqs), model.MaxSubmitBatch)}
		}
		return reqs, nil
	}
	var raw []json.RawMessage
	if err := strictjson.Decode(body, &raw); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, model.FieldErrorf("", "empty array: nothing to submit")
	}
	if len(raw) > model.MaxSubmitBatch {
		return nil, &model.Error{Code: model.CodeTooLarge, Message: fmt.Sprintf("%d submissions in one request, more than the %d allowed", len(raw), model.MaxSubmitBatch)}
	}
	reqs = make([]model.SubmitRequest, len(raw))
	for i, el := range raw {
		if err := strictjson.Decode(el, &reqs[i]); err != nil {
			var me *model.Error
			if !errors.As(err, &me) {
				return nil, err
			}
			e := *me
			e.Field = "[" + strconv.Itoa(i) + "]"
			if me.Field != "" {
				e.Field += "." + me.Field
			}
			if me.Message == "unknown field "+strconv.Quote(me.Field) {
				e.Message = "unknown field " + strconv.Quote(e.Field)
			}
			return nil, &e
		}
	}
	return reqs, nil
}

func (s instanceRoutes) getInstance(w http.ResponseWriter, r *http.Request) {
	readInstance(s, w, r, s.b.instances.GetInstance)
}

func (s instanceRoutes) shards(w http.ResponseWriter, r *http.Request) {
	readInstance(s, w, r, s.b.instances.Shards)
}

func (s instanceRoutes) instanceResult(w http.ResponseWriter, r *http.Request) {
	readInstance(s, w, r, s.b.instances.InstanceResult)
}

// readInstance answers a read of instance {id} with get, the id checked
// and the read linearizable (the barrier) unless asked otherwise.
func readInstance[T any](s instanceRoutes, w http.ResponseWriter, r *http.Request, get func(context.Context, string) (T, error)) {
	id := r.PathValue("id")
	if _, err := model.ParseID(id); err != nil {
		writeError(w, err)
		return
	}
	if !s.barrier(w, r) {
		return
	}
	reply(w)(get(r.Context(), id))
}

var instanceStates = map[string]bool{
	model.StateScheduled: true, model.StateReady: true, model.StateRunning: true, model.StateSuccess: true,
	model.StateRetrying: true, model.StateFailed: true, model.StateWaitingApproval: true, model.StateTerminated: true,
	model.StateBlocked: true, model.StateSkipped: true, model.StateCanceled: true,
}

func (s instanceRoutes) listInstances(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := model.InstanceFilter{Task: q.Get("task"), State: q.Get("state"), Cursor: q.Get("cursor")}
	if f.Task != "" {
		if err := model.ValidateName("task", f.Task); err != nil {
			writeError(w, err)
			return
		}
	}
	if f.State != "" && !instanceStates[f.State] {
		writeError(w, model.FieldErrorf("state", "unknown state %q (e.g. SCHEDULED, READY, RUNNING, SUCCESS, FAILED)", f.State))
		return
	}
	if f.Cursor != "" {
		if _, err := model.ParseID(f.Cursor); err != nil {
			writeError(w, model.FieldErrorf("cursor", "%q is not an instance id", f.Cursor))
			return
		}
	}
	f.Source = q.Get("source")
	err := validSource(f.Source)
	if err == nil {
		f.Since, err = timeParam(q, "since")
	}
	if err == nil {
		f.Until, err = timeParam(q, "until")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.list(w, r, &f.Limit, func() (any, error) { return s.b.instances.ListInstances(r.Context(), f) })
}

func (s instanceRoutes) backfill(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	var req model.BackfillRequest
	err := decode(r, &req)
	if err == nil {
		err = checkRange(req.From, req.To)
	}
	if err == nil && req.To.After(s.cfg.Now()) {
		err = model.FieldErrorf("to", "%s is in the future; backfill covers past fire times", req.To.Format(model.TimeLayout))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	reply(w)(s.b.instances.Backfill(r.Context(), c, name, req))
}

// checkRange checks a fire-time range: both ends given, in order.
func checkRange(from, to model.Time) error {
	switch {
	case from.IsZero():
		return model.FieldErrorf("from", "required (RFC 3339)")
	case to.IsZero():
		return model.FieldErrorf("to", "required (RFC 3339)")
	case to.Before(from.Time):
		return model.FieldErrorf("to", "must not be before from")
	}
	return nil
}

// rerun runs a finished instance again; it takes no body (or {}).
func (s instanceRoutes) rerun(w http.ResponseWriter, r *http.Request) {
	id, c, ok := writeTarget(w, r, "id")
	if !ok {
		return
	}
	if r.ContentLength != 0 {
		if err := decode(r, &struct{}{}); err != nil {
			writeError(w, err)
			return
		}
	}
	reply(w)(s.b.instances.Rerun(r.Context(), c, id))
}

// rerunTask runs a task's finished instances of a fire-time range again,
// those in one of the states given (FAILED by default).
func (s instanceRoutes) rerunTask(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	var req model.RerunRequest
	err := decode(r, &req)
	if err == nil {
		err = checkRange(req.From, req.To)
	}
	if len(req.States) == 0 {
		req.States = []string{model.StateFailed}
	}
	for i, st := range req.States {
		if err == nil && !terminal(st) {
			err = model.FieldErrorf("states["+strconv.Itoa(i)+"]", "%q is not a finished state: want FAILED, TERMINATED, CANCELED, SKIPPED or SUCCESS", st)
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	reply(w)(s.b.instances.RerunTask(r.Context(), c, name, req))
}

// decide serves approve, reject, cancel and terminate.
func (s instanceRoutes) decide(action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, c, ok := writeTarget(w, r, "id")
		if !ok {
			return
		}
		var d model.Decision
		if r.ContentLength != 0 {
			if err := decode(r, &d); err != nil {
				writeError(w, err)
				return
			}
		}
		if len(d.Comment) > 1024 {
			writeError(w, model.FieldErrorf("comment", "longer than 1024 bytes"))
			return
		}
		state, err := s.b.instances.Decide(r.Context(), c, id, action, 0, d.Comment)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"id": id, "state": state})
	}
}

// requestApproval is called by a running script (ax approval request).
func (s instanceRoutes) requestApproval(w http.ResponseWriter, r *http.Request) {
	id, c, ok := writeTarget(w, r, "id")
	if !ok {
		return
	}
	var req model.ApprovalRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Attempt < 1 {
		writeError(w, model.FieldErrorf("attempt", "required: the running attempt's number ($AX_ATTEMPT)"))
		return
	}
	if req.Summary == "" || len(req.Summary) > 4096 {
		writeError(w, model.FieldErrorf("summary", "required, at most 4096 bytes"))
		return
	}
	state, err := s.b.instances.Decide(r.Context(), c, id, "request_approval", req.Attempt, req.Summary)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": id, "state": state})
}

// approvalStatus answers where the approval request of a running attempt
// stands (ax approval request polls it). It takes an executor token, so
// it shows an executor-bound token only an attempt leased to its
// executor, and nothing else of the instance. It always reads
// linearizably: a stale read would take a decision for not made yet, or
// a new attempt for not started.
func (s instanceRoutes) approvalStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := model.ParseID(id); err != nil {
		writeError(w, err)
		return
	}
	n, err := strconv.Atoi(r.URL.Query().Get("attempt"))
	if err != nil || n < 1 {
		writeError(w, model.FieldErrorf("attempt", "required: the attempt's number ($AX_ATTEMPT), 1 or more, got %q", r.URL.Query().Get("attempt")))
		return
	}
	if !s.barrier(w, r) {
		return
	}
	in, err := s.b.instances.GetInstance(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	ran, ok := approval.AttemptExecutor(in, n)
	if !ok {
		writeError(w, &model.Error{Code: model.CodeNotFound, Field: "attempt",
			Message: fmt.Sprintf("instance %s has no attempt %d", id, n)})
		return
	}
	if p := PrincipalFrom(r.Context()); p != nil && p.Role == model.RoleExecutor && !p.Unbound && ran != p.Executor {
		writeError(w, &model.Error{Code: model.CodeForbidden, Field: "id",
			Message: fmt.Sprintf("attempt %d of instance %s was not leased to executor %s, which token %s is bound to", n, id, p.Executor, p.Name)})
		return
	}
	writeJSON(w, http.StatusOK, approval.Of(in, n))
}

func (s instanceRoutes) instanceLog(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := model.ParseID(id); err != nil {
		writeError(w, err)
		return
	}
	var offset int64
	if v := r.URL.Query().Get("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, model.FieldErrorf("offset", "must be a non-negative integer, got %q", v))
			return
		}
		offset = n
	}
	attempt := 0
	if v := r.URL.Query().Get("attempt"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, model.FieldErrorf("attempt", "must be an attempt number (1 or more), got %q", v))
			return
		}
		attempt = n
	}
	follow, err := boolParam(r, "follow")
	if err != nil {
		writeError(w, err)
		return
	}
	// Linearizable at its start (the instance just triggered through
	// another node is found); what a follow streams after is this node's.
	if !s.barrier(w, r) {
		return
	}
	if follow {
		s.followLog(w, r, id, offset, attempt)
		return
	}
	if s.b.pages != nil && attempt > 0 {
		reply(w)(s.b.pages.AttemptLog(r.Context(), id, attempt, offset))
		return
	}
	reply(w)(s.b.instances.InstanceLog(r.Context(), id, offset))
}
