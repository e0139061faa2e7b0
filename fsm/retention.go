package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

func isTerminal(st uint8) bool {
	switch st {
	case stSuccess, stFailed, stCanceled, stTerm, stSkipped:
		return true
	}
	return false
}

func (w instanceWrites) prune(p *command.Prune) *Result {
	n := 0
	for _, id := range p.IDs {
		r, ok := w.loadRecord(id)
		if w.err != nil {
			return nil
		}
		if !ok || !isTerminal(r.State) || r.Parent != 0 || w.tx.Bucket(bktAlerts).Get(u64key(id)) != nil {
			continue // a shard goes with its instance
		}
		if r.FirstShard != 0 {
			w.pruneShards(r)
		}
		w.del(bktInstances, u64key(id))
		w.del(bktFinished, finishedKey(r.Task, r.FinishedAt, id))
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
		if w.tx.Bucket(bktResults).Get(u64key(id)) != nil {
			w.del(bktResults, u64key(id))
		}
		n++
	}
	return okResult(struct {
		Pruned int `json:"pruned"`
	}{n})
}

func (w instanceWrites) delPrefix(bkt, prefix []byte) {
	c := w.tx.Bucket(bkt).Cursor()
	var keys [][]byte
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		w.del(bkt, k)
	}
}

// Expired returns up to limit finished instances that are past the
// retention of their task as of now: policy.retention, or def when the
// task sets none or is gone (def 0: keep them); and, from protocol 8,
// those beyond the task's history limits (policy.keepSuccessful,
// keepFailed: overKept). A finished instance whose failure alerts are
// still pending is kept. It reads the finished index (finished.go): per
// task, from its oldest finish time up to the first one not yet due, so
// the time-based cost follows what is due plus one seek per task with
// finished instances, whatever else the state machine holds; a task with
// a history limit adds a walk of its finished instances, newest first.
func (q instanceReads) Expired(now time.Time, def time.Duration, limit int) ([]uint64, error) {
	var out []uint64
	err := q.f.view(func(tx *bolt.Tx) error {
		tasks, alerts := tx.Bucket(bktTasks), tx.Bucket(bktAlerts)
		c := tx.Bucket(bktFinished).Cursor()
		k, _ := c.First()
		for k != nil && len(out) < limit {
			task, _, _, ok := parseFinishedKey(k)
			if !ok {
				return fmt.Errorf("fsm: malformed finished index key %x", k)
			}
			task = append([]byte(nil), task...)
			prefix := append(append([]byte(nil), task...), 0)
			t, _ := storedPolicy(tasks, task)
			keep := def
			if t != nil && t.Policy.Retention > 0 {
				keep = t.Policy.Retention.Std()
			}
			due := len(out)
			for ; keep > 0 && k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Next() {
				_, at, id, _ := parseFinishedKey(k)
				if now.Sub(time.UnixMilli(at)) <= keep {
					break // the rest of the task's range is newer
				}
				if alerts.Get(u64key(id)) == nil {
					out = append(out, id)
				}
			}
			if t != nil && (t.Policy.KeepSuccessful > 0 || t.Policy.KeepFailed > 0) && len(out) < limit {
				var err error
				if out, err = overKept(tx, task, &t.Policy, out, due, limit); err != nil {
					return err
				}
			}
			// On to the next task: the byte after the separator sorts
			// after every key of this one.
			prefix[len(prefix)-1] = 1
			k, _ = c.Seek(prefix)
		}
		return nil
	})
	return out, err
}

// overKept appends to out, up to limit, the finished instances of task
// beyond its history limits p.KeepSuccessful (SUCCESS) and p.KeepFailed
// (the other terminal states): walking the task's finished index from
// the newest, an instance is over when more of its kind came after it
// than its limit keeps. Those already in out[from:] (past retention)
// are not added twice; those whose failure alerts are pending are kept.
// Once both limits are set and passed, every older instance is over, and
// its record is not read.
func overKept(tx *bolt.Tx, task []byte, p *model.Policy, out []uint64, from, limit int) ([]uint64, error) {
	taken := make(map[uint64]bool, len(out)-from)
	for _, id := range out[from:] {
		taken[id] = true
	}
	alerts := tx.Bucket(bktAlerts)
	prefix := append(append([]byte(nil), task...), 0)
	c := tx.Bucket(bktFinished).Cursor()
	k, _ := c.Seek(append(append([]byte(nil), task...), 1))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	succeeded, other := 0, 0
	for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Prev() {
		_, _, id, ok := parseFinishedKey(k)
		if !ok {
			return out, fmt.Errorf("fsm: malformed finished index key %x", k)
		}
		over := p.KeepSuccessful > 0 && succeeded >= p.KeepSuccessful && p.KeepFailed > 0 && other >= p.KeepFailed
		if !over {
			r, err := readRecord(tx, id)
			if err != nil {
				return out, err
			}
			if r.State == stSuccess {
				succeeded++
				over = p.KeepSuccessful > 0 && succeeded > p.KeepSuccessful
			} else {
				other++
				over = p.KeepFailed > 0 && other > p.KeepFailed
			}
		}
		if over && !taken[id] && alerts.Get(u64key(id)) == nil {
			out = append(out, id)
		}
	}
	return out, nil
}

// storedPolicy is the stored definition of task (nil when it is gone).
func storedPolicy(tasks *bolt.Bucket, task []byte) (*storedTask, error) {
	tv := tasks.Get(task)
	if tv == nil {
		return nil, nil
	}
	var t storedTask
	if err := json.Unmarshal(tv, &t); err != nil {
		return nil, err
	}
	return &t, nil
}
