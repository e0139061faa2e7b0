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
)

// maxNoteIDs bounds the instances of one note.
const maxNoteIDs = 4096

func (n *Note) validate(*Command) *model.Error {
	if n.Type != NoteNoExecutor {
		return model.FieldErrorf("type", "unknown note type %q", n.Type)
	}
	if len(n.IDs) > maxNoteIDs {
		return model.FieldErrorf("ids", "more than %d instances", maxNoteIDs)
	}
	if e := checkIDs("ids", n.IDs, 0); e != nil {
		return e
	}
	return checkLen(field("message"), n.Message, maxText)
}

func (w *writer) note() *Result {
	var n Note
	if e := w.decode(&n); e != nil {
		return errResult(e)
	}
	recorded := 0
	for _, id := range n.IDs {
		r, ok := w.loadRecord(id)
		if w.err != nil {
			return nil
		}
		if !ok || r.State != stReady || w.lastEventType(id) == n.Type {
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
func (w *writer) lastEventType(id uint64) string {
	prefix := u64key(id)
	c := w.tx.Bucket(bktInstEvents).Cursor()
	k, v := c.Seek(binary.BigEndian.AppendUint32(u64key(id), 0xffffffff))
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return ""
	}
	var e struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(v, &e) != nil {
		return ""
	}
	return e.Type
}
