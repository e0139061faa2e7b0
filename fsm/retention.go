package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Prune deletes finished instances the leader found past their retention.
// The state machine deletes only instances in a terminal state, with their
// attempts, logs, events and idempotency key.
type Prune struct {
	IDs []uint64 `json:"i"`
}

func isTerminal(st uint8) bool {
	switch st {
	case stSuccess, stFailed, stCanceled, stTerm, stSkipped:
		return true
	}
	return false
}

func (w *writer) prune() *Result {
	var p Prune
	if e := w.decode(&p); e != nil {
		return errResult(e)
	}
	n := 0
	for _, id := range p.IDs {
		r, ok := w.loadRecord(id)
		if w.err != nil {
			return nil
		}
		if !ok || !isTerminal(r.State) || w.tx.Bucket(bktAlerts).Get(u64key(id)) != nil {
			continue
		}
		w.del(bktInstances, u64key(id))
		if r.IdemKey != "" {
			if v := w.tx.Bucket(bktIdem).Get(idemKey(r.Task, r.IdemKey)); len(v) == 8 && binary.BigEndian.Uint64(v) == id {
				w.del(bktIdem, idemKey(r.Task, r.IdemKey))
			}
		}
		// A single-instance range (cron fires, triggers) goes with it.
		if v := w.tx.Bucket(bktTaskInst).Get(taskInstKey(r.Task, id)); len(v) == 8 && binary.BigEndian.Uint64(v) == id {
			w.del(bktTaskInst, taskInstKey(r.Task, id))
		}
		for _, b := range [][]byte{bktAttempts, bktLogs, bktInstEvents} {
			w.delPrefix(b, u64key(id))
		}
		n++
	}
	return okResult(struct {
		Pruned int `json:"pruned"`
	}{n})
}

func (w *writer) delPrefix(bkt, prefix []byte) {
	c := w.tx.Bucket(bkt).Cursor()
	var keys [][]byte
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		w.del(bkt, k)
	}
}

// Expired returns up to limit finished instances, oldest first, that
// finished before the retention of their task (taskRetention, or def when
// the task sets none or is gone) as of now. It reads at most scan
// records.
func (f *FSM) Expired(now time.Time, def time.Duration, limit, scan int) ([]uint64, error) {
	var out []uint64
	err := f.view(func(tx *bolt.Tx) error {
		retention := map[string]time.Duration{}
		tasks := tx.Bucket(bktTasks)
		c := tx.Bucket(bktInstances).Cursor()
		for k, v := c.First(); k != nil && scan > 0 && len(out) < limit; k, v = c.Next() {
			scan--
			id := binary.BigEndian.Uint64(k)
			r, err := decodeRecord(id, v)
			if err != nil {
				return err
			}
			if !isTerminal(r.State) || r.FinishedAt == 0 {
				continue
			}
			keep, ok := retention[r.Task]
			if !ok {
				keep = def
				if tv := tasks.Get([]byte(r.Task)); tv != nil {
					var t storedTask
					if json.Unmarshal(tv, &t) == nil && t.Policy.Retention > 0 {
						keep = t.Policy.Retention.Std()
					}
				}
				retention[r.Task] = keep
			}
			if keep > 0 && now.Sub(time.UnixMilli(r.FinishedAt)) > keep {
				out = append(out, id)
			}
		}
		return nil
	})
	return out, err
}
