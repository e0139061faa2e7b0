package fsm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ax-scheduler/ax/model"
)

// CommandType identifies the kind of a command. Values are part of the Raft
// log format: never renumber them.
type CommandType uint8

// Command types.
const (
	CmdPutTask       CommandType = 1  // body: PutTask
	CmdDeleteTask    CommandType = 2  // body: TaskRef
	CmdPauseTask     CommandType = 3  // body: TaskRef
	CmdResumeTask    CommandType = 4  // body: TaskRef
	CmdSetNode       CommandType = 5  // body: model.Node
	CmdRemoveNode    CommandType = 6  // body: TaskRef (Name = node id)
	CmdBatch         CommandType = 7  // body: a sequence of length-prefixed commands
	CmdNoop          CommandType = 8  // body: empty; used by tests and barriers
	CmdSubmit        CommandType = 9  // body: Submit
	CmdTrigger       CommandType = 10 // body: Trigger
	CmdFire          CommandType = 11 // body: Fire
	CmdLease         CommandType = 12 // body: Lease
	CmdHeartbeat     CommandType = 13 // body: Heartbeat
	CmdComplete      CommandType = 14 // body: Complete
	CmdExpire        CommandType = 15 // body: Expire
	CmdDecide        CommandType = 16 // body: Decide
	CmdCompleteBatch CommandType = 17 // body: []Complete
	CmdBackfill      CommandType = 18 // body: Backfill
	CmdAlerted       CommandType = 19 // body: Alerted
	CmdPrune         CommandType = 20 // body: Prune

	// Protocol 2 (see MinProto).
	CmdACLBootstrap   CommandType = 21 // body: ACLBootstrap
	CmdACLPutToken    CommandType = 22 // body: ACLPutToken
	CmdACLDeleteToken CommandType = 23 // body: TaskRef (Name = token name)
	CmdPutSecret      CommandType = 24 // body: PutSecret
	CmdDeleteSecret   CommandType = 25 // body: TaskRef (Name = secret name)
	CmdSetMemberKey   CommandType = 26 // body: SetMemberKey
	CmdSetProto       CommandType = 27 // body: SetProto

	// Protocol 3. 28 to 30 are taken by other work of the same release.
	CmdNote CommandType = 31 // body: Note

	// Protocol 4.
	CmdAlertUpdate   CommandType = 32 // body: AlertUpdate
	CmdAlertNotified CommandType = 33 // body: AlertNotified
	CmdPutSilence    CommandType = 34 // body: PutSilence
	CmdDeleteSilence CommandType = 35 // body: SilenceRef
	CmdPutChannel    CommandType = 36 // body: PutChannel
	CmdDeleteChannel CommandType = 37 // body: TaskRef (Name = channel name)
)

var cmdNames = map[CommandType]string{
	CmdPutTask: "put_task", CmdDeleteTask: "delete_task", CmdPauseTask: "pause_task",
	CmdResumeTask: "resume_task", CmdSetNode: "set_node", CmdRemoveNode: "remove_node",
	CmdBatch: "batch", CmdNoop: "noop", CmdSubmit: "submit", CmdTrigger: "trigger", CmdFire: "fire",
	CmdLease: "lease", CmdHeartbeat: "heartbeat", CmdComplete: "complete", CmdExpire: "expire", CmdDecide: "decide", CmdCompleteBatch: "complete_batch", CmdBackfill: "backfill", CmdAlerted: "alerted", CmdPrune: "prune",
	CmdACLBootstrap: "acl_bootstrap", CmdACLPutToken: "acl_put_token", CmdACLDeleteToken: "acl_delete_token",
	CmdPutSecret: "put_secret", CmdDeleteSecret: "delete_secret", CmdSetMemberKey: "set_member_key",
	CmdSetProto: "set_proto", CmdNote: "note",
	CmdAlertUpdate: "alert_update", CmdAlertNotified: "alert_notified", CmdPutSilence: "put_silence", CmdDeleteSilence: "delete_silence",
	CmdPutChannel: "put_channel", CmdDeleteChannel: "delete_channel",
}

// ProtoVersion is the protocol this binary speaks: the highest MinProto
// of the command types it can apply. Every node records it with its
// addresses (NodeInfo.Proto), and a leader proposes a command only when
// every member speaks the protocol its type needs, so that no replica
// meets a command type it does not know. Protocol 3 adds the note
// command (31), and once the cluster reaches it, request ids are
// remembered by the request clock (clock.go) rather than by one leader's
// wall time. Protocol 4 adds the alert records and silences (32..35),
// notification channels (36, 37) and channel names in a task's
// policy.notify, and the policies of policy.go (onUpstreamFailure,
// onSuccess, maxQueued, a timeout of "none", and dependsOn/onSuccess
// cycles refused), which apply from the entry after set_proto 4.
// Protocol 5 adds no command type: put_task honors PutTask.KeepPaused
// and answers WriteResult.Created (tasks.go), from the entry after
// set_proto 5. Protocol 6 adds no command type: the lease hand-off of
// exec.go (attempts confirmed by a heartbeat; interrupted attempts and
// leases that lapsed unconfirmed or across a leader change are not
// charged to maxRetries) and the overlap note; concurrency slots kept
// exactly (a slot leaked before is recounted when set_proto raises the
// protocol) and an attempt an operator stopped keeps the output its
// executor reports after the stop (slots.go); put_channel honors
// PutChannel.SealedURL and IfVersion (channels.go); from the entry after
// set_proto 6; and from set_proto 6 every member requires the
// member-key handshake on Raft connections (raftnode/peerauth.go).
const ProtoVersion = 6

// MinProto returns the protocol a command type needs: 1 for the types of
// the first release (1..20), 2 for the ACL, secret, member-key and
// protocol types (21..27), 3 for note (31), 4 for the alert, silence
// and channel types (32..37), and ProtoVersion+1 for a type this binary
// does not know.
func MinProto(t CommandType) int {
	switch {
	case t >= CmdPutTask && t <= CmdPrune:
		return 1
	case t >= CmdACLBootstrap && t <= CmdSetProto:
		return 2
	case t == CmdNote:
		return 3
	case t >= CmdAlertUpdate && t <= CmdDeleteChannel:
		return 4
	}
	return ProtoVersion + 1
}

// String returns the command type's name.
func (t CommandType) String() string {
	if s, ok := cmdNames[t]; ok {
		return s
	}
	return fmt.Sprintf("command(%d)", uint8(t))
}

// Command is one state change. Now is the leader's clock in Unix
// milliseconds and Node the leader's id, both stamped by the leader just
// before proposing; the state machine uses them as the time and place of
// the change. ReqID, when set, makes the
// command idempotent: a second command with the same ReqID (a client or
// forwarding retry after an unknown outcome) is not applied again and gets
// the first one's result.
type Command struct {
	Type  CommandType
	ReqID string
	Now   int64
	Node  string
	Actor string
	Body  []byte
}

// PutTask creates or updates a task. A non-zero Task.Version is a
// precondition: the current version must equal it.
type PutTask struct {
	Task model.Task `json:"task"`
	// KeepPaused, from protocol 5, leaves the task's paused state as it
	// is (not paused for a new task) whatever Task.Paused says: paused is
	// operational state, and the API sets this when a request's body has
	// no "paused" key. Before protocol 5 it is ignored (as a replica of
	// an older release, which does not know it, ignores it).
	KeepPaused bool `json:"keepPaused,omitempty"`
}

// TaskRef names a task (or a node, for CmdRemoveNode).
type TaskRef struct {
	Name string `json:"name"`
}

// NewCommand builds a command whose body is v encoded as JSON.
func NewCommand(t CommandType, reqID, actor string, v any) (*Command, error) {
	c := &Command{Type: t, ReqID: reqID, Actor: actor}
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", t, err)
		}
		c.Body = b
	}
	return c, nil
}

// Encode returns the wire form: type, uvarint-prefixed request id, varint
// time, uvarint-prefixed node, uvarint-prefixed actor, body.
func (c *Command) Encode() []byte {
	b := make([]byte, 0, 1+len(c.ReqID)+len(c.Actor)+len(c.Body)+24)
	b = append(b, byte(c.Type))
	b = binary.AppendUvarint(b, uint64(len(c.ReqID)))
	b = append(b, c.ReqID...)
	b = binary.AppendVarint(b, c.Now)
	b = binary.AppendUvarint(b, uint64(len(c.Node)))
	b = append(b, c.Node...)
	b = binary.AppendUvarint(b, uint64(len(c.Actor)))
	b = append(b, c.Actor...)
	return append(b, c.Body...)
}

var errShort = errors.New("fsm: truncated command")

// DecodeCommand parses the wire form produced by Encode. The returned
// command's Body aliases b.
func DecodeCommand(b []byte) (*Command, error) {
	if len(b) < 1 {
		return nil, errShort
	}
	c := &Command{Type: CommandType(b[0])}
	b = b[1:]
	s, b, err := readBytes(b)
	if err != nil {
		return nil, err
	}
	c.ReqID = string(s)
	now, n := binary.Varint(b)
	if n <= 0 {
		return nil, errShort
	}
	c.Now = now
	b = b[n:]
	s, b, err = readBytes(b)
	if err != nil {
		return nil, err
	}
	c.Node = string(s)
	s, b, err = readBytes(b)
	if err != nil {
		return nil, err
	}
	c.Actor = string(s)
	c.Body = b
	return c, nil
}

func readBytes(b []byte) ([]byte, []byte, error) {
	l, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < l {
		return nil, nil, errShort
	}
	return b[n : n+int(l)], b[n+int(l):], nil
}

// EncodeBatch packs several commands into one CmdBatch command so that they
// share one Raft entry (group commit). Each keeps its own ReqID and result.
func EncodeBatch(now int64, node string, cmds []*Command) *Command {
	var body []byte
	for _, c := range cmds {
		c.Now, c.Node = now, node
		e := c.Encode()
		body = binary.AppendUvarint(body, uint64(len(e)))
		body = append(body, e...)
	}
	return &Command{Type: CmdBatch, Now: now, Node: node, Body: body}
}

func decodeBatch(b []byte) ([]*Command, error) {
	var out []*Command
	for len(b) > 0 {
		e, rest, err := readBytes(b)
		if err != nil {
			return nil, err
		}
		c, err := DecodeCommand(e)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		b = rest
	}
	return out, nil
}

// Result is what applying one command returns: an error the caller should
// see (a deterministic rejection such as not found or a failed
// precondition), or an encoded value: JSON for most commands, a compact
// binary form for the high-volume Submit (see DecodeSubmitResult).
type Result struct {
	Err  *model.Error `json:"err,omitempty"`
	Data []byte       `json:"data,omitempty"`
}

// BatchResult is the response of a CmdBatch entry: one Result per command,
// in order.
type BatchResult struct {
	Results []*Result
}

// Decode unmarshals r's data into v, or returns r's error.
func (r *Result) Decode(v any) error {
	if r.Err != nil {
		return r.Err
	}
	if v == nil || len(r.Data) == 0 {
		return nil
	}
	return json.Unmarshal(r.Data, v)
}

func okResult(v any) *Result {
	b, err := json.Marshal(v)
	if err != nil {
		return errResult(model.Errorf(model.CodeInternal, "encode result: %v", err))
	}
	return &Result{Data: b}
}

func errResult(e *model.Error) *Result { return &Result{Err: e} }
