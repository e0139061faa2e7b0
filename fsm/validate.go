package fsm

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/ax-scheduler/ax/model"
)

// The state machine validates every command before it writes, with the
// API's checks plus bounds on what only the leader generates: a command
// that would break an invariant, overflow a key or poison a later read is
// an error result on every replica. The checks read nothing but the
// command, so every replica decides alike.
//
// Limits are part of the log's meaning: an entry a released proposer could
// produce must stay valid, or a replica replaying it would diverge from
// one that applied it earlier. So each bound is at least what any
// proposer (the API, the scheduler, the dispatcher) can produce.
const (
	// maxTimeMs is the latest time a command may name (Unix ms, about
	// year 10135): the due index keeps minutes in 32 bits.
	maxTimeMs = 1<<32*dueBucketMs - 1
	// maxReqID is the API's bound on a request id (Idempotency-Key).
	maxReqID = 128
	// maxActor bounds the acting user ("node:"/"executor:" + a name).
	maxActor = 256
	// maxNodeID bounds a node id; maxAddr one of its addresses.
	maxNodeID = 256
	maxAddr   = 512
	// maxProto bounds a recorded protocol version.
	maxProto = 255
	// maxHost bounds an executor's host name.
	maxHost = 1024
	// maxText bounds free text (an attempt's output or error, an alert's
	// notes): no API request may carry more than 1 MiB.
	maxText = 1 << 20
	// maxPayload bounds a submission's payload: the API's body limit.
	maxPayload = 1 << 20
	// maxFireKey bounds an idempotency key rendered from a task's
	// template; with the task name it must fit a bbolt key (32 KiB).
	maxFireKey = model.MaxFireKey
	// maxDate bounds a scheduled date (YYYY-MM-DD).
	maxDate = 32
	// maxIDs bounds the instance ids or attempts one command names.
	maxIDs = 1 << 20
)

// body is a command body that checks itself once decoded.
type body interface {
	validate(c *Command) *model.Error
}

// decodeJSON decodes a JSON command body into v and validates it.
func decodeJSON(c *Command, v body) *model.Error {
	if err := json.Unmarshal(c.Body, v); err != nil {
		return model.Errorf(model.CodeInvalid, "undecodable %s body: %v", c.Type, err)
	}
	return v.validate(c)
}

// validateHeader checks the fields every command carries.
func (c *Command) validateHeader() *model.Error {
	switch {
	case len(c.ReqID) > maxReqID:
		return model.FieldErrorf("requestId", "longer than %d bytes", maxReqID)
	case len(c.Actor) > maxActor:
		return model.FieldErrorf("actor", "longer than %d bytes", maxActor)
	case len(c.Node) > maxNodeID:
		return model.FieldErrorf("node", "longer than %d bytes", maxNodeID)
	case c.Now < 0 || c.Now > maxTimeMs:
		return model.FieldErrorf("now", "time %d out of range", c.Now)
	}
	return nil
}

// asModelError turns a validation error into the *model.Error a result
// carries.
func asModelError(err error) *model.Error {
	var me *model.Error
	if errors.As(err, &me) {
		return me
	}
	return model.Errorf(model.CodeInvalid, "%v", err)
}

// at names the field a check is about; for an item of a list the name
// is built only when an error needs it (a submission checks thousands).
type at struct {
	name string
	i    int // the item's index in list name, or -1
	sub  string
}

// field names a plain field.
func field(name string) at { return at{name: name, i: -1} }

// item names field sub of item i of list name.
func item(name string, i int, sub string) at { return at{name: name, i: i, sub: sub} }

func (f at) String() string {
	if f.i < 0 {
		return f.name
	}
	s := f.name + "[" + strconv.Itoa(f.i) + "]"
	if f.sub != "" {
		s += "." + f.sub
	}
	return s
}

func checkName(f at, s string) *model.Error {
	if !model.ValidName(s) {
		return asModelError(model.ValidateName(f.String(), s))
	}
	return nil
}

func checkLen(f at, s string, limit int) *model.Error {
	if len(s) > limit {
		return model.FieldErrorf(f.String(), "longer than %d bytes", limit)
	}
	return nil
}

func checkTime(f at, ms int64) *model.Error {
	if ms < 0 || ms > maxTimeMs {
		return model.FieldErrorf(f.String(), "time %d out of range", ms)
	}
	return nil
}

// checkSpan checks a duration added to the command's time.
func checkSpan(f at, c *Command, ms int64, least int64) *model.Error {
	if ms < least || ms > maxTimeMs-c.Now {
		return model.FieldErrorf(f.String(), "%d ms out of range", ms)
	}
	return nil
}

func checkAttempt(f at, n int) *model.Error {
	if n < 1 || n > math.MaxUint32 {
		return model.FieldErrorf(f.String(), "attempt %d out of range", n)
	}
	return nil
}

func checkIDs(name string, ids []uint64, least int) *model.Error {
	if len(ids) < least || len(ids) > maxIDs {
		return model.FieldErrorf(name, "%d ids, want %d to %d", len(ids), least, maxIDs)
	}
	for i, id := range ids {
		if id == 0 {
			return model.FieldErrorf(item(name, i, "").String(), "instance id 0")
		}
	}
	return nil
}

// validate normalizes the task (the state machine stores it normalized)
// and checks its name. The rest of the API's checks (strictStatic) depend
// on the protocol the state machine has reached: the first release's
// API accepted templates and times that this one refuses, and its entries
// must replay as they were first applied.
func (p *PutTask) validate(*Command) *model.Error {
	p.Task.Normalize()
	return checkName(field("name"), p.Task.Name)
}

// storable is what protocol 1 entries are held to: the task must read
// back as it is stored (the first release's API let through times that
// did not, and every later read of such a task failed).
func (p *PutTask) storable() *model.Error {
	b, err := json.Marshal(&p.Task)
	if err == nil {
		var back model.Task
		err = json.Unmarshal(b, &back)
	}
	if err != nil {
		return model.Errorf(model.CodeInvalid, "the task would not read back once stored: %v", err)
	}
	return nil
}

// strictStatic checks the task as the API does, but for what depends on
// the node or may run long (model.Task.ValidateStatic): from protocol 2
// inside apply, and always before a new proposal.
func (p *PutTask) strictStatic() *model.Error {
	if err := p.Task.ValidateStatic(); err != nil {
		return asModelError(err)
	}
	return nil
}

func (r *TaskRef) validate(*Command) *model.Error { return checkName(field("name"), r.Name) }

// nodeRef names a node (the body of CmdRemoveNode).
type nodeRef struct {
	Name string `json:"name"`
}

func (r *nodeRef) validate(*Command) *model.Error { return checkNodeID("name", r.Name) }

func checkNodeID(name, id string) *model.Error {
	if id == "" {
		return model.FieldErrorf(name, "required")
	}
	return checkLen(field(name), id, maxNodeID)
}

func (n *NodeInfo) validate(*Command) *model.Error {
	if e := checkNodeID("id", n.ID); e != nil {
		return e
	}
	if n.RaftAddr == "" {
		return model.FieldErrorf("raftAddr", "required")
	}
	if e := checkLen(field("raftAddr"), n.RaftAddr, maxAddr); e != nil {
		return e
	}
	if e := checkLen(field("httpAddr"), n.HTTPAddr, maxAddr); e != nil {
		return e
	}
	if n.Proto < 0 || n.Proto > maxProto {
		return model.FieldErrorf("proto", "protocol %d out of range", n.Proto)
	}
	return nil
}

func (s *Submit) validate(c *Command) *model.Error {
	if e := checkName(field("task"), s.Task); e != nil {
		return e
	}
	if len(s.Items) == 0 || len(s.Items) > model.MaxSubmitBatch {
		return model.FieldErrorf("items", "%d submissions, want 1 to %d", len(s.Items), model.MaxSubmitBatch)
	}
	for i := range s.Items {
		it := &s.Items[i]
		switch {
		case it.AtMs != 0 && it.DelayMs != 0:
			return model.FieldErrorf(item("items", i, "delay").String(), "give delay or at, not both")
		case it.AtMs != 0:
			if e := checkTime(item("items", i, "at"), it.AtMs); e != nil {
				return e
			}
		default:
			if e := checkSpan(item("items", i, "delay"), c, it.DelayMs, 0); e != nil {
				return e
			}
		}
		if len(it.Key) > model.MaxIdempotencyKey {
			return model.FieldErrorf(item("items", i, "idempotencyKey").String(), "longer than %d bytes", model.MaxIdempotencyKey)
		}
		if len(it.Payload) > maxPayload {
			return &model.Error{Code: model.CodeTooLarge, Field: item("items", i, "payload").String(), Message: "payload larger than " + strconv.Itoa(maxPayload) + " bytes"}
		}
		// The API and the executors embed the payload in JSON answers.
		if len(it.Payload) > 0 && !validJSON(it.Payload) {
			return model.FieldErrorf(item("items", i, "payload").String(), "not a JSON value")
		}
	}
	return nil
}

func (tr *Trigger) validate(*Command) *model.Error {
	if e := checkName(field("task"), tr.Task); e != nil {
		return e
	}
	// In key order, so that every replica names the same bad parameter.
	for _, k := range slices.Sorted(maps.Keys(tr.Params)) {
		if !model.ValidParamName(k) {
			return model.FieldErrorf("params", "%q is not a parameter name", k)
		}
		if len(tr.Params[k]) > model.MaxParamValue {
			return model.FieldErrorf("params."+k, "longer than %d bytes", model.MaxParamValue)
		}
	}
	if e := checkLen(field("idempotencyKey"), tr.Key, model.MaxIdempotencyKey); e != nil {
		return e
	}
	if tr.Source != "" && code(sourceNames, tr.Source) == 0 {
		return model.FieldErrorf("source", "unknown source %q", tr.Source)
	}
	return checkLen(field("date"), tr.Date, maxDate)
}

func (f *Fire) validate(*Command) *model.Error {
	if len(f.Tasks) > maxIDs {
		return model.FieldErrorf("tasks", "%d task fires, more than %d", len(f.Tasks), maxIDs)
	}
	for i := range f.Tasks {
		tf := &f.Tasks[i]
		if e := checkName(item("tasks", i, "task"), tf.Task); e != nil {
			return e
		}
		if tf.Version == 0 {
			return model.FieldErrorf(item("tasks", i, "version").String(), "version 0")
		}
		for _, t := range []struct {
			field string
			ms    int64
		}{{"at", tf.At}, {"missedFirst", tf.MissedFirst}, {"missedLast", tf.MissedLast}} {
			if e := checkTime(item("tasks", i, t.field), t.ms); e != nil {
				return e
			}
		}
		if tf.Missed < 0 {
			return model.FieldErrorf(item("tasks", i, "missed").String(), "negative count %d", tf.Missed)
		}
		if e := checkLen(item("tasks", i, "key"), tf.Key, maxFireKey); e != nil {
			return e
		}
		if e := checkLen(item("tasks", i, "date"), tf.Date, maxDate); e != nil {
			return e
		}
	}
	return checkIDs("instances", f.Instances, 0)
}

func (l *Lease) validate(c *Command) *model.Error {
	if e := checkName(field("executor"), l.Executor); e != nil {
		return e
	}
	if e := checkLen(field("host"), l.Host, maxHost); e != nil {
		return e
	}
	if e := checkIDs("ids", l.IDs, 1); e != nil {
		return e
	}
	return checkSpan(field("leaseMs"), c, l.LeaseMs, 1)
}

func checkRefs(name string, refs []AttemptRef) *model.Error {
	if len(refs) == 0 || len(refs) > maxIDs {
		return model.FieldErrorf(name, "%d attempts, want 1 to %d", len(refs), maxIDs)
	}
	for i, r := range refs {
		if r.ID == 0 {
			return model.FieldErrorf(item(name, i, "id").String(), "instance id 0")
		}
		if e := checkAttempt(item(name, i, "attempt"), r.Attempt); e != nil {
			return e
		}
	}
	return nil
}

func (h *Heartbeat) validate(c *Command) *model.Error {
	if e := checkName(field("executor"), h.Executor); e != nil {
		return e
	}
	if e := checkRefs("items", h.Items); e != nil {
		return e
	}
	return checkSpan(field("leaseMs"), c, h.LeaseMs, 1)
}

func (cp *Complete) validate(*Command) *model.Error {
	if cp.ID == 0 {
		return model.FieldErrorf("id", "instance id 0")
	}
	if e := checkAttempt(field("attempt"), cp.Attempt); e != nil {
		return e
	}
	r := &cp.Report
	if e := checkName(field("report.executor"), r.Executor); e != nil {
		return e
	}
	if e := checkLen(field("report.host"), r.Host, maxHost); e != nil {
		return e
	}
	if e := checkLen(field("report.error"), r.Error, maxText); e != nil {
		return e
	}
	return checkLen(field("report.output"), r.Output, maxText)
}

// validateCompleteBatch checks a batch of reports as the API does: 1 to
// model.MaxReports reports, all from one executor.
func validateCompleteBatch(c *Command, cs []Complete) *model.Error {
	if len(cs) == 0 || len(cs) > model.MaxReports {
		return model.FieldErrorf("", "%d reports, want 1 to %d", len(cs), model.MaxReports)
	}
	for i := range cs {
		if e := cs[i].validate(c); e != nil {
			e.Field = "[" + strconv.Itoa(i) + "]." + e.Field
			return e
		}
		if cs[i].Report.Executor != cs[0].Report.Executor {
			return model.FieldErrorf(item("", i, "report.executor").String(), "all reports of a batch come from one executor")
		}
	}
	return nil
}

func (e *Expire) validate(*Command) *model.Error {
	refs := make([]AttemptRef, len(e.Items))
	for i, it := range e.Items {
		refs[i] = AttemptRef{ID: it.ID, Attempt: it.Attempt}
	}
	return checkRefs("items", refs)
}

func (d *Decide) validate(*Command) *model.Error {
	if d.ID == 0 {
		return model.FieldErrorf("id", "instance id 0")
	}
	switch d.Action {
	case DecideRequestApproval:
		if e := checkAttempt(field("attempt"), d.Attempt); e != nil {
			return e
		}
	case DecideApprove, DecideReject, DecideCancel, DecideTerminate:
		if d.Attempt != 0 {
			return model.FieldErrorf("attempt", "only request_approval names an attempt")
		}
	default:
		return model.FieldErrorf("action", "unknown decision %q", d.Action)
	}
	return checkLen(field("comment"), d.Comment, model.MaxComment)
}

func (b *Backfill) validate(*Command) *model.Error {
	if e := checkName(field("task"), b.Task); e != nil {
		return e
	}
	if b.Version == 0 {
		return model.FieldErrorf("version", "version 0")
	}
	if len(b.At) > model.MaxBackfill {
		return model.FieldErrorf("at", "%d fire times, more than %d", len(b.At), model.MaxBackfill)
	}
	if len(b.Keys) != len(b.At) || len(b.Dates) > len(b.At) {
		return model.Errorf(model.CodeInvalid, "backfill: %d times but %d keys and %d dates", len(b.At), len(b.Keys), len(b.Dates))
	}
	for i, ms := range b.At {
		if e := checkTime(item("at", i, ""), ms); e != nil {
			return e
		}
		if e := checkLen(item("keys", i, ""), b.Keys[i], maxFireKey); e != nil {
			return e
		}
	}
	for i, d := range b.Dates {
		if e := checkLen(item("dates", i, ""), d, maxDate); e != nil {
			return e
		}
	}
	return nil
}

func (a *Alerted) validate(*Command) *model.Error {
	if a.ID == 0 {
		return model.FieldErrorf("id", "instance id 0")
	}
	return checkLen(field("message"), a.Message, maxText)
}

func (p *Prune) validate(*Command) *model.Error { return checkIDs("ids", p.IDs, 0) }

func (b *ACLBootstrap) validate(*Command) *model.Error { return b.Token.validate() }

func (p *ACLPutToken) validate(c *Command) *model.Error {
	if e := p.Token.validate(); e != nil {
		return e
	}
	if p.TTLms < 0 {
		return model.FieldErrorf("ttl", "must not be negative")
	}
	return checkSpan(field("ttl"), c, p.TTLms, 0)
}

func (p *PutSecret) validate(*Command) *model.Error {
	if e := checkName(field("name"), p.Name); e != nil {
		return e
	}
	if len(p.Value) > maxStoredSecret {
		return &model.Error{Code: model.CodeTooLarge, Field: "value", Message: "secret value too large"}
	}
	return nil
}

func (m *SetMemberKey) validate(*Command) *model.Error {
	if len(m.Key) != 32 {
		return model.FieldErrorf("key", "want 32 bytes")
	}
	return nil
}
