package command

import "fmt"

// Type identifies the kind of a command: the first byte of its wire form.
// Values are part of the Raft log format: never renumber them.
//
// The high bit (Ignorable) is part of a type's identity: a type is
// declared with it or without it, once and for all.
type Type uint8

// Ignorable is the bit of a type that lets a replica which does not know
// the type skip the command (answering it invalid_argument, as releases
// before the bit existed answered every unknown type) rather than stop.
// Without it an unknown type stops the replica: skipping what its peers
// applied would make it diverge. See fsm/DESIGN.md, "Command types".
const Ignorable Type = 0x80

// Command types.
const (
	TypePutTask       Type = 1  // body: PutTask
	TypeDeleteTask    Type = 2  // body: TaskRef
	TypePauseTask     Type = 3  // body: TaskRef
	TypeResumeTask    Type = 4  // body: TaskRef
	TypeSetNode       Type = 5  // body: NodeInfo
	TypeRemoveNode    Type = 6  // body: NodeRef
	TypeBatch         Type = 7  // body: a sequence of length-prefixed commands
	TypeNoop          Type = 8  // body: empty; used by tests and barriers
	TypeSubmit        Type = 9  // body: Submit (binary, EncodeSubmit)
	TypeTrigger       Type = 10 // body: Trigger
	TypeFire          Type = 11 // body: Fire
	TypeLease         Type = 12 // body: Lease
	TypeHeartbeat     Type = 13 // body: Heartbeat
	TypeComplete      Type = 14 // body: Complete
	TypeExpire        Type = 15 // body: Expire
	TypeDecide        Type = 16 // body: Decide
	TypeCompleteBatch Type = 17 // body: []Complete (binary, EncodeCompleteBatch)
	TypeBackfill      Type = 18 // body: Backfill
	TypeAlerted       Type = 19 // body: Alerted
	TypePrune         Type = 20 // body: Prune

	// Protocol 2 (see MinProto).
	TypeACLBootstrap   Type = 21 // body: ACLBootstrap
	TypeACLPutToken    Type = 22 // body: ACLPutToken
	TypeACLDeleteToken Type = 23 // body: TaskRef (Name = token name)
	TypePutSecret      Type = 24 // body: PutSecret
	TypeDeleteSecret   Type = 25 // body: TaskRef (Name = secret name)
	TypeSetMemberKey   Type = 26 // body: SetMemberKey
	TypeSetProto       Type = 27 // body: SetProto

	// Protocol 3. 28 to 30 are taken by other work of the same release.
	TypeNote Type = 31 // body: Note

	// Protocol 4.
	TypeAlertUpdate   Type = 32 // body: AlertUpdate
	TypeAlertNotified Type = 33 // body: AlertNotified
	TypePutSilence    Type = 34 // body: PutSilence
	TypeDeleteSilence Type = 35 // body: SilenceRef
	TypePutChannel    Type = 36 // body: PutChannel
	TypeDeleteChannel Type = 37 // body: TaskRef (Name = channel name)

	// Protocol 7. 38 is left to other work of the same release.
	TypeRerun Type = 39 // body: Rerun

	// Protocol 8.
	TypePutCalendar    Type = 40 // body: PutCalendar
	TypeDeleteCalendar Type = 41 // body: TaskRef (Name = calendar name)
	TypePutWindow      Type = 42 // body: PutWindow
	TypeDeleteWindow   Type = 43 // body: TaskRef (Name = window name)
	TypePutPool        Type = 44 // body: PutPool
	TypeDeletePool     Type = 45 // body: TaskRef (Name = pool name)
	TypeShard          Type = 46 // body: Shard
	TypePromoteRollout Type = 47 // body: TaskRef (the task whose canary to promote)
	TypeAbortRollout   Type = 48 // body: TaskRef (the task whose rollout to abort)

	// Protocol 9: a restore through the log (restore.go).
	TypeRestoreBegin  Type = 49 // body: RestoreBegin
	TypeRestoreChunk  Type = 50 // body: RestoreChunk (binary, EncodeRestoreChunk)
	TypeRestoreSwitch Type = 51 // body: RestoreRef
	TypeRestoreAbort  Type = 52 // body: RestoreRef
)

// ProtoVersion is the protocol this binary speaks: the highest MinProto
// of the command types it can apply. Every node records it with its
// addresses (NodeInfo.Proto), and a leader proposes a command only when
// every member speaks the protocol its type needs, so that no replica
// meets a command type it does not know. Protocol 3 adds the note
// command (31), and once the cluster reaches it, request ids are
// remembered by the request clock (fsm/clock.go) rather than by one
// leader's wall time. Protocol 4 adds the alert records and silences
// (32..35), notification channels (36, 37) and channel names in a task's
// policy.notify, and the policies of fsm/policy.go (onUpstreamFailure,
// onSuccess, maxQueued, a timeout of "none", and dependsOn/onSuccess
// cycles refused), which apply from the entry after set_proto 4.
// Protocol 5 adds no command type: put_task honors PutTask.KeepPaused
// and answers WriteResult.Created (fsm/tasks.go), from the entry after
// set_proto 5. Protocol 6 adds no command type: the lease hand-off of
// fsm/exec.go (attempts confirmed by a heartbeat; interrupted attempts
// and leases that lapsed unconfirmed or across a leader change are not
// charged to maxRetries) and the overlap note; concurrency slots kept
// exactly (a slot leaked before is recounted when set_proto raises the
// protocol) and an attempt an operator stopped keeps the output its
// executor reports after the stop (fsm/slots.go); put_channel honors
// PutChannel.SealedURL and IfVersion (fsm/channels.go); from the entry
// after set_proto 6; and from set_proto 6 every member requires the
// member-key handshake on Raft connections (raftnode/peerauth.go).
// Protocol 7 adds rerun (39): a finished instance runs again
// (fsm/rerun.go). From the entry after set_proto 7, put_channel takes the
// chat robots' channel types, dingtalk, wecom and feishu
// (fsm/channels.go), and a task's trigger may carry endAt, maxRuns and
// jitter (and a cron trigger startAt), which fire honors (fires outside
// the window or beyond maxRuns ignored, the trigger's fires counted in
// the task state, TaskFire.Jitter kept on the instance; fsm/window.go).
// Protocol 8 adds the exclusion calendars (40, 41) and blackout windows
// (42, 43), which a task's trigger.calendars names and fire honors
// (fsm/calendars.go), shared pools (44, 45), which admission honors
// (fsm/pools.go), with their rate limits, as policy.rateLimit's
// (fsm/ratelimit.go), the fan-out of sharded instances (46,
// fsm/shards.go), and the promotion and abort of a canary rollout (47,
// 48; fsm/rollout.go), which a put_task with a rollout starts. From the entry after set_proto 8, put_task takes
// policy.overlap "replace", which admit honors; the history limits
// policy.keepSuccessful and keepFailed, which retention's look-up
// applies; and a task's params declarations, which every instance's
// creation resolves (fsm/proto8.go, fsm/replace.go, fsm/retention.go, fsm/params.go).
// Protocol 9 adds the restore through the log (49..52): ax snapshot
// restore stages the saved state in committed entries and switches to it
// with one command (fsm/restorelog.go).
const ProtoVersion = 9

// info is what this binary knows of a type.
type info struct {
	name  string
	proto int // the protocol of the release that added it (MinProto)
}

// types holds every type this binary knows, by number. Adding one: its
// number (with Ignorable only if skipping it is safe, see Ignorable), its
// name and the protocol of the release that adds it (raise ProtoVersion
// with it), a body type with a Validate method, and its handler in the
// state machine (fsm/handlers.go).
var types = [...]info{
	TypePutTask: {"put_task", 1}, TypeDeleteTask: {"delete_task", 1}, TypePauseTask: {"pause_task", 1},
	TypeResumeTask: {"resume_task", 1}, TypeSetNode: {"set_node", 1}, TypeRemoveNode: {"remove_node", 1},
	TypeBatch: {"batch", 1}, TypeNoop: {"noop", 1}, TypeSubmit: {"submit", 1}, TypeTrigger: {"trigger", 1},
	TypeFire: {"fire", 1}, TypeLease: {"lease", 1}, TypeHeartbeat: {"heartbeat", 1}, TypeComplete: {"complete", 1},
	TypeExpire: {"expire", 1}, TypeDecide: {"decide", 1}, TypeCompleteBatch: {"complete_batch", 1},
	TypeBackfill: {"backfill", 1}, TypeAlerted: {"alerted", 1}, TypePrune: {"prune", 1},

	TypeACLBootstrap: {"acl_bootstrap", 2}, TypeACLPutToken: {"acl_put_token", 2},
	TypeACLDeleteToken: {"acl_delete_token", 2}, TypePutSecret: {"put_secret", 2},
	TypeDeleteSecret: {"delete_secret", 2}, TypeSetMemberKey: {"set_member_key", 2}, TypeSetProto: {"set_proto", 2},

	TypeNote: {"note", 3},

	TypeAlertUpdate: {"alert_update", 4}, TypeAlertNotified: {"alert_notified", 4}, TypePutSilence: {"put_silence", 4},
	TypeDeleteSilence: {"delete_silence", 4}, TypePutChannel: {"put_channel", 4}, TypeDeleteChannel: {"delete_channel", 4},

	TypeRerun: {"rerun", 7},

	TypePutCalendar: {"put_calendar", 8}, TypeDeleteCalendar: {"delete_calendar", 8},
	TypePutWindow: {"put_window", 8}, TypeDeleteWindow: {"delete_window", 8},
	TypePutPool: {"put_pool", 8}, TypeDeletePool: {"delete_pool", 8},
	TypeShard: {"shard", 8}, TypePromoteRollout: {"promote_rollout", 8}, TypeAbortRollout: {"abort_rollout", 8},

	TypeRestoreBegin: {"restore_begin", 9}, TypeRestoreChunk: {"restore_chunk", 9},
	TypeRestoreSwitch: {"restore_switch", 9}, TypeRestoreAbort: {"restore_abort", 9},
}

// Known reports whether this binary knows the type.
func (t Type) Known() bool { return int(t) < len(types) && types[t].name != "" }

// Ignorable reports whether a replica that does not know the type may
// skip it (the Ignorable bit).
func (t Type) Ignorable() bool { return t&Ignorable != 0 }

// String returns the type's name, or command(N) for a type this binary
// does not know.
func (t Type) String() string {
	if t.Known() {
		return types[t].name
	}
	return fmt.Sprintf("command(%d)", uint8(t))
}

// MinProto returns the protocol a command type needs: 1 for the types of
// the first release (1..20), 2 for the ACL, secret, member-key and
// protocol types (21..27), 3 for note (31), 4 for the alert, silence
// and channel types (32..37), 7 for rerun (39), 8 for the calendar,
// window and pool types (40..45), shard (46) and the rollout types (47, 48),
// 9 for the restore types (49..52), and ProtoVersion+1 for
// a type this binary does not know.
func MinProto(t Type) int {
	if t.Known() {
		return types[t].proto
	}
	return ProtoVersion + 1
}

// Types returns every type this binary knows, in number order.
func Types() []Type {
	var out []Type
	for t := range types {
		if Type(t).Known() {
			out = append(out, Type(t))
		}
	}
	return out
}
