package command

import (
	"encoding/binary"
	"encoding/hex"

	"github.com/ax-scheduler/ax/model"
)

// A restore through the log (protocol 9): ax snapshot restore sends the
// saved state file as committed log entries into a staging area of the
// state machine and switches to it with one command, so that every
// replica holds either the old state or the restored one, whichever
// node fails when (fsm/restorelog.go).
//
//	restore_begin  RestoreBegin   starts a staging area (dropping any other)
//	restore_chunk  RestoreChunk   the file's next bytes, in order
//	restore_switch RestoreRef     the staged file, checked, becomes the state
//	restore_abort  RestoreRef     drops the staging area

// MaxRestoreChunk bounds the file bytes of one restore_chunk.
const MaxRestoreChunk = 1 << 20

// MaxRestoreSize bounds the state file a restore stages (1 TiB).
const MaxRestoreSize = 1 << 40

// maxRestoreID bounds a restore's id.
const maxRestoreID = 64

// RestoreBegin is the body of TypeRestoreBegin: a restore of a file of
// Size bytes whose SHA-256 is SHA256 (hex) begins, named ID.
type RestoreBegin struct {
	ID     string `json:"id"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Validate checks the id, the size and the checksum's form.
func (b *RestoreBegin) Validate(*Command) *model.Error {
	if e := checkRestoreID(b.ID); e != nil {
		return e
	}
	if b.Size <= 0 || b.Size > MaxRestoreSize {
		return model.FieldErrorf("size", "%d bytes: must be 1 to %d", b.Size, int64(MaxRestoreSize))
	}
	if d, err := hex.DecodeString(b.SHA256); err != nil || len(d) != 32 {
		return model.FieldErrorf("sha256", "not a hex SHA-256")
	}
	return nil
}

// RestoreRef is the body of TypeRestoreSwitch and TypeRestoreAbort: the
// restore they end. An abort with an empty ID drops whatever is staged.
type RestoreRef struct {
	ID string `json:"id"`
}

// Validate checks the id (empty only where allowEmpty).
func (r *RestoreRef) Validate(c *Command) *model.Error {
	if r.ID == "" && c.Type == TypeRestoreAbort {
		return nil
	}
	return checkRestoreID(r.ID)
}

func checkRestoreID(id string) *model.Error {
	if id == "" || len(id) > maxRestoreID {
		return model.FieldErrorf("id", "must be 1 to %d bytes", maxRestoreID)
	}
	return nil
}

// RestoreChunk is the body of TypeRestoreChunk: the bytes of restore ID's
// file at Offset. Its wire form is binary (EncodeRestoreChunk), the
// bytes as they are.
type RestoreChunk struct {
	ID     string
	Offset int64
	Data   []byte
}

// EncodeRestoreChunk returns the body of a restore_chunk: uvarint-prefixed
// id, uvarint offset, the bytes.
func EncodeRestoreChunk(ch *RestoreChunk) []byte {
	b := make([]byte, 0, len(ch.ID)+len(ch.Data)+16)
	b = binary.AppendUvarint(b, uint64(len(ch.ID)))
	b = append(b, ch.ID...)
	b = binary.AppendUvarint(b, uint64(ch.Offset))
	return append(b, ch.Data...)
}

// RestoreChunkBody decodes and validates a restore_chunk's body; Data
// aliases the command's body.
func RestoreChunkBody(c *Command) (*RestoreChunk, *model.Error) {
	id, rest, err := readBytes(c.Body)
	if err != nil {
		return nil, model.Errorf(model.CodeInvalid, "undecodable %s body: %v", c.Type, err)
	}
	off, n := binary.Uvarint(rest)
	if n <= 0 {
		return nil, model.Errorf(model.CodeInvalid, "undecodable %s body: %v", c.Type, errShort)
	}
	ch := &RestoreChunk{ID: string(id), Offset: int64(off), Data: rest[n:]}
	if e := checkRestoreID(ch.ID); e != nil {
		return nil, e
	}
	switch {
	case off > MaxRestoreSize:
		return nil, model.FieldErrorf("offset", "%d: past %d", off, int64(MaxRestoreSize))
	case len(ch.Data) == 0 || len(ch.Data) > MaxRestoreChunk:
		return nil, model.FieldErrorf("data", "%d bytes: must be 1 to %d", len(ch.Data), MaxRestoreChunk)
	}
	return ch, nil
}
