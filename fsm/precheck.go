package fsm

import (
	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// Precheck answers c from the current state when applying it could only
// refuse it or change nothing, so that the leader spends no log entry on
// it: it returns the result the state machine would give, or nil when c
// must be applied.
//
// It validates c as apply does (so a forwarded command is checked as if
// it came from the API), then the preconditions that depend on state: a
// missing task (delete, pause, resume, submit, trigger, backfill), a
// stale version (put, backfill), a decision on a missing instance or one
// in the wrong state or attempt, a report of a missing or fenced attempt,
// a complete_batch whose every report would be refused, a heartbeat that
// renews no lease; and a put_task whose definition is the stored one
// (answered unchanged, as apply answers it). A retry of a known request
// id is left to the state machine, which answers it with the first
// result. The state machine checks again when it applies and stays
// authoritative.
func (f *FSM) Precheck(c *Command) *Result {
	res := f.precheck(c)
	if res != nil && c.ReqID != "" && f.knownRequest(c.ReqID) {
		return nil
	}
	return res
}

// Check is Precheck for callers that want the refusal as an error: it
// returns the error Precheck answers (nil for an answer that is not an
// error, such as a complete_batch whose reports are all refused).
func (f *FSM) Check(c *Command) error {
	if r := f.Precheck(c); r != nil && r.Err != nil {
		return r.Err
	}
	return nil
}

func (f *FSM) precheck(c *Command) *Result {
	if e := c.validateHeader(); e != nil {
		return errResult(e)
	}
	var res *Result
	err := f.view(func(tx *bolt.Tx) error {
		res = precheckIn(tx, c)
		return nil
	})
	if err != nil {
		return nil // closed: let the proposal find out
	}
	return res
}

// precheckIn is precheck in a read transaction.
func precheckIn(tx *bolt.Tx, c *Command) *Result {
	refuse := func(e *model.Error) *Result {
		if e != nil {
			return errResult(e)
		}
		return nil
	}
	taskVersion := func(name string) uint64 { return (&writer{tx: tx}).loadState(name).Version }
	switch c.Type {
	case CmdDeleteTask, CmdPauseTask, CmdResumeTask:
		var r TaskRef
		if e := decodeJSON(c, &r); e != nil {
			return errResult(e)
		}
		if taskVersion(r.Name) == 0 {
			return errResult(taskNotFound(r.Name))
		}
	case CmdPutTask:
		var p PutTask
		if e := decodeJSON(c, &p); e != nil {
			return errResult(e)
		}
		if e := p.strictStatic(); e != nil {
			return errResult(e) // a new proposal meets this version's rules
		}
		if stateProto(tx) < 4 {
			if e := notifyNamesRefusal(&p.Task, false); e != nil {
				return errResult(e)
			}
		}
		// The cycle checks hold for every new proposal; the protocol 4
		// fields wait for the cluster's protocol.
		if proto := stateProto(tx); proto < protoPolicies {
			if e := policyRefusal(tx, proto, &p.Task); e != nil {
				return errResult(e)
			}
		}
		if e := policyRefusal(tx, protoPolicies, &p.Task); e != nil {
			return errResult(e)
		}
		if v := p.Task.Version; v != 0 {
			if have := taskVersion(p.Task.Name); have != v {
				return errResult(versionConflict(have, v))
			}
		}
		// A definition identical to the stored one (a re-apply) is
		// answered as its apply would answer it, without a log entry.
		w := &writer{tx: tx, cmd: c}
		if pl, e := w.planPut(&p); e == nil && w.err == nil && pl.cur != nil && !pl.changed {
			return okResult(model.WriteResult{Name: pl.next.Name, Version: pl.cur.Version})
		}
	case CmdSubmit:
		s, err := decodeSubmit(c.Body)
		if err != nil {
			return errResult(model.Errorf(model.CodeInvalid, "undecodable submit body: %v", err))
		}
		if e := s.validate(c); e != nil {
			return errResult(e)
		}
		if taskVersion(s.Task) == 0 {
			return notFoundTask(s.Task)
		}
	case CmdTrigger:
		var t Trigger
		if e := decodeJSON(c, &t); e != nil {
			return errResult(e)
		}
		if taskVersion(t.Task) == 0 {
			return notFoundTask(t.Task)
		}
	case CmdBackfill:
		var b Backfill
		if e := decodeJSON(c, &b); e != nil {
			return errResult(e)
		}
		switch v := taskVersion(b.Task); {
		case v == 0:
			return notFoundTask(b.Task)
		case v != b.Version:
			return errResult(backfillConflict(v, b.Version))
		}
	case CmdACLBootstrap:
		var b ACLBootstrap
		if e := decodeJSON(c, &b); e != nil {
			return errResult(e)
		}
		if e := bootstrapRefusal(tx); e != nil {
			return errResult(e)
		}
		return refuse(putTokenRefusal(tx, &b.Token))
	case CmdACLPutToken:
		var p ACLPutToken
		if e := decodeJSON(c, &p); e != nil {
			return errResult(e)
		}
		return refuse(putTokenRefusal(tx, &p.Token))
	case CmdACLDeleteToken:
		var r TaskRef
		if e := decodeJSON(c, &r); e != nil {
			return errResult(e)
		}
		// Only not_found: the last-admin rule depends on the leader's
		// time, which the command does not carry yet.
		if _, ok := readToken(tx, r.Name); !ok {
			return errResult(tokenNotFound(r.Name))
		}
	case CmdDeleteSecret:
		var r TaskRef
		if e := decodeJSON(c, &r); e != nil {
			return errResult(e)
		}
		_, e := deleteSecretRefusal(tx, r.Name)
		return refuse(e)
	case CmdDeleteChannel:
		var r TaskRef
		if e := decodeJSON(c, &r); e != nil {
			return errResult(e)
		}
		_, e := deleteChannelRefusal(tx, r.Name)
		return refuse(e)
	case CmdDecide:
		var d Decide
		if e := decodeJSON(c, &d); e != nil {
			return errResult(e)
		}
		r, ok, err := readState(tx, d.ID)
		if err != nil {
			return nil
		}
		return refuse(decideRefusal(r, ok, &d))
	case CmdComplete:
		var cp Complete
		if e := decodeJSON(c, &cp); e != nil {
			return errResult(e)
		}
		r, ok, err := readState(tx, cp.ID)
		if err != nil {
			return nil
		}
		if _, late := lateOutput(tx, r, ok, &cp); late {
			return nil // it adds a stopped attempt's output
		}
		return refuse(completeRefusal(r, ok, &cp))
	case CmdCompleteBatch:
		cs, err := decodeCompleteBatch(c.Body)
		if err != nil {
			return errResult(model.Errorf(model.CodeInvalid, "undecodable %s body: %v", c.Type, err))
		}
		if e := validateCompleteBatch(c, cs); e != nil {
			return errResult(e)
		}
		out := make([]model.CompleteOutcome, len(cs))
		for i := range cs {
			r, ok, err := readState(tx, cs[i].ID)
			e := completeRefusal(r, ok, &cs[i])
			if _, late := lateOutput(tx, r, ok, &cs[i]); err != nil || e == nil || late {
				return nil // at least one report applies
			}
			out[i] = completeOutcome(&cs[i], "", e)
		}
		return okResult(out)
	case CmdHeartbeat:
		var h Heartbeat
		if e := decodeJSON(c, &h); e != nil {
			return errResult(e)
		}
		var out HeartbeatResult
		for _, it := range h.Items {
			r, ok, err := readState(tx, it.ID)
			reason := heartbeatStop(r, ok, it, h.Executor)
			if err != nil || reason == "" {
				return nil // at least one lease is renewed
			}
			out.Stop = append(out.Stop, model.StopAttempt{InstanceID: model.FormatID(it.ID), Attempt: it.Attempt, Reason: reason})
		}
		return okResult(out)
	case CmdBatch:
		return errResult(model.Errorf(model.CodeInvalid, "a batch is built by the leader's group commit, not proposed"))
	default:
		return refuse(decodeAny(c))
	}
	return nil
}

// readState reads an instance record for a precheck: ok is false if
// there is none; an error (a record that does not decode) leaves the
// decision to the apply.
func readState(tx *bolt.Tx, id uint64) (r *record, ok bool, err error) {
	v := tx.Bucket(bktInstances).Get(u64key(id))
	if v == nil {
		return nil, false, nil
	}
	if r, err = decodeRecord(id, v); err != nil {
		return nil, false, err
	}
	return r, true, nil
}

// decodeAny decodes and validates the body of a command of any type, as
// its apply does before it writes.
func decodeAny(c *Command) *model.Error {
	var b body
	switch c.Type {
	case CmdPutTask:
		b = &PutTask{}
	case CmdDeleteTask, CmdPauseTask, CmdResumeTask:
		b = &TaskRef{}
	case CmdSetNode:
		b = &NodeInfo{}
	case CmdRemoveNode:
		b = &nodeRef{}
	case CmdTrigger:
		b = &Trigger{}
	case CmdFire:
		b = &Fire{}
	case CmdLease:
		b = &Lease{}
	case CmdHeartbeat:
		b = &Heartbeat{}
	case CmdComplete:
		b = &Complete{}
	case CmdExpire:
		b = &Expire{}
	case CmdDecide:
		b = &Decide{}
	case CmdBackfill:
		b = &Backfill{}
	case CmdAlerted:
		b = &Alerted{}
	case CmdPrune:
		b = &Prune{}
	case CmdACLBootstrap:
		b = &ACLBootstrap{}
	case CmdACLPutToken:
		b = &ACLPutToken{}
	case CmdACLDeleteToken, CmdDeleteSecret, CmdDeleteChannel:
		b = &TaskRef{}
	case CmdPutChannel:
		b = &PutChannel{}
	case CmdPutSecret:
		b = &PutSecret{}
	case CmdSetMemberKey:
		b = &SetMemberKey{}
	case CmdSetProto:
		b = &SetProto{}
	case CmdNote:
		b = &Note{}
	case CmdAlertUpdate:
		b = &AlertUpdate{}
	case CmdAlertNotified:
		b = &AlertNotified{}
	case CmdPutSilence:
		b = &PutSilence{}
	case CmdDeleteSilence:
		b = &SilenceRef{}
	case CmdNoop:
		return nil
	case CmdSubmit:
		s, err := decodeSubmit(c.Body)
		if err != nil {
			return model.Errorf(model.CodeInvalid, "undecodable submit body: %v", err)
		}
		return s.validate(c)
	case CmdCompleteBatch:
		cs, err := decodeCompleteBatch(c.Body)
		if err != nil {
			return model.Errorf(model.CodeInvalid, "undecodable %s body: %v", c.Type, err)
		}
		return validateCompleteBatch(c, cs)
	default:
		return unknownType(c.Type)
	}
	return decodeJSON(c, b)
}

func (f *FSM) knownRequest(id string) bool {
	known := false
	_ = f.view(func(tx *bolt.Tx) error {
		known = tx.Bucket(bktRequests).Get([]byte(id)) != nil
		return nil
	})
	return known
}

// versionConflict is the error of a put whose version precondition fails.
func versionConflict(have, want uint64) *model.Error {
	return &model.Error{Code: model.CodeConflict, Field: "version",
		Message: "version precondition failed: task is at version " + uitoa(have) + ", request expected " + uitoa(want)}
}
