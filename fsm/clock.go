package fsm

import (
	"encoding/binary"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// The state machine never reads a clock; it keeps two records of the
// leader times it has applied (see DESIGN.md, "Leader time"):
//
//   - the high-water mark (meta/time_hwm): the latest leader time of any
//     entry applied. A new leader stamps no time below it, so the times
//     the state machine stores never move backwards across leaders.
//   - the request clock (meta/req_clock, from protocol 3): leader time
//     that has passed within leadership terms, the sum of the gaps between
//     consecutive entries of one term. An entry of a new term adds
//     nothing, so a leader whose clock is off by any amount moves it only
//     as fast as time passes for it. Request ids are remembered for
//     RequestTTL of this clock, and for RequestMinEntries log entries at
//     least, so that no single clock can make the cluster forget them.

// RequestMinEntries is how many log entries a request id is remembered
// for at least, however much time has passed (protocol 3).
const RequestMinEntries = 10_000

// maxLegacyPrune bounds the request ids of the earlier protocols (kept by
// wall time) pruned by one entry once protocol 3 is reached.
const maxLegacyPrune = 1024

var (
	// keyTimeHWM is the latest leader time (Unix ms) of an applied entry.
	keyTimeHWM = []byte("time_hwm")
	// keyReqClock is the request clock: u64 ms, the term of the last
	// entry it counted and that entry's leader time.
	keyReqClock = []byte("req_clock")
	// bktRequestClock indexes the request ids remembered from protocol 3
	// by request clock: u64 clock, request id -> u64 log index.
	bktRequestClock = []byte("requests_by_clock")
)

// reqClock is the request clock's record.
type reqClock struct {
	ms   int64  // leader time passed within terms
	term uint64 // term of the last entry counted
	last int64  // its leader time
}

func loadReqClock(tx *bolt.Tx) reqClock {
	v := tx.Bucket(bktMeta).Get(keyReqClock)
	if len(v) != 24 {
		return reqClock{}
	}
	return reqClock{ms: int64(binary.BigEndian.Uint64(v)), term: binary.BigEndian.Uint64(v[8:]), last: int64(binary.BigEndian.Uint64(v[16:]))}
}

func (c reqClock) encode() []byte {
	v := make([]byte, 24)
	binary.BigEndian.PutUint64(v, uint64(c.ms))
	binary.BigEndian.PutUint64(v[8:], c.term)
	binary.BigEndian.PutUint64(v[16:], uint64(c.last))
	return v
}

// advance counts an entry of term with leader time now: the time since
// the previous entry if both belong to one term (a clock that stepped
// back counts nothing, and counts on from where it is), nothing for the
// first entry of a term.
func (c reqClock) advance(term uint64, now int64) reqClock {
	if term == c.term && now > c.last {
		c.ms += now - c.last
	}
	c.term, c.last = term, now
	return c
}

// TimeHWM returns the latest leader time (Unix ms) the state machine has
// applied: a leader never stamps a command below it.
func (f *FSM) TimeHWM() int64 { return f.hwm.Load() }

// loadHWM reads the high-water mark after Open and Restore.
func (f *FSM) loadHWM() error {
	return f.db.View(func(tx *bolt.Tx) error {
		f.hwm.Store(int64(metaU64(tx, keyTimeHWM)))
		return nil
	})
}

// clockEntry records the leader time of an entry before its commands
// apply: the high-water mark, and from protocol 3 the request clock, which
// es then carries for the entry's commands. An out-of-range time (the
// header check refuses its commands) is not counted.
func (b *batch) clockEntry(l *raft.Log, now int64, es *entryState) {
	if now < 0 || now > maxTimeMs {
		return
	}
	if now > b.hwm {
		b.hwm = now
	}
	if stateProto(b.tx) < 3 {
		return
	}
	c := loadReqClock(b.tx).advance(l.Term, now)
	must(b.tx.Bucket(bktMeta).Put(keyReqClock, c.encode()))
	es.byClock, es.clock = true, c.ms
}

// flushHWM writes the batch's high-water mark if its entries raised it.
func (b *batch) flushHWM() error {
	if b.hwm <= b.f.hwm.Load() {
		return nil
	}
	return b.tx.Bucket(bktMeta).Put(keyTimeHWM, u64key(uint64(b.hwm)))
}

// pruneRequestsByClock forgets the request ids remembered more than
// RequestTTL of request clock and more than RequestMinEntries entries
// before (protocol 3); and, once the request clock has itself run a TTL,
// those remembered under the earlier protocols by wall time, a bounded
// number per entry.
func (f *FSM) pruneRequestsByClock(tx *bolt.Tx, clock int64, index uint64) {
	cutoff := clock - RequestTTL.Milliseconds()
	if cutoff <= 0 {
		return
	}
	br := tx.Bucket(bktRequests)
	cur := tx.Bucket(bktRequestClock).Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.First() {
		var at uint64 // the entry that remembered it
		if len(v) == 8 {
			at = binary.BigEndian.Uint64(v)
		}
		if int64(binary.BigEndian.Uint64(k)) >= cutoff || at+RequestMinEntries > index {
			break
		}
		must(br.Delete(k[8:]))
		must(cur.Delete())
	}
	legacy := tx.Bucket(bktRequestTime).Cursor()
	n := 0
	for k, _ := legacy.First(); k != nil && n < maxLegacyPrune; k, _ = legacy.First() {
		must(br.Delete(k[8:]))
		must(legacy.Delete())
		n++
	}
}

// clockKey is a requests_by_clock key.
func clockKey(clock int64, id string) []byte { return timeKey(clock, id) }
