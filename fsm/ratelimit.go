package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// Rate limits (protocol 8): policy.rateLimit of a task and rateLimit of a
// pool bound how often instances start (become READY), with a generic
// cell rate algorithm: a limiter keeps one time, its theoretical arrival
// time (TAT); a start at now conforms when TAT - tolerance <= now and
// moves TAT to max(TAT, now) + interval (model.RateLimit). Only apply
// changes it, with the command's time, so every replica decides alike.
//
// An instance is checked as it is about to become READY, having taken
// its task's slot and its pool's (admit, unblockHead, poolWake). One
// that does not conform to a limiter (task first, then pool), or finds
// others waiting for it, either is SKIPPED without taking the slots
// (onLimit skip) or waits BLOCKED with flagWaitingRate, keeping its
// slots as a RETRYING instance does, in the limiter's FIFO and in the
// due index at the time its turn comes (RetryAt). The leader's wheel
// fires it then (fire's Instances), like a RETRYING instance, and apply
// starts the limiter's waiters from the oldest while it lets them
// (rateWake); one still waiting gets its next time. A task's waiter at
// the head of its task's FIFO that meets its pool's limit also waits in
// the pool's FIFO, keeping its place in the task's: the pool's FIFO holds
// only instances their task's limit lets through, so one task's limit
// never holds back another task of the pool.
//
// Buckets: bktRateState, limiter key ('t' + task or 'p' + pool) → u64
// TAT (ms) and uvarint waiting; bktRateWait, limiter key \x00 u64 time
// it joined, u64 id → empty (the FIFO); bktRateIdx, id → the FIFO keys
// of a waiting instance (each uvarint-length prefixed), so that its end
// leaves them whatever its task or pool now say.

// limiter is one rate limit with its state.
type limiter struct {
	key     string
	what    string // "task x" or "pool x"
	lim     *model.RateLimit
	tat     int64
	waiting uint64
	// interval is the one TAT was counted with (0: none yet), so that a
	// changed limit re-counts it (rateChanged).
	interval int64
}

// freeAt is when the limiter lets the next start through.
func (l *limiter) freeAt() int64 { return l.tat - l.lim.Tolerance() }

func (l *limiter) String() string {
	return fmt.Sprintf("rate limit of %s (%d per %s)", l.what, l.lim.Count, l.lim.Per.Std())
}

func loadLimiter(tx *bolt.Tx, key, what string, lim *model.RateLimit) limiter {
	l := limiter{key: key, what: what, lim: lim}
	if v := tx.Bucket(bktRateState).Get([]byte(key)); len(v) >= 8 {
		l.tat = int64(binary.BigEndian.Uint64(v))
		n := 0
		if l.waiting, n = binary.Uvarint(v[8:]); n > 0 {
			iv, _ := binary.Uvarint(v[8+n:])
			l.interval = int64(iv)
		}
	}
	return l
}

func (w slotWrites) saveLimiter(l *limiter) {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(l.tat))
	v = binary.AppendUvarint(binary.AppendUvarint(v, l.waiting), uint64(l.interval))
	w.put(bktRateState, []byte(l.key), v)
}

// ratesOf returns the limiters an instance of t in pool p (nil: none)
// must conform to, task first.
func (w slotWrites) ratesOf(t *model.Task, p *model.Pool) []limiter {
	var out []limiter
	if t != nil && t.Policy.RateLimit != nil {
		out = append(out, loadLimiter(w.tx, "t"+t.Name, "task "+t.Name, t.Policy.RateLimit))
	}
	if p != nil && p.RateLimit != nil {
		out = append(out, loadLimiter(w.tx, "p"+p.Name, "pool "+p.Name, p.RateLimit))
	}
	return out
}

// rateHead returns the id first in limiter key's FIFO (0: none).
func rateHead(tx *bolt.Tx, key string) uint64 {
	prefix := append([]byte(key), 0)
	k, _ := tx.Bucket(bktRateWait).Cursor().Seek(prefix)
	if k == nil || !bytes.HasPrefix(k, prefix) || len(k) != len(prefix)+16 {
		return 0
	}
	return binary.BigEndian.Uint64(k[len(k)-8:])
}

// rateCheck returns the first limiter of ls that holds r back now: it
// does not conform, or others wait for it and r is not the first (nil:
// r may start).
func (w slotWrites) rateCheck(r *record, ls []limiter) *limiter {
	for i := range ls {
		l := &ls[i]
		if l.freeAt() > w.cmd.Now || (l.waiting > 0 && rateHead(w.tx, l.key) != r.ID) {
			return l
		}
	}
	return nil
}

// rateSkip ends r, which holds no slot, SKIPPED by limiter l (onLimit skip).
func (w slotWrites) rateSkip(r *record, l *limiter) {
	r.FinishedAt = w.cmd.Now
	w.instances().setState(r, stSkipped)
	w.notes.changes[len(w.notes.changes)-1].Reason = ReasonRateLimited
	w.instances().event(r.ID, "skipped", fmt.Sprintf("onLimit=skip: %s: next start at %s", l, fmtMs(max(l.freeAt(), w.cmd.Now))))
}

// ReasonRateLimited is InstanceChange.Reason of an instance a rate limit
// made wait (BLOCKED) or skipped (SKIPPED).
const ReasonRateLimited = "rate_limited"

func fmtMs(ms int64) string { return model.UnixMilli(ms).Format(model.TimeLayout) }

// rateAdmit makes r, which holds its slots, READY if ls let it start
// (and reports true), else makes it wait for the limiter that holds it
// back.
func (w slotWrites) rateAdmit(r *record, ls []limiter) bool {
	l := w.rateCheck(r, ls)
	if l == nil {
		w.rateStart(r, ls)
		return true
	}
	w.rateWait(r, l)
	return false
}

// rateStart counts r's start in the limiters of ls and makes it READY.
func (w slotWrites) rateStart(r *record, ls []limiter) {
	w.rateLeave(r)
	for i := range ls {
		l := loadLimiter(w.tx, ls[i].key, ls[i].what, ls[i].lim) // rateLeave changed its count
		l.interval = l.lim.Interval()
		l.tat = max(l.tat, w.cmd.Now) + l.interval
		w.saveLimiter(&l)
	}
	w.instances().setState(r, stReady)
}

// rateKeys returns the FIFO keys r waits in.
func rateKeys(tx *bolt.Tx, id uint64) [][]byte {
	var out [][]byte
	for v := tx.Bucket(bktRateIdx).Get(u64key(id)); len(v) > 0; {
		k, rest, err := readBytes(v)
		if err != nil {
			break
		}
		out, v = append(out, append([]byte(nil), k...)), rest
	}
	return out
}

// inFIFO reports whether keys (rateKeys) hold one of limiter key's FIFO.
func inFIFO(keys [][]byte, key string) bool {
	for _, k := range keys {
		if len(k) == len(key)+17 && string(k[:len(key)]) == key {
			return true
		}
	}
	return false
}

// rateWait makes r (BLOCKED or about to be, holding its slots) wait for
// l: it joins l's FIFO unless it is in it, and waits in the due index
// until its turn (rateTurn).
func (w slotWrites) rateWait(r *record, l *limiter) {
	keys := rateKeys(w.tx, r.ID)
	prefix := append([]byte(l.key), 0)
	pos := int64(-1) // its place in l's FIFO: rateTurn finds it
	if !inFIFO(keys, l.key) {
		k := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(prefix, uint64(w.cmd.Now)), r.ID)
		w.put(bktRateWait, k, nil)
		var v []byte
		for _, k := range append(keys, k) {
			v = append(binary.AppendUvarint(v, uint64(len(k))), k...)
		}
		w.put(bktRateIdx, u64key(r.ID), v)
		l.waiting++
		w.saveLimiter(l)
		pos = int64(l.waiting) - 1 // the last
	}
	was := r.Flags&flagWaitingRate != 0 && r.State == stBlocked
	w.rateDue(r, w.rateTurn(r.ID, l, pos))
	if was {
		w.instances().putRecord(r)
		return
	}
	w.instances().setState(r, stBlocked)
	w.notes.changes[len(w.notes.changes)-1].Reason = ReasonRateLimited
	w.instances().event(r.ID, "blocked", fmt.Sprintf("%s: %d waiting, its turn at %s", l, l.waiting, fmtMs(r.RetryAt)))
}

// rateDue puts r, waiting or about to, in the due index at its turn at
// (RetryAt) instead of its previous one; the caller stores r.
func (w slotWrites) rateDue(r *record, at int64) {
	if r.Flags&flagWaitingRate != 0 && r.State == stBlocked {
		w.del(bktDue, dueKey(r.RetryAt, r.ID))
	}
	r.RetryAt = at
	r.Flags |= flagWaitingRate
	w.put(bktDue, dueKey(r.RetryAt, r.ID), u64key(uint64(r.RetryAt)))
	w.notes.ids = append(w.notes.ids, r.ID)
	w.notes.dues = append(w.notes.dues, r.RetryAt)
}

// rateTurn is when instance id, at place pos of l's FIFO (-1: look it
// up), may start if those before it start on time: one interval after
// another from when l frees (or the head's own turn, if it waits for its
// pool), later than now.
func (w slotWrites) rateTurn(id uint64, l *limiter, pos int64) int64 {
	at := l.freeAt()
	if head := rateHead(w.tx, l.key); head != 0 && head != id {
		if h, ok := w.instances().loadRecord(head); ok && h.Flags&flagWaitingRate != 0 {
			at = max(at, h.RetryAt)
		}
	}
	if pos < 0 {
		pos = 0
		prefix := append([]byte(l.key), 0)
		c := w.tx.Bucket(bktRateWait).Cursor()
		for key, _ := c.Seek(prefix); key != nil && bytes.HasPrefix(key, prefix) && pos < maxWakeScan; key, _ = c.Next() {
			if binary.BigEndian.Uint64(key[len(key)-8:]) == id {
				break
			}
			pos++
		}
	}
	return max(at+pos*l.lim.Interval(), w.cmd.Now+1)
}

// rateLeave takes r out of the FIFOs and the due index it waits in, and
// clears its flag (nothing to do without it: the flag and the FIFO keys
// come and go together).
func (w slotWrites) rateLeave(r *record) {
	if r.Flags&flagWaitingRate == 0 {
		return
	}
	for _, k := range rateKeys(w.tx, r.ID) {
		w.del(bktRateWait, k)
		if len(k) > 17 {
			key := string(k[:len(k)-17])
			l := loadLimiter(w.tx, key, "", nil)
			l.waiting = max(l.waiting, 1) - 1
			w.saveLimiter(&l)
		}
	}
	w.del(bktRateIdx, u64key(r.ID))
	if r.State == stBlocked {
		w.del(bktDue, dueKey(r.RetryAt, r.ID))
	}
	r.Flags &^= flagWaitingRate
	r.RetryAt = 0
}

// rateWake, for r whose turn came (fire), starts the waiters of the
// limiter r waits for, oldest first, while it lets them; r, if it still
// waits, waits for its next turn.
func (w slotWrites) rateWake(r *record) {
	keys := rateKeys(w.tx, r.ID)
	if len(keys) == 0 || len(keys[len(keys)-1]) <= 17 {
		w.rateRetry(r)
		return
	}
	last := keys[len(keys)-1]
	key := string(last[:len(last)-17])
	w.rateDrain(key, r)
	if r.State == stBlocked && r.Flags&flagWaitingRate != 0 && rateHead(w.tx, key) != r.ID {
		w.rateRetry(r) // its next turn (the drain stopped before it)
	}
}

// rateDrain starts the waiters of limiter key, oldest first, while they
// start (r is the record of one of them, kept up to date).
func (w slotWrites) rateDrain(key string, r *record) {
	for scanned := 0; scanned < maxWakeScan; scanned++ {
		id := rateHead(w.tx, key)
		if id == 0 {
			return
		}
		h := r
		if r == nil || id != r.ID {
			var ok bool
			if h, ok = w.instances().loadRecord(id); !ok || h.State != stBlocked || h.Flags&flagWaitingRate == 0 {
				if w.err != nil {
					return
				}
				w.rateLeave(&record{ID: id, Flags: flagWaitingRate}) // not waiting any more: drop its keys
				continue
			}
		}
		if !w.rateRetry(h) {
			return
		}
	}
}

// rateRetry checks h, a waiting instance holding its slots, again: it
// starts (true), is skipped (true: it left the FIFOs) or waits on (false).
func (w slotWrites) rateRetry(h *record) bool {
	t, ok := w.tasks().definition(h.Task)
	if !ok {
		w.instances().finish(h, stCanceled)
		w.instances().event(h.ID, "canceled", "task no longer exists")
		return true
	}
	var p *model.Pool
	if h.Pool != "" {
		p, _ = w.f.readPool(w.tx, h.Pool)
	}
	ls := w.ratesOf(t, p)
	l := w.rateCheck(h, ls)
	if l == nil {
		w.rateStart(h, ls)
		w.instances().event(h.ID, "unblocked", "its turn under the rate limit came")
		return true
	}
	if l.lim.Skips() && !inFIFO(rateKeys(w.tx, h.ID), l.key) {
		w.instances().finish(h, stSkipped)
		w.notes.changes[len(w.notes.changes)-1].Reason = ReasonRateLimited
		w.instances().event(h.ID, "skipped", fmt.Sprintf("onLimit=skip: %s: next start at %s", l, fmtMs(l.freeAt())))
		return true
	}
	w.rateWait(h, l)
	return false
}

// rateChanged applies a changed limit to its waiters at once (put_task,
// put_pool): it starts those it lets through, and gives the others their
// turns under it (those of a limit removed are checked again, each).
func (w slotWrites) rateChanged(key string) {
	what, lim := w.f.limitOf(w.tx, key)
	if l := loadLimiter(w.tx, key, what, lim); lim != nil && l.interval != 0 && l.interval != lim.Interval() {
		// The next start comes one new interval after the last.
		l.tat += lim.Interval() - l.interval
		l.interval = lim.Interval()
		w.saveLimiter(&l)
	}
	if l := loadLimiter(w.tx, key, "", nil); l.waiting == 0 {
		return
	}
	w.rateDrain(key, nil)
	l := loadLimiter(w.tx, key, what, lim)
	var ids []uint64
	prefix := append([]byte(key), 0)
	c := w.tx.Bucket(bktRateWait).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(ids) < maxWakeScan; k, _ = c.Next() {
		ids = append(ids, binary.BigEndian.Uint64(k[len(k)-8:]))
	}
	for i, id := range ids {
		r, ok := w.instances().loadRecord(id)
		if !ok || r.State != stBlocked || r.Flags&flagWaitingRate == 0 {
			continue
		}
		keys := rateKeys(w.tx, id)
		if len(keys) == 0 || !bytes.HasPrefix(keys[len(keys)-1], prefix) {
			continue // it waits for its pool's limit now
		}
		if lim == nil {
			w.rateRetry(r) // the limit is gone
			continue
		}
		if at := w.rateTurn(id, &l, int64(i)); at != r.RetryAt {
			w.rateDue(r, at)
			w.instances().putRecord(r)
		}
	}
}

// limitOf returns what limiter key is ("task x", "pool y") and its limit
// as now defined (nil: none).
func (f *FSM) limitOf(tx *bolt.Tx, key string) (string, *model.RateLimit) {
	switch name := key[1:]; key[0] {
	case 't':
		var st storedTask
		if v := tx.Bucket(bktTasks).Get([]byte(name)); v != nil && json.Unmarshal(v, &st) == nil {
			return "task " + name, st.Policy.RateLimit
		}
		return "task " + name, nil
	default:
		if p, ok := f.readPool(tx, name); ok {
			return "pool " + name, p.RateLimit
		}
		return "pool " + name, nil
	}
}

// dropLimiter deletes a limiter's state once nothing waits for it
// (delete_task, delete_pool).
func (w slotWrites) dropLimiter(key string) {
	if v := w.tx.Bucket(bktRateState).Get([]byte(key)); v != nil {
		if l := loadLimiter(w.tx, key, "", nil); l.waiting == 0 {
			w.del(bktRateState, []byte(key))
		}
	}
}

// RateWait describes what a rate-waiting instance waits for (why).
type RateWait struct {
	// Limit names the limit ("task x", "pool y") with its values.
	What  string
	Limit model.RateLimit
	// At is the instance's turn (Unix ms); Waiting counts the instances
	// waiting for the limit.
	At      int64
	Waiting uint64
}

// rateWaiting returns what r waits for, if it waits for a rate limit.
func (f *FSM) rateWaiting(tx *bolt.Tx, r *record) *RateWait {
	if r.State != stBlocked || r.Flags&flagWaitingRate == 0 {
		return nil
	}
	keys := rateKeys(tx, r.ID)
	if len(keys) == 0 || len(keys[len(keys)-1]) <= 17 {
		return nil
	}
	last := keys[len(keys)-1]
	key := string(last[:len(last)-17])
	out := &RateWait{At: r.RetryAt, Waiting: loadLimiter(tx, key, "", nil).waiting}
	var lim *model.RateLimit
	if out.What, lim = f.limitOf(tx, key); lim != nil {
		out.Limit = *lim
	}
	return out
}
