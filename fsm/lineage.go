package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// lineageScan bounds how many of a dependent task's newest instances
// InstanceLineage reads looking for those of the date that the indexes
// do not name (released and not yet ended, skipped, canceled).
const lineageScan = 200

// lineageMax bounds the downstream instances InstanceLineage answers.
const lineageMax = 50

// InstanceLineage returns what dependsOn links to the instance id for
// its scheduled date (nil when nothing does, or it has none): upstream, each
// dependsOn task's instance that succeeded for the date (the success
// index names it from protocol 8) or else the one that failed for it;
// downstream, the scheduled instances of that date of the tasks that
// depend on its task: those waiting for it, the date's success and
// failure of each such task, and those among its newest lineageScan
// instances. Read-only; the same state answers the same.
func (q consoleReads) InstanceLineage(id uint64) (*model.Lineage, error) {
	var out *model.Lineage
	err := q.f.view(func(tx *bolt.Tx) error {
		r, err := readRecord(tx, id)
		if err != nil || r.Date == "" {
			return err
		}
		l := &model.Lineage{Date: r.Date}
		insts := tx.Bucket(bktInstances)
		link := func(task string, id uint64) model.LineageLink {
			ll := model.LineageLink{Task: task, Instance: model.FormatID(id)}
			if b, ok := peekBrief(id, insts.Get(u64key(id))); ok {
				ll.State = b.State
			}
			return ll
		}
		indexed := func(bkt []byte, task string) (uint64, bool) {
			if v := tx.Bucket(bkt).Get(depKey(task, r.Date)); len(v) == 8 {
				return binary.BigEndian.Uint64(v), true
			}
			return 0, false
		}
		w := &writer{tx: tx}
		if t, ok := w.tasks().loadTask(r.Task); ok && scheduledSource(r) {
			for _, dep := range t.Policy.DependsOn {
				if up, ok := indexed(bktSucceeded, dep); ok {
					l.Upstream = append(l.Upstream, link(dep, up))
				} else if up, ok := indexed(bktFailedDeps, dep); ok {
					l.Upstream = append(l.Upstream, link(dep, up))
				}
			}
		}
		if w.err != nil {
			return w.err
		}
		// The tasks that depend on r's task: only a definition that holds
		// its name in quotes can, and only those are decoded (decoding
		// every one of 1,000 definitions took 29 ms a read; under load).
		var deps []string
		quoted := []byte(`"` + r.Task + `"`)
		err = tx.Bucket(bktTasks).ForEach(func(_, v []byte) error {
			if !bytes.Contains(v, quoted) {
				return nil
			}
			var tl TaskLink
			if err := json.Unmarshal(v, &tl); err != nil {
				return err
			}
			if !tl.Deleted && slices.Contains(tl.Policy.DependsOn, r.Task) {
				deps = append(deps, tl.Name)
			}
			return nil
		})
		if err != nil {
			return err
		}
		found := map[uint64]string{}
		ofDate := func(id uint64) {
			if dr, err := readRecord(tx, id); err == nil && dr.Date == r.Date && scheduledSource(dr) && slices.Contains(deps, dr.Task) {
				found[id] = dr.Task
			}
		}
		prefix := append(depKey(r.Task, r.Date), 0)
		c := tx.Bucket(bktWaitDeps).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, _ = c.Next() {
			ofDate(binary.BigEndian.Uint64(k[len(prefix):]))
		}
		for _, d := range deps {
			for _, bkt := range [][]byte{bktSucceeded, bktFailedDeps} {
				if id, ok := indexed(bkt, d); ok {
					ofDate(id)
				}
			}
			next := taskNewestFirst(tx, d, ^uint64(0))
			for range lineageScan {
				id, ok := next()
				if !ok {
					break
				}
				ofDate(id)
			}
		}
		ids := make([]uint64, 0, len(found))
		for id := range found {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids[:min(len(ids), lineageMax)] {
			l.Downstream = append(l.Downstream, link(found[id], id))
		}
		if len(l.Upstream)+len(l.Downstream) > 0 {
			out = l
		}
		return nil
	})
	return out, err
}
