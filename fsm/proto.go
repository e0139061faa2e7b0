package fsm

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// SetProto is the body of CmdSetProto: the protocol every member speaks,
// which a leader proposes once they all do. The state machine's protocol
// only rises.
type SetProto struct {
	Proto int `json:"proto"`
}

func (p *SetProto) validate(*Command) *model.Error {
	if p.Proto < 1 || p.Proto > ProtoVersion {
		return model.FieldErrorf("proto", "protocol %d: this version speaks 1 to %d", p.Proto, ProtoVersion)
	}
	return nil
}

func (w *writer) setProto() *Result {
	var p SetProto
	if e := w.decode(&p); e != nil {
		return errResult(e)
	}
	if p.Proto > stateProto(w.tx) {
		w.put(bktMeta, keyProto, u64key(uint64(p.Proto)))
		w.proto = 0
		if p.Proto >= protoSlots {
			// Heals a slot an older release leaked (slots.go).
			w.recountSlots()
		}
	}
	return okResult(struct{}{})
}

// stateProto is the protocol the state machine has reached (1 until a
// set_proto).
func stateProto(tx *bolt.Tx) int {
	if v := tx.Bucket(bktMeta).Get(keyProto); len(v) == 8 {
		return int(binary.BigEndian.Uint64(v))
	}
	return 1
}

// Proto returns the protocol the state machine has reached (1 when the
// state cannot be read).
func (f *FSM) Proto() int {
	c, err := f.acl()
	if err != nil {
		return 1
	}
	return c.proto
}
