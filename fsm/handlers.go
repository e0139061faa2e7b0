package fsm

import (
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// handlers is the state machine's table of command types: for each type
// this version applies, how its body decodes, what it is checked against
// in the state and how it is applied. Precheck and apply both go through
// it (handler), so a refusal Precheck answers is the one apply would.
// TypeBatch is not in it: a batch is a frame of commands, not one
// (batch.entry). A type missing here is unknown to this version
// (writer.apply, DESIGN.md "Command types").
var handlers = [...]handler{
	command.TypePutTask: spec[*command.PutTask, *putPlan]{decode: command.JSONBody[command.PutTask],
		propose: (*writer).proposePut, check: (*writer).putCheck, write: (*writer).putTask},
	command.TypeDeleteTask: spec[*command.TaskRef, *storedTask]{decode: command.JSONBody[command.TaskRef],
		check: (*writer).namedTask, write: (*writer).deleteTask},
	command.TypePauseTask: spec[*command.TaskRef, *storedTask]{decode: command.JSONBody[command.TaskRef],
		check: (*writer).namedTask, write: setPaused(true)},
	command.TypeResumeTask: spec[*command.TaskRef, *storedTask]{decode: command.JSONBody[command.TaskRef],
		check: (*writer).namedTask, write: setPaused(false)},
	command.TypeSetNode:    spec[*command.NodeInfo, none]{decode: command.JSONBody[command.NodeInfo], write: only((*writer).setNode)},
	command.TypeRemoveNode: spec[*command.NodeRef, none]{decode: command.JSONBody[command.NodeRef], write: only((*writer).removeNode)},
	command.TypeNoop:       spec[none, none]{decode: noBody, write: noop},
	command.TypeSubmit: spec[*command.Submit, taskState]{decode: command.SubmitBody,
		check: (*writer).submitCheck, write: (*writer).submit},
	command.TypeTrigger: spec[*command.Trigger, *storedTask]{decode: command.JSONBody[command.Trigger],
		check: (*writer).triggerCheck, write: (*writer).trigger},
	command.TypeFire:  spec[*command.Fire, none]{decode: command.JSONBody[command.Fire], write: only((*writer).fire)},
	command.TypeLease: spec[*command.Lease, none]{decode: command.JSONBody[command.Lease], write: only((*writer).lease)},
	command.TypeHeartbeat: spec[*command.Heartbeat, none]{decode: command.JSONBody[command.Heartbeat],
		check: (*writer).heartbeatCheck, write: only((*writer).heartbeat)},
	command.TypeComplete: spec[*command.Complete, report]{decode: command.JSONBody[command.Complete],
		check: (*writer).completeCheck, write: (*writer).complete},
	command.TypeExpire: spec[*command.Expire, none]{decode: command.JSONBody[command.Expire], write: only((*writer).expire)},
	command.TypeDecide: spec[*command.Decide, *record]{decode: command.JSONBody[command.Decide],
		check: (*writer).decideCheck, write: (*writer).decide},
	command.TypeCompleteBatch: spec[[]command.Complete, none]{decode: command.CompleteBatchBody,
		check: (*writer).completeBatchCheck, write: only((*writer).completeBatch)},
	command.TypeBackfill: spec[*command.Backfill, *storedTask]{decode: command.JSONBody[command.Backfill],
		check: (*writer).backfillCheck, write: (*writer).backfill},
	command.TypeAlerted: spec[*command.Alerted, none]{decode: command.JSONBody[command.Alerted], write: only((*writer).alerted)},
	command.TypePrune:   spec[*command.Prune, none]{decode: command.JSONBody[command.Prune], write: only((*writer).prune)},

	command.TypeACLBootstrap: spec[*command.ACLBootstrap, none]{decode: command.JSONBody[command.ACLBootstrap],
		check: (*writer).bootstrapCheck, write: only((*writer).aclBootstrap)},
	command.TypeACLPutToken: spec[*command.ACLPutToken, none]{decode: command.JSONBody[command.ACLPutToken],
		check: (*writer).putTokenCheck, write: only((*writer).aclPutToken)},
	command.TypeACLDeleteToken: spec[*command.TaskRef, *command.TokenRecord]{decode: command.JSONBody[command.TaskRef],
		check: (*writer).namedToken, write: (*writer).aclDeleteToken},
	command.TypePutSecret: spec[*command.PutSecret, none]{decode: command.JSONBody[command.PutSecret], write: only((*writer).putSecret)},
	command.TypeDeleteSecret: spec[*command.TaskRef, *SecretRecord]{decode: command.JSONBody[command.TaskRef],
		check: (*writer).namedSecret, write: (*writer).deleteSecret},
	command.TypeSetMemberKey: spec[*command.SetMemberKey, none]{decode: command.JSONBody[command.SetMemberKey], write: only((*writer).setMemberKey)},
	command.TypeSetProto:     spec[*command.SetProto, none]{decode: command.JSONBody[command.SetProto], write: only((*writer).setProto)},

	command.TypeNote: spec[*command.Note, none]{decode: command.JSONBody[command.Note],
		check: (*writer).noteCheck, write: only((*writer).note)},

	command.TypeAlertUpdate:   spec[*command.AlertUpdate, none]{decode: command.JSONBody[command.AlertUpdate], write: only((*writer).alertUpdate)},
	command.TypeAlertNotified: spec[*command.AlertNotified, none]{decode: command.JSONBody[command.AlertNotified], write: only((*writer).alertNotified)},
	command.TypePutSilence:    spec[*command.PutSilence, none]{decode: command.JSONBody[command.PutSilence], write: only((*writer).putSilence)},
	command.TypeDeleteSilence: spec[*command.SilenceRef, none]{decode: command.JSONBody[command.SilenceRef],
		check: (*writer).silenceCheck, write: only((*writer).deleteSilence)},
	command.TypePutChannel: spec[*command.PutChannel, *ChannelRecord]{decode: command.JSONBody[command.PutChannel],
		check: (*writer).putChannelCheck, write: (*writer).putChannel},
	command.TypeDeleteChannel: spec[*command.TaskRef, *ChannelRecord]{decode: command.JSONBody[command.TaskRef],
		check: (*writer).namedChannel, write: (*writer).deleteChannel},
}

// handlerOf returns the handler of type t, nil for a type this version
// does not apply.
func handlerOf(t command.Type) handler {
	if int(t) < len(handlers) {
		return handlers[t]
	}
	return nil
}

// handler is what the state machine does with the commands of one type.
type handler interface {
	// precheck answers w.cmd from the state, w's transaction being
	// read-only, when applying it could only refuse it or change nothing;
	// nil when it must be applied. A storage error (w.err) leaves the
	// decision to the apply.
	precheck(w *writer) *Result
	// apply applies w.cmd: nil with w.err set when a write or a stored
	// record failed.
	apply(w *writer) *Result
}

// spec is the handler of a type whose body decodes to B and whose check
// hands its apply what it found in the state, S.
type spec[B, S any] struct {
	// decode decodes the body and validates it, reading nothing but the
	// command.
	decode func(c *command.Command) (B, *model.Error)
	// propose, if set, holds a new proposal to this version's rules
	// where apply holds an entry to its protocol's (put_task): Precheck
	// only.
	propose func(w *writer, b B) *model.Error
	// check, if set, reads the state and answers the command when it
	// must be refused, or when applying it would change nothing it can
	// tell; else it hands write what it found. It writes nothing and
	// does not read the command's time: Precheck runs it before the
	// leader stamps the time.
	check func(w *writer, b B) (S, *Result)
	// write applies a command its check let through.
	write func(w *writer, b B, found S) *Result
}

func (s spec[B, S]) precheck(w *writer) *Result {
	b, e := s.decode(w.cmd)
	if e != nil {
		return errResult(e)
	}
	if s.propose != nil {
		if e := s.propose(w, b); e != nil {
			return errResult(e)
		}
	}
	if s.check == nil {
		return nil
	}
	_, res := s.check(w, b)
	return res
}

func (s spec[B, S]) apply(w *writer) *Result {
	b, e := s.decode(w.cmd)
	if e != nil {
		return errResult(e)
	}
	var found S
	if s.check != nil {
		var res *Result
		if found, res = s.check(w, b); res != nil || w.err != nil {
			return res
		}
	}
	return s.write(w, b, found)
}

// none is the body of a type without one, and what a type without a
// check finds.
type none struct{}

func noBody(*command.Command) (none, *model.Error) { return none{}, nil }

func noop(*writer, none, none) *Result { return okResult(struct{}{}) }

// only adapts the apply of a type without a check.
func only[B any](write func(*writer, B) *Result) func(*writer, B, none) *Result {
	return func(w *writer, b B, _ none) *Result { return write(w, b) }
}
