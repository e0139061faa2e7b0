package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"

	"github.com/ax-scheduler/ax/model"
)

// Note is the body of CmdNote: an event recorded on READY instances to
// say why they wait. The leader's dispatcher proposes it when no executor
// it has heard from can run them (NoteNoExecutor), so that an operator
// sees the reason in the instance's events. It changes no state: an
// instance that is no longer READY, or whose latest event is already of
// this type, is left alone, so one wait gets one event whichever leader
// proposes it and however often.
type Note struct {
	IDs     []uint64 `json:"i"`
	Type    string   `json:"t"`
	Message string   `json:"m"`
}

// Note types.
const (
	// NoteNoExecutor: no executor the leader has heard from can run the
	// instance (its action or its executorLabels); it waits READY.
	NoteNoExecutor = "no_executor"
	// NoteOverlap: a fenced attempt ran on after the next attempt of the
	// instance started (the leader found it from the late attempt's
	// report); recorded on the instance whatever its state, once per
	// message (protocol 6).
	NoteOverlap = "overlap"
)

// maxNoteIDs bounds the instances of one note.
const maxNoteIDs = 4096

func (n *Note) validate(*Command) *model.Error {
	if n.Type != NoteNoExecutor && n.Type != NoteOverlap {
		return unknownNote(n.Type)
	}
	if len(n.IDs) > maxNoteIDs {
		return model.FieldErrorf("ids", "more than %d instances", maxNoteIDs)
	}
	if e := checkIDs("ids", n.IDs, 0); e != nil {
		return e
	}
	return checkLen(field("message"), n.Message, maxText)
}

func unknownNote(t string) *model.Error {
	return model.FieldErrorf("type", "unknown note type %q", t)
}

func (w *writer) note() *Result {
	var n Note
	if e := w.decode(&n); e != nil {
		return errResult(e)
	}
	overlap := n.Type == NoteOverlap
	if overlap && w.protoAt() < protoLeases {
		return errResult(unknownNote(n.Type)) // as a member before protocol 6 answers
	}
	recorded := 0
	for _, id := range n.IDs {
		r, ok := w.loadRecord(id)
		if w.err != nil {
			return nil
		}
		if !ok || !overlap && r.State != stReady || w.lastEventType(id) == n.Type && (!overlap || w.lastEventMessage(id) == n.Message) {
			continue
		}
		w.instanceEvent(id, n.Type, n.Message)
		recorded++
	}
	return okResult(struct {
		Recorded int `json:"recorded"`
	}{recorded})
}

// lastEventType is the type of an instance's latest event, "" if none.
func (w *writer) lastEventType(id uint64) string { return w.lastEvent(id).Type }

// lastEventMessage is the message of an instance's latest event.
func (w *writer) lastEventMessage(id uint64) string { return w.lastEvent(id).Message }

// lastEvent is an instance's latest event (zero if none).
func (w *writer) lastEvent(id uint64) (e struct{ Type, Message string }) {
	prefix := u64key(id)
	c := w.tx.Bucket(bktInstEvents).Cursor()
	k, v := c.Seek(binary.BigEndian.AppendUint32(u64key(id), 0xffffffff))
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
