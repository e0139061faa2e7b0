package command

import "github.com/ax-scheduler/ax/model"

// Note is the body of TypeNote: an event recorded on READY instances to
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

// MaxNoteIDs bounds the instances of one note.
const MaxNoteIDs = 4096

// Validate checks the type, the ids and the message.
func (n *Note) Validate(*Command) *model.Error {
	if n.Type != NoteNoExecutor && n.Type != NoteOverlap {
		return UnknownNote(n.Type)
	}
	if len(n.IDs) > MaxNoteIDs {
		return model.FieldErrorf("ids", "more than %d instances", MaxNoteIDs)
	}
	if e := checkIDs("ids", n.IDs, 0); e != nil {
		return e
	}
	return checkLen(field("message"), n.Message, MaxText)
}

// UnknownNote is the refusal of a note type the state machine does not
// know (or, for overlap, does not know yet at the state's protocol).
func UnknownNote(t string) *model.Error {
	return model.FieldErrorf("type", "unknown note type %q", t)
}
