package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"

	"github.com/ax-scheduler/ax/fsm/command"
)

// noteCheck is note's check: an overlap note before protocol 6 is
// refused, as a member of that protocol refuses it.
func (w noteWrites) noteCheck(n *command.Note) (none, *Result) {
	if n.Type == command.NoteOverlap && w.protoAt() < protoLeases {
		return none{}, errResult(command.UnknownNote(n.Type))
	}
	return none{}, nil
}

func (w noteWrites) note(n *command.Note) *Result {
	overlap := n.Type == command.NoteOverlap
	recorded := 0
	for _, id := range n.IDs {
		r, ok := w.instances().loadRecord(id)
		if w.err != nil {
			return nil
		}
		if !ok || !overlap && r.State != stReady || w.lastEventType(id) == n.Type && (!overlap || w.lastEventMessage(id) == n.Message) {
			continue
		}
		w.instances().event(id, n.Type, n.Message)
		recorded++
	}
	return okResult(struct {
		Recorded int `json:"recorded"`
	}{recorded})
}

// lastEventType is the type of an instance's latest event, "" if none.
func (w noteWrites) lastEventType(id uint64) string { return w.lastEvent(id).Type }

// lastEventMessage is the message of an instance's latest event.
func (w noteWrites) lastEventMessage(id uint64) string { return w.lastEvent(id).Message }

// lastEvent is an instance's latest event (zero if none).
func (w noteWrites) lastEvent(id uint64) (e struct{ Type, Message string }) {
	prefix := u64key(id)
	c := w.tx.Bucket(bktInstEvents).Cursor()
	var v []byte
	k, _ := c.Seek(binary.BigEndian.AppendUint32(u64key(id), 0xffffffff))
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return e
	}
	var ev struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(v, &ev) != nil {
		return e
	}
	e.Type, e.Message = ev.Type, ev.Message
	return e
}
