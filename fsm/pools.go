package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Shared pools (protocol 8): bktPools holds each pool's definition, name
// → model.Pool JSON (read through a cache keyed by the bucket's
// sequence), and bktPoolState its counts, busy and queued; bktPoolWait
// the instances waiting for a slot, pool \x00 id → task, oldest id
// first, and bktPoolIdx, id → 'w' + pool, the pool each of them waits
// for. An instance holding a slot names its pool in its record
// (record.Pool), so that its end frees what it took even if its task's
// policy.pool changed since.
//
// Admission (slots.go) takes a slot of the task's pool with the task's
// own slot; an instance that finds its task's slot free but the pool
// full waits BLOCKED with flagWaitingPool (without its task's slot), or
// is SKIPPED with overlap skip. A freed pool slot, or a freed task slot
// of a task in a pool, starts the oldest waiting instance whose task has
// a slot of its own free (poolWake).

// poolWaiting marks a pool_idx entry of a waiting instance.
const poolWaiting = 'w'

func poolWaitKey(pool string, id uint64) []byte {
	k := make([]byte, 0, len(pool)+9)
	k = append(k, pool...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, id)
}

// readPool returns pool name with its counts: the definition from the
// compiled cache (keyed by bktPools' sequence, as calendars are), the
// counts from bktPoolState (two uvarints, written on every admission and
// end, so kept out of the definition's JSON).
func (f *FSM) readPool(tx *bolt.Tx, name string) (*model.Pool, bool) {
	cache := new(atomic.Pointer[defs[model.Pool]]) // none: decode afresh
	if f != nil {
		cache = &f.defs.pools
	}
	defs := loadDefs(tx, bktPools, cache, func(v []byte) (model.Pool, bool) {
		var p model.Pool
		return p, json.Unmarshal(v, &p) == nil
	})
	i := slices.IndexFunc(defs, func(p model.Pool) bool { return p.Name == name })
	if i < 0 {
		return nil, false
	}
	p := defs[i]
	p.Busy, p.Queued = 0, 0
	if v := tx.Bucket(bktPoolState).Get([]byte(name)); v != nil {
		busy, n := binary.Uvarint(v)
		queued, m := binary.Uvarint(v[max(n, 0):])
		if n > 0 && m > 0 {
			p.Busy, p.Queued = busy, queued
		}
	}
	return &p, true
}

// savePool writes p's counts.
func (w *writer) savePool(p *model.Pool) {
	v := binary.AppendUvarint(binary.AppendUvarint(make([]byte, 0, 8), p.Busy), p.Queued)
	w.put(bktPoolState, []byte(p.Name), v)
}

// poolOf returns the pool t's instances need a slot of, if its policy
// names one that exists (put_task refuses one that does not; a pool is
// not deleted while a task names it).
func (w slotWrites) poolOf(t *model.Task) (*model.Pool, bool) {
	if t.Policy.Pool == "" {
		return nil, false
	}
	return w.f.readPool(w.tx, t.Policy.Pool)
}

// poolTake gives r a slot of p if one is free, and reports whether it did.
func (w slotWrites) poolTake(p *model.Pool, r *record) bool {
	if p.Busy >= uint64(p.Slots) {
		return false
	}
	p.Busy++
	w.savePool(p)
	r.Pool = p.Name // saved with r's new state by the caller
	return true
}

// poolWait makes r, BLOCKED, wait for a slot of p.
func (w slotWrites) poolWait(p *model.Pool, r *record) {
	p.Queued++
	w.savePool(p)
	w.put(bktPoolWait, poolWaitKey(p.Name, r.ID), []byte(r.Task))
	w.put(bktPoolIdx, u64key(r.ID), append([]byte{poolWaiting}, p.Name...))
	r.Flags |= flagWaitingPool
	w.instances().setState(r, stBlocked)
	w.instances().event(r.ID, "blocked", fmt.Sprintf("pool %s: %d of %d slots busy", p.Name, p.Busy, p.Slots))
}

// poolLeave undoes what an instance that ends took of a pool: the slot
// of pool held it held (its record's Pool, which finish clears), which
// then starts a waiting instance, or, waiting (flagWaitingPool, which
// finish clears too), its place in the wait.
func (w slotWrites) poolLeave(r *record, held string, waiting bool) {
	if waiting {
		v := w.tx.Bucket(bktPoolIdx).Get(u64key(r.ID))
		if len(v) < 2 || v[0] != poolWaiting {
			return
		}
		name := string(v[1:])
		w.del(bktPoolIdx, u64key(r.ID))
		w.del(bktPoolWait, poolWaitKey(name, r.ID))
		if p, ok := w.f.readPool(w.tx, name); ok {
			p.Queued = max(p.Queued, 1) - 1
			w.savePool(p)
		}
		return
	}
	if held == "" {
		return
	}
	if p, ok := w.f.readPool(w.tx, held); ok {
		p.Busy = max(p.Busy, 1) - 1
		w.savePool(p)
		w.poolWake(held)
	}
}

// maxWakeScan bounds the waiting instances one wake looks at.
const maxWakeScan = 10_000

// poolWake starts waiting instances of pool name while it has free
// slots: each time the oldest whose task has a slot of its own free (the
// others keep their places). It looks at maxWakeScan waiting instances
// at most.
func (w slotWrites) poolWake(name string) {
	p, ok := w.f.readPool(w.tx, name)
	if !ok || p.Queued == 0 {
		return // nobody waits
	}
	prefix := append([]byte(name), 0)
	at := prefix
	for scanned := 0; p.Busy < uint64(p.Slots) && scanned < maxWakeScan; scanned++ {
		k, v := w.tx.Bucket(bktPoolWait).Cursor().Seek(at)
		if k == nil || !bytes.HasPrefix(k, prefix) {
			return
		}
		key, task := append([]byte(nil), k...), string(v)
		at = append(key[:len(key):len(key)], 0) // past this key: the keys of a pool have one length
		id := binary.BigEndian.Uint64(key[len(key)-8:])
		r, ok := w.instances().loadRecord(id)
		if w.err != nil {
			return
		}
		if !ok || r.State != stBlocked || r.Flags&flagWaitingPool == 0 {
			w.del(bktPoolWait, key) // not waiting any more: drop it
			p.Queued = max(p.Queued, 1) - 1
			w.savePool(p)
			continue
		}
		t, ok := w.tasks().definition(task)
		st := w.loadState(task)
		if !ok || st.Inflight >= uint64(max(t.Policy.MaxConcurrency, 1)) {
			continue // its task is at its own limit: it keeps its place
		}
		w.del(bktPoolWait, key)
		w.del(bktPoolIdx, u64key(id))
		p.Queued = max(p.Queued, 1) - 1
		r.Flags &^= flagWaitingPool
		ls := w.ratesOf(t, p)
		if l := w.rateCheck(r, ls); l != nil && l.lim.Skips() {
			w.savePool(p)
			w.rateSkip(r, l)
			continue
		}
		w.poolTake(p, r)
		st.Inflight++
		w.saveState(task, st)
		if w.rateAdmit(r, ls) {
			w.instances().event(id, "unblocked", "a slot of pool "+name+" freed")
		}
	}
}

// putPoolCheck is put_pool's check: it finds the stored pool, if any.
func (w slotWrites) putPoolCheck(b *command.PutPool) (*model.Pool, *Result) {
	p, _ := w.f.readPool(w.tx, b.Pool.Name)
	return p, nil
}

func (w slotWrites) putPool(b *command.PutPool, cur *model.Pool) *Result {
	p := b.Pool
	now := model.UnixMilli(w.cmd.Now)
	p.Version, p.CreatedAt, p.UpdatedAt, p.UpdatedBy = 1, &now, &now, w.cmd.Actor
	if cur != nil {
		p.Version, p.CreatedAt = cur.Version+1, cur.CreatedAt
	}
	v, err := json.Marshal(&p)
	if err != nil {
		w.err = err
		return nil
	}
	w.put(bktPools, []byte(p.Name), v)
	if w.err == nil {
		_, w.err = w.tx.Bucket(bktPools).NextSequence() // the cached definitions are stale
	}
	w.poolWake(p.Name) // more slots start waiting instances at once
	if p.RateLimit != nil || (cur != nil && cur.RateLimit != nil) {
		w.rateChanged("p" + p.Name) // a changed rate limit applies at once
	}
	if w.err != nil {
		return nil
	}
	out, _ := w.f.readPool(w.tx, p.Name)
	return okResult(out)
}

// namedPool is delete_pool's check: the pool exists, no task names it
// and no instance holds or waits for a slot.
func (w slotWrites) namedPool(ref *command.TaskRef) (*model.Pool, *Result) {
	p, ok := w.f.readPool(w.tx, ref.Name)
	if !ok {
		return nil, errResult(&model.Error{Code: model.CodeNotFound, Field: "name", Message: "no pool named " + ref.Name})
	}
	if users := poolUsers(w.tx, ref.Name); len(users) > 0 {
		return nil, errResult(&model.Error{Code: model.CodePrecondition, Field: "name",
			Message: fmt.Sprintf("pool %s is used by task(s) %s: remove it from their policy.pool first", ref.Name, strings.Join(users, ", "))})
	}
	if p.Busy > 0 || p.Queued > 0 {
		return nil, errResult(&model.Error{Code: model.CodePrecondition, Field: "name",
			Message: fmt.Sprintf("pool %s has %d instance(s) holding a slot and %d waiting", ref.Name, p.Busy, p.Queued)})
	}
	return p, nil
}

func (w slotWrites) deletePool(ref *command.TaskRef, cur *model.Pool) *Result {
	w.del(bktPools, []byte(ref.Name))
	w.del(bktPoolState, []byte(ref.Name))
	w.dropLimiter("p" + ref.Name)
	if w.err == nil {
		_, w.err = w.tx.Bucket(bktPools).NextSequence()
	}
	return okResult(cur)
}

// poolUsers lists the tasks whose policy.pool names pool.
func poolUsers(tx *bolt.Tx, pool string) []string {
	var out []string
	_ = tx.Bucket(bktTasks).ForEach(func(k, v []byte) error {
		var t storedTask
		if json.Unmarshal(v, &t) == nil && !t.Deleted && t.Policy.Pool == pool {
			out = append(out, string(k))
		}
		return nil
	})
	return out
}

// poolRefusal is put_task's check of policy.pool: it must exist.
func (f *FSM) poolRefusal(tx *bolt.Tx, t *model.Task) *model.Error {
	if t.Policy.Pool == "" {
		return nil
	}
	if _, ok := f.readPool(tx, t.Policy.Pool); !ok {
		return &model.Error{Code: model.CodeInvalid, Field: "policy.pool",
			Message: "no pool named " + t.Policy.Pool + ": put it first (PUT /v1/pools/" + t.Policy.Pool + ")"}
	}
	return nil
}

// Pools lists the pools by name, with their counts and tasks.
func (q taskReads) Pools() (*model.PoolList, error) {
	out := &model.PoolList{Pools: []model.Pool{}}
	err := q.f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktPools).ForEach(func(k, _ []byte) error {
			if p, ok := q.f.readPool(tx, string(k)); ok {
				p.Tasks = poolUsers(tx, p.Name)
				out.Pools = append(out.Pools, *p)
			}
			return nil
		})
	})
	return out, err
}

// Pool returns one pool with its counts and tasks.
func (q taskReads) Pool(name string) (*model.Pool, error) {
	var out *model.Pool
	err := q.f.view(func(tx *bolt.Tx) error {
		p, ok := q.f.readPool(tx, name)
		if !ok {
			return &model.Error{Code: model.CodeNotFound, Field: "name", Message: "no pool named " + name}
		}
		p.Tasks = poolUsers(tx, name)
		out = p
		return nil
	})
	return out, err
}

// waitingPool returns the pool r waits for a slot of and its counts (ok
// false when it does not wait for one).
func (f *FSM) waitingPool(tx *bolt.Tx, r *record) (*model.Pool, bool) {
	if r.Flags&flagWaitingPool == 0 {
		return nil, false
	}
	v := tx.Bucket(bktPoolIdx).Get(u64key(r.ID))
	if len(v) < 2 || v[0] != poolWaiting {
		return nil, false
	}
	return f.readPool(tx, string(v[1:]))
}
