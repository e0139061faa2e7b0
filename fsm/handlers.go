package fsm

import (
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// handlers is the state machine's table of command types: for each type
// this version applies, how its body decodes, what it is checked against
// in the state and how it is applied. Precheck and apply both go through
// it (handler), so a refusal Precheck answers is the one apply would.
// TypeBatch is not in it: a batch is a frame of commands, not one
// (batch.entry). A type missing here is unknown to this version
// (writer.apply, DESIGN.md "Command types").
var handlers = [...]handler{
	command.TypePutTask: spec[taskWrites, *command.PutTask, *putPlan]{decode: command.JSONBody[command.PutTask],
		propose: taskWrites.proposePut, check: taskWrites.putCheck, write: taskWrites.putTask},
	command.TypeDeleteTask: spec[taskWrites, *command.TaskRef, *storedTask]{decode: command.JSONBody[command.TaskRef],
		check: taskWrites.namedTask, write: taskWrites.deleteTask},
	command.TypePauseTask: spec[taskWrites, *command.TaskRef, *storedTask]{decode: command.JSONBody[command.TaskRef],
		check: taskWrites.namedTask, write: setPaused(true)},
	command.TypeResumeTask: spec[taskWrites, *command.TaskRef, *storedTask]{decode: command.JSONBody[command.TaskRef],
		check: taskWrites.namedTask, write: setPaused(false)},
	command.TypeSetNode:    spec[clusterWrites, *command.NodeInfo, none]{decode: command.JSONBody[command.NodeInfo], write: only(clusterWrites.setNode)},
	command.TypeRemoveNode: spec[clusterWrites, *command.NodeRef, none]{decode: command.JSONBody[command.NodeRef], write: only(clusterWrites.removeNode)},
	command.TypeNoop:       spec[clusterWrites, none, none]{decode: noBody, write: noop[clusterWrites]},
	command.TypeSubmit: spec[instanceWrites, *command.Submit, taskState]{decode: command.SubmitBody,
		check: instanceWrites.submitCheck, write: instanceWrites.submit},
	command.TypeTrigger: spec[instanceWrites, *command.Trigger, *storedTask]{decode: command.JSONBody[command.Trigger],
		check: instanceWrites.triggerCheck, write: instanceWrites.trigger},
	command.TypeFire:  spec[instanceWrites, *command.Fire, none]{decode: command.JSONBody[command.Fire], write: only(instanceWrites.fire)},
	command.TypeLease: spec[attemptWrites, *command.Lease, none]{decode: command.JSONBody[command.Lease], write: only(attemptWrites.lease)},
	command.TypeHeartbeat: spec[attemptWrites, *command.Heartbeat, none]{decode: command.JSONBody[command.Heartbeat],
		check: attemptWrites.heartbeatCheck, write: only(attemptWrites.heartbeat)},
	command.TypeComplete: spec[attemptWrites, *command.Complete, report]{decode: command.JSONBody[command.Complete],
		check: attemptWrites.completeCheck, write: attemptWrites.complete},
	command.TypeExpire: spec[attemptWrites, *command.Expire, none]{decode: command.JSONBody[command.Expire], write: only(attemptWrites.expire)},
	command.TypeDecide: spec[attemptWrites, *command.Decide, *record]{decode: command.JSONBody[command.Decide],
		check: attemptWrites.decideCheck, write: attemptWrites.decide},
	command.TypeCompleteBatch: spec[attemptWrites, []command.Complete, none]{decode: command.CompleteBatchBody,
		check: attemptWrites.completeBatchCheck, write: only(attemptWrites.completeBatch)},
	command.TypeBackfill: spec[instanceWrites, *command.Backfill, *storedTask]{decode: command.JSONBody[command.Backfill],
		check: instanceWrites.backfillCheck, write: instanceWrites.backfill},
	command.TypeAlerted: spec[alertWrites, *command.Alerted, none]{decode: command.JSONBody[command.Alerted], write: only(alertWrites.alerted)},
	command.TypePrune:   spec[instanceWrites, *command.Prune, none]{decode: command.JSONBody[command.Prune], write: only(instanceWrites.prune)},

	command.TypeACLBootstrap: spec[accessWrites, *command.ACLBootstrap, none]{decode: command.JSONBody[command.ACLBootstrap],
		check: accessWrites.bootstrapCheck, write: only(accessWrites.aclBootstrap)},
	command.TypeACLPutToken: spec[accessWrites, *command.ACLPutToken, none]{decode: command.JSONBody[command.ACLPutToken],
		check: accessWrites.putTokenCheck, write: only(accessWrites.aclPutToken)},
	command.TypeACLDeleteToken: spec[accessWrites, *command.TaskRef, *command.TokenRecord]{decode: command.JSONBody[command.TaskRef],
		check: accessWrites.namedToken, write: accessWrites.aclDeleteToken},
	command.TypePutSecret: spec[accessWrites, *command.PutSecret, none]{decode: command.JSONBody[command.PutSecret], write: only(accessWrites.putSecret)},
	command.TypeDeleteSecret: spec[accessWrites, *command.TaskRef, *SecretRecord]{decode: command.JSONBody[command.TaskRef],
		check: accessWrites.namedSecret, write: accessWrites.deleteSecret},
	command.TypeSetMemberKey: spec[clusterWrites, *command.SetMemberKey, none]{decode: command.JSONBody[command.SetMemberKey], write: only(clusterWrites.setMemberKey)},
	command.TypeSetProto:     spec[clusterWrites, *command.SetProto, none]{decode: command.JSONBody[command.SetProto], write: only(clusterWrites.setProto)},

	command.TypeNote: spec[noteWrites, *command.Note, none]{decode: command.JSONBody[command.Note],
		check: noteWrites.noteCheck, write: only(noteWrites.note)},

	command.TypeAlertUpdate:   spec[alertWrites, *command.AlertUpdate, none]{decode: command.JSONBody[command.AlertUpdate], write: only(alertWrites.alertUpdate)},
	command.TypeAlertNotified: spec[alertWrites, *command.AlertNotified, none]{decode: command.JSONBody[command.AlertNotified], write: only(alertWrites.alertNotified)},
	command.TypePutSilence:    spec[alertWrites, *command.PutSilence, none]{decode: command.JSONBody[command.PutSilence], write: only(alertWrites.putSilence)},
	command.TypeDeleteSilence: spec[alertWrites, *command.SilenceRef, none]{decode: command.JSONBody[command.SilenceRef],
		check: alertWrites.silenceCheck, write: only(alertWrites.deleteSilence)},
	command.TypePutChannel: spec[alertWrites, *command.PutChannel, *ChannelRecord]{decode: command.JSONBody[command.PutChannel],
		check: alertWrites.putChannelCheck, write: alertWrites.putChannel},
	command.TypeDeleteChannel: spec[alertWrites, *command.TaskRef, *ChannelRecord]{decode: command.JSONBody[command.TaskRef],
		check: alertWrites.namedChannel, write: alertWrites.deleteChannel},

	command.TypeRerun: spec[instanceWrites, *command.Rerun, []*record]{decode: command.JSONBody[command.Rerun],
		check: instanceWrites.rerunCheck, write: instanceWrites.rerun},

	command.TypePutCalendar: spec[calendarWrites, *command.PutCalendar, *calendar.Calendar]{decode: command.JSONBody[command.PutCalendar],
		check: calendarWrites.putCalendarCheck, write: calendarWrites.putCalendar},
	command.TypeDeleteCalendar: spec[calendarWrites, *command.TaskRef, *calendar.Calendar]{decode: command.JSONBody[command.TaskRef],
		check: calendarWrites.namedCalendar, write: calendarWrites.deleteCalendar},
	command.TypePutWindow: spec[calendarWrites, *command.PutWindow, *calendar.Window]{decode: command.JSONBody[command.PutWindow],
		check: calendarWrites.putWindowCheck, write: calendarWrites.putWindow},
	command.TypeDeleteWindow: spec[calendarWrites, *command.TaskRef, *calendar.Window]{decode: command.JSONBody[command.TaskRef],
		check: calendarWrites.namedWindow, write: calendarWrites.deleteWindow},
	command.TypePutPool: spec[slotWrites, *command.PutPool, *model.Pool]{decode: command.JSONBody[command.PutPool],
		check: slotWrites.putPoolCheck, write: slotWrites.putPool},
	command.TypeDeletePool: spec[slotWrites, *command.TaskRef, *model.Pool]{decode: command.JSONBody[command.TaskRef],
		check: slotWrites.namedPool, write: slotWrites.deletePool},
	command.TypeShard: spec[instanceWrites, *command.Shard, *record]{decode: command.JSONBody[command.Shard],
		check: instanceWrites.shardCheck, write: instanceWrites.shard},
	command.TypePromoteRollout: spec[taskWrites, *command.TaskRef, *storedTask]{decode: command.JSONBody[command.TaskRef],
		check: taskWrites.rolloutCheck, write: taskWrites.promoteRollout},
	command.TypeAbortRollout: spec[taskWrites, *command.TaskRef, *storedTask]{decode: command.JSONBody[command.TaskRef],
		check: taskWrites.rolloutCheck, write: taskWrites.abortRollout},

	command.TypeRestoreBegin: spec[clusterWrites, *command.RestoreBegin, none]{decode: command.JSONBody[command.RestoreBegin],
		write: only(clusterWrites.restoreBegin)},
	command.TypeRestoreChunk: spec[clusterWrites, *command.RestoreChunk, *stagedRestore]{decode: command.RestoreChunkBody,
		check: clusterWrites.restoreChunkCheck, write: clusterWrites.restoreChunk},
	command.TypeRestoreSwitch: spec[clusterWrites, *command.RestoreRef, none]{decode: command.JSONBody[command.RestoreRef],
		write: only(clusterWrites.restoreSwitch)},
	command.TypeRestoreAbort: spec[clusterWrites, *command.RestoreRef, none]{decode: command.JSONBody[command.RestoreRef],
		write: only(clusterWrites.restoreAbort)},
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

// spec is the handler of a type whose writes are domain D's (writes.go),
// whose body decodes to B and whose check hands its apply what it found
// in the state, S.
type spec[D writes, B, S any] struct {
	// decode decodes the body and validates it, reading nothing but the
	// command.
	decode func(c *command.Command) (B, *model.Error)
	// propose, if set, holds a new proposal to this version's rules
	// where apply holds an entry to its protocol's (put_task): Precheck
	// only.
	propose func(w D, b B) *model.Error
	// check, if set, reads the state and answers the command when it
	// must be refused, or when applying it would change nothing it can
	// tell; else it hands write what it found. It writes nothing and
	// does not read the command's time: Precheck runs it before the
	// leader stamps the time.
	check func(w D, b B) (S, *Result)
	// write applies a command its check let through.
	write func(w D, b B, found S) *Result
}

func (s spec[D, B, S]) precheck(w *writer) *Result {
	b, e := s.decode(w.cmd)
	if e != nil {
		return errResult(e)
	}
	if s.propose != nil {
		if e := s.propose(D{w}, b); e != nil {
			return errResult(e)
		}
	}
	if s.check == nil {
		return nil
	}
	_, res := s.check(D{w}, b)
	return res
}

func (s spec[D, B, S]) apply(w *writer) *Result {
	b, e := s.decode(w.cmd)
	if e != nil {
		return errResult(e)
	}
	var found S
	if s.check != nil {
		var res *Result
		if found, res = s.check(D{w}, b); res != nil || w.err != nil {
			return res
		}
	}
	return s.write(D{w}, b, found)
}

// none is the body of a type without one, and what a type without a
// check finds.
type none struct{}

func noBody(*command.Command) (none, *model.Error) { return none{}, nil }

func noop[D writes](D, none, none) *Result { return okResult(struct{}{}) }

// only adapts the apply of a type without a check.
func only[D writes, B any](write func(D, B) *Result) func(D, B, none) *Result {
	return func(w D, b B, _ none) *Result { return write(w, b) }
}
