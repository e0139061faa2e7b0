package fsm

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// RestoreObserver is an Observer that also wants to know when a snapshot
// replaced the whole state (Restore): what it derived from earlier
// changes is then to be read again from the state machine.
type RestoreObserver interface {
	Observer
	Restored()
}

// LastSuccesses returns, for every task, when its newest SUCCESS instance
// finished (Unix ms). It walks each task's finished index backwards from
// its newest entry and reads at most maxScan entries a task, so it costs
// the task count plus the non-successes that ended after each task's last
// success, never a scan of all instances. A task none of whose newest
// maxScan finished instances succeeded (or that never succeeded) is left
// out.
func (q consoleReads) LastSuccesses(maxScan int) (map[string]int64, error) {
	out := map[string]int64{}
	err := q.f.view(func(tx *bolt.Tx) error {
		insts := tx.Bucket(bktInstances)
		fin := tx.Bucket(bktFinished).Cursor()
		return tx.Bucket(bktTasks).ForEach(func(name, _ []byte) error {
			prefix := append(append([]byte(nil), name...), 0)
			end := append(append([]byte(nil), name...), 1)
			k, _ := fin.Seek(end)
			if k == nil {
				k, _ = fin.Last()
			} else {
				k, _ = fin.Prev()
			}
			for n := 0; k != nil && n < maxScan && bytes.HasPrefix(k, prefix); n++ {
				_, at, id, ok := parseFinishedKey(k)
				if ok {
					if b, ok := peekBrief(id, insts.Get(u64key(id))); ok && b.State == model.StateSuccess {
						out[string(name)] = at
						break
					}
				}
				k, _ = fin.Prev()
			}
			return nil
		})
	})
	return out, err
}
