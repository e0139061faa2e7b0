package fsm

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
)

func (w clusterWrites) setProto(p *command.SetProto) *Result {
	if p.Proto > stateProto(w.tx) {
		w.put(bktMeta, keyProto, u64key(uint64(p.Proto)))
		w.proto = 0
		if p.Proto >= protoSlots {
			// Heals a slot an older release leaked (slots.go).
			w.slots().recountSlots()
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
func (q clusterReads) Proto() int {
	c, err := q.f.acl()
	if err != nil {
		return 1
	}
	return c.proto
}
