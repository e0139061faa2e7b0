package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
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
		if !ok || !isTerminal(r.State) || w.tx.Bucket(bktAlerts).Get(u64key(id)) != nil {
			continue
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
// task sets none or is gone (def 0: keep them). A finished instance whose
// failure alerts are still pending is kept. It reads the finished index
// (finished.go): per task, from its oldest finish time up to the first
// one not yet due, so its cost follows what is due plus one seek per task
// with finished instances, whatever else the state machine holds.
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
			prefix := append(append([]byte(nil), task...), 0)
			keep := taskRetention(tasks, task, def)
			for ; keep > 0 && k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Next() {
				_, at, id, _ := parseFinishedKey(k)
				if now.Sub(time.UnixMilli(at)) <= keep {
					break // the rest of the task's range is newer
				}
				if alerts.Get(u64key(id)) == nil {
					out = append(out, id)
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

// taskRetention is how long a task's finished instances are kept: its
// policy.retention, else def.
func taskRetention(tasks *bolt.Bucket, task []byte, def time.Duration) time.Duration {
	if tv := tasks.Get(task); tv != nil {
		var t storedTask
		if json.Unmarshal(tv, &t) == nil && t.Policy.Retention > 0 {
			return t.Policy.Retention.Std()
		}
	}
	return def
}
