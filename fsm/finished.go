package fsm

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	bolt "go.etcd.io/bbolt"
)

// The finished index lists every instance in a terminal state by task and
// finish time, so that retention reads only what is due (see DESIGN.md,
// "Retention"). It is a function of the instance records alone: apply
// adds an instance's key when it enters a terminal state (setState; a
// terminal state is final) and prune removes it with the record. Retention
// is applied when the index is read, so changing a task's retention or
// the agents' default takes effect at once.

// bktFinished: task \x00, u64 finish time (ms), u64 id -> empty.
var bktFinished = []byte("finished")

// keyFinishedThrough is the applied index through which the finished
// index is known complete: ApplyBatch writes it with the applied index, a
// binary without the index does not. A file whose mark lags its applied
// index (written by an older release, or downgraded and upgraded again)
// has its index rebuilt when it is opened.
var keyFinishedThrough = []byte("finished_through")

// finishedKeyLen is the length of a finished key after the task name and
// its separator.
const finishedKeyLen = 16

func finishedKey(task string, finishedAt int64, id uint64) []byte {
	k := make([]byte, 0, len(task)+1+finishedKeyLen)
	k = append(k, task...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(finishedAt))
	return binary.BigEndian.AppendUint64(k, id)
}

// parseFinishedKey splits a finished key; ok is false for a key too short
// to be one.
func parseFinishedKey(k []byte) (task []byte, finishedAt int64, id uint64, ok bool) {
	n := len(k) - finishedKeyLen - 1
	if n < 0 || k[n] != 0 {
		return nil, 0, 0, false
	}
	return k[:n], int64(binary.BigEndian.Uint64(k[n+1:])), binary.BigEndian.Uint64(k[n+9:]), true
}

// rebuildChunk is how many instance records one transaction of a rebuild
// reads, so that a large file is not indexed in one huge transaction.
const rebuildChunk = 100_000

// ensureFinishedIndex rebuilds db's finished index from the instance
// records unless the file says it is complete (keyFinishedThrough equals
// the applied index). It runs when a file is opened or restored, before
// anything is applied to it: once for a file an older release wrote.
func ensureFinishedIndex(db *bolt.DB, logger hclog.Logger) error {
	var applied []byte
	complete := false
	err := db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bktMeta)
		if v := meta.Get(keyApplied); len(v) >= 8 {
			applied = append([]byte(nil), v[:8]...)
		} else {
			applied = u64key(0)
		}
		through := meta.Get(keyFinishedThrough)
		complete = string(through) == string(applied)
		return nil
	})
	if err != nil || complete {
		return err
	}
	start := time.Now()
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bktFinished); err != nil {
			return err
		}
		_, err := tx.CreateBucket(bktFinished)
		return err
	})
	read, indexed, bad := 0, 0, 0
	var from []byte // the next record to read; nil: the first
	for done := false; err == nil && !done; {
		err = db.Update(func(tx *bolt.Tx) error {
			c := tx.Bucket(bktInstances).Cursor()
			fin := tx.Bucket(bktFinished)
			k, v := c.First()
			if from != nil {
				k, v = c.Seek(from)
			}
			for i := 0; k != nil && i < rebuildChunk; i++ {
				read++
				if len(v) >= 2 && isTerminal(v[1]) {
					r, err := decodeRecord(binary.BigEndian.Uint64(k), v)
					if err != nil {
						bad++ // apply cannot finish it either
					} else if err := fin.Put(finishedKey(r.Task, r.FinishedAt, r.ID), nil); err != nil {
						return err
					} else {
						indexed++
					}
				}
				k, v = c.Next()
			}
			if k != nil {
				from = append(from[:0], k...)
				return nil
			}
			done = true
			return tx.Bucket(bktMeta).Put(keyFinishedThrough, applied)
		})
	}
	if err != nil {
		return fmt.Errorf("fsm: rebuild the finished index: %w", err)
	}
	log := logger.Info
	if read == 0 {
		log = logger.Debug // a new file
	}
	log("built the finished-instance index", "instances", read, "finished", indexed,
		"undecodable", bad, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
