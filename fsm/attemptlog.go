package fsm

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// AttemptLog returns the kept output of attempt n of an instance
// (committed when the attempt ended; empty for one that kept none), and
// a not_found error naming attempt for an attempt it never had.
func (q instanceReads) AttemptLog(id uint64, n int) (*model.InstanceLog, error) {
	var out *model.InstanceLog
	err := q.f.view(func(tx *bolt.Tx) error {
		r, err := readRecord(tx, id)
		if err != nil {
			return err
		}
		if n < 1 || n > int(r.Attempts) {
			return &model.Error{Code: model.CodeNotFound, Field: "attempt",
				Message: fmt.Sprintf("instance %s has no attempt %d: it made %d", model.FormatID(id), n, r.Attempts)}
		}
		out = &model.InstanceLog{InstanceID: model.FormatID(id), Attempt: n, State: name(stateNames, r.State)}
		if lv := tx.Bucket(bktLogs).Get(attemptKey(id, n)); lv != nil {
			out.Output = string(lv)
		}
		return nil
	})
	return out, err
}
