package fsm

import (
	"github.com/ax-scheduler/ax/fsm/command"
)

// The names below are the state machine's own shorthand for the command
// types, which live in package fsm/command: fsm and its tests spell them
// unqualified. Every other package uses package command; none spells
// them fsm.X any more.

// CommandType is command.Type (for the migration).
type CommandType = command.Type

// Command types (for the migration).
const (
	CmdPutTask        = command.TypePutTask
	CmdDeleteTask     = command.TypeDeleteTask
	CmdPauseTask      = command.TypePauseTask
	CmdResumeTask     = command.TypeResumeTask
	CmdSetNode        = command.TypeSetNode
	CmdRemoveNode     = command.TypeRemoveNode
	CmdBatch          = command.TypeBatch
	CmdNoop           = command.TypeNoop
	CmdSubmit         = command.TypeSubmit
	CmdTrigger        = command.TypeTrigger
	CmdFire           = command.TypeFire
	CmdLease          = command.TypeLease
	CmdHeartbeat      = command.TypeHeartbeat
	CmdComplete       = command.TypeComplete
	CmdExpire         = command.TypeExpire
	CmdDecide         = command.TypeDecide
	CmdCompleteBatch  = command.TypeCompleteBatch
	CmdBackfill       = command.TypeBackfill
	CmdAlerted        = command.TypeAlerted
	CmdPrune          = command.TypePrune
	CmdACLBootstrap   = command.TypeACLBootstrap
	CmdACLPutToken    = command.TypeACLPutToken
	CmdACLDeleteToken = command.TypeACLDeleteToken
	CmdPutSecret      = command.TypePutSecret
	CmdDeleteSecret   = command.TypeDeleteSecret
	CmdSetMemberKey   = command.TypeSetMemberKey
	CmdSetProto       = command.TypeSetProto
	CmdNote           = command.TypeNote
	CmdAlertUpdate    = command.TypeAlertUpdate
	CmdAlertNotified  = command.TypeAlertNotified
	CmdPutSilence     = command.TypePutSilence
	CmdDeleteSilence  = command.TypeDeleteSilence
	CmdPutChannel     = command.TypePutChannel
	CmdDeleteChannel  = command.TypeDeleteChannel
	CmdRerun          = command.TypeRerun
	CmdPutCalendar    = command.TypePutCalendar
	CmdDeleteCalendar = command.TypeDeleteCalendar
	CmdPutWindow      = command.TypePutWindow
	CmdDeleteWindow   = command.TypeDeleteWindow
	CmdPutPool        = command.TypePutPool
	CmdDeletePool     = command.TypeDeletePool
	CmdPromoteRollout = command.TypePromoteRollout
	CmdAbortRollout   = command.TypeAbortRollout
)

// Constants of the command bodies (for the migration).
const (
	ProtoVersion          = command.ProtoVersion
	ProtoSealedChannels   = command.ProtoSealedChannels
	DecideApprove         = command.DecideApprove
	DecideReject          = command.DecideReject
	DecideCancel          = command.DecideCancel
	DecideTerminate       = command.DecideTerminate
	DecideRequestApproval = command.DecideRequestApproval
	NoteNoExecutor        = command.NoteNoExecutor
	NoteOverlap           = command.NoteOverlap
	AlertRaise            = command.AlertRaise
	AlertResolve          = command.AlertResolve
)

// Command and the command bodies (for the migration).
type (
	Command       = command.Command
	PutTask       = command.PutTask
	TaskRef       = command.TaskRef
	NodeInfo      = command.NodeInfo
	Submit        = command.Submit
	SubmitItem    = command.SubmitItem
	Trigger       = command.Trigger
	Fire          = command.Fire
	TaskFire      = command.TaskFire
	Backfill      = command.Backfill
	Alerted       = command.Alerted
	Prune         = command.Prune
	Lease         = command.Lease
	Heartbeat     = command.Heartbeat
	AttemptRef    = command.AttemptRef
	Complete      = command.Complete
	Expire        = command.Expire
	ExpireItem    = command.ExpireItem
	Decide        = command.Decide
	TokenRecord   = command.TokenRecord
	ACLPutToken   = command.ACLPutToken
	ACLBootstrap  = command.ACLBootstrap
	SetMemberKey  = command.SetMemberKey
	PutSecret     = command.PutSecret
	SetProto      = command.SetProto
	Note          = command.Note
	AlertChange   = command.AlertChange
	AlertUpdate   = command.AlertUpdate
	AlertNotified = command.AlertNotified
	PutSilence    = command.PutSilence
	SilenceRef    = command.SilenceRef
	PutChannel    = command.PutChannel
	PutCalendar   = command.PutCalendar
	PutWindow     = command.PutWindow
	PutPool       = command.PutPool
	Rerun         = command.Rerun
)

// MinProto is command.MinProto (for the migration).
func MinProto(t CommandType) int { return command.MinProto(t) }

// NewCommand is command.New (for the migration).
func NewCommand(t CommandType, reqID, actor string, v any) (*Command, error) {
	return command.New(t, reqID, actor, v)
}

// DecodeCommand is command.Decode (for the migration).
func DecodeCommand(b []byte) (*Command, error) { return command.Decode(b) }

// EncodeBatch is command.EncodeBatch (for the migration).
func EncodeBatch(now int64, node string, cmds []*Command) *Command {
	return command.EncodeBatch(now, node, cmds)
}

// EncodeSubmit is command.EncodeSubmit (for the migration).
func EncodeSubmit(s *Submit) []byte { return command.EncodeSubmit(s) }

// EncodeCompleteBatch is command.EncodeCompleteBatch (for the migration).
func EncodeCompleteBatch(cs []Complete) []byte { return command.EncodeCompleteBatch(cs) }

// DecodeCompleteBatch is command.DecodeCompleteBatch (for the migration).
func DecodeCompleteBatch(b []byte) ([]Complete, error) { return command.DecodeCompleteBatch(b) }
