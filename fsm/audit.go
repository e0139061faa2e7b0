package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// AuditRef is one version of a task's definition as the audit lists it
// (GET /v1/audit): which task, which version, the operation, who and when.
type AuditRef struct {
	Name    string
	Version uint64
	Op      string
	Actor   string
	Time    model.Time
}

// AuditRefs returns every version the task history keeps, of every task
// (task "") or of one, each task's oldest first: what GET /v1/audit
// sorts and pages. It reads the history the state machine keeps for
// GET /v1/tasks/{name}/history; no other state.
func (q taskReads) AuditRefs(task string) ([]AuditRef, error) {
	var out []AuditRef
	err := q.f.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bktHistory).Cursor()
		var prefix []byte
		if task != "" {
			prefix = append([]byte(task), 0)
		}
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) < 9 {
				continue
			}
			var tv struct {
				Op    string     `json:"op"`
				Actor string     `json:"actor"`
				Time  model.Time `json:"time"`
			}
			if err := json.Unmarshal(v, &tv); err != nil {
				return err
			}
			out = append(out, AuditRef{Name: string(k[:len(k)-9]), Version: binary.BigEndian.Uint64(k[len(k)-8:]),
				Op: tv.Op, Actor: tv.Actor, Time: tv.Time})
		}
		return nil
	})
	return out, err
}

// TaskVersionAt returns version v of a task's definition from its
// history, nil when the history has no such version.
func (q taskReads) TaskVersionAt(name string, v uint64) (*model.Task, error) {
	var t *model.Task
	err := q.f.view(func(tx *bolt.Tx) (err error) {
		t, err = historyTask(tx, name, v)
		return err
	})
	return t, err
}
