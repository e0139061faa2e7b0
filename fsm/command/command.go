package command

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ax-scheduler/ax/model"
)

// Command is one state change. Now is the leader's clock in Unix
// milliseconds and Node the leader's id, both stamped by the leader just
// before proposing; the state machine uses them as the time and place of
// the change. ReqID, when set, makes the command idempotent: a second
// command with the same ReqID (a client or forwarding retry after an
// unknown outcome) is not applied again and gets the first one's result.
type Command struct {
	Type  Type
	ReqID string
	Now   int64
	Node  string
	Actor string
	Body  []byte
}

// New builds a command whose body is v encoded as JSON.
func New(t Type, reqID, actor string, v any) (*Command, error) {
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

// errShort's words are those of the release that had the codec in
// package fsm: they reach results.
var errShort = errors.New("fsm: truncated command")

// Decode parses the wire form produced by Encode. The returned command's
// Body aliases b.
func Decode(b []byte) (*Command, error) {
	if len(b) < 1 {
		return nil, errShort
	}
	c := &Command{Type: Type(b[0])}
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

// EncodeBatch packs several commands into one TypeBatch command so that
// they share one Raft entry (group commit). Each keeps its own ReqID and
// result.
func EncodeBatch(now int64, node string, cmds []*Command) *Command {
	var body []byte
	for _, c := range cmds {
		c.Now, c.Node = now, node
		e := c.Encode()
		body = binary.AppendUvarint(body, uint64(len(e)))
		body = append(body, e...)
	}
	return &Command{Type: TypeBatch, Now: now, Node: node, Body: body}
}

// DecodeBatch parses the body of a TypeBatch command.
func DecodeBatch(b []byte) ([]*Command, error) {
	var out []*Command
	for len(b) > 0 {
		e, rest, err := readBytes(b)
		if err != nil {
			return nil, err
		}
		c, err := Decode(e)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		b = rest
	}
	return out, nil
}

// ValidateHeader checks the fields every command carries.
func (c *Command) ValidateHeader() *model.Error {
	switch {
	case len(c.ReqID) > maxReqID:
		return model.FieldErrorf("requestId", "longer than %d bytes", maxReqID)
	case len(c.Actor) > maxActor:
		return model.FieldErrorf("actor", "longer than %d bytes", maxActor)
	case len(c.Node) > maxNodeID:
		return model.FieldErrorf("node", "longer than %d bytes", maxNodeID)
	case c.Now < 0 || c.Now > MaxTimeMs:
		return model.FieldErrorf("now", "time %d out of range", c.Now)
	}
	return nil
}
