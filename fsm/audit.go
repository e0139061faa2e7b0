package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

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
			ref := AuditRef{Name: string(k[:len(k)-9]), Version: binary.BigEndian.Uint64(k[len(k)-8:])}
			if err := decodeAuditRef(v, &ref); err != nil {
				return fmt.Errorf("task history %s v%d: %w", ref.Name, ref.Version, err)
			}
			out = append(out, ref)
		}
		return nil
	})
	return out, err
}

// decodeAuditRef reads the op, actor and time of a stored
// model.TaskVersion without its definition: the audit reads every
// version, and decoding each definition (a few KiB) made a page over
// 3,000 versions take about 100 ms. The definition ("task") is written
// after those scalars, whose strings cannot hold an unescaped quote, so
// the first `,"task":` starts it.
func decodeAuditRef(v []byte, ref *AuditRef) error {
	if i := bytes.Index(v, []byte(`,"task":`)); i > 0 {
		v = append(v[:i:i], '}')
	}
	var tv struct {
		Op    string     `json:"op"`
		Actor string     `json:"actor"`
		Time  model.Time `json:"time"`
	}
	if err := json.Unmarshal(v, &tv); err != nil {
		return err
	}
	ref.Op, ref.Actor, ref.Time = tv.Op, tv.Actor, tv.Time
	return nil
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
