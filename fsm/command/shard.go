package command

import (
	"sort"

	"github.com/ax-scheduler/ax/model"
)

// Shard fans a READY sharded instance out into its shards (protocol 8),
// or ends the shards of a broadcast pinned to an executor that left. The
// leader's dispatcher proposes it: for policy.shards it names the count,
// for a broadcast the executors that run the task when it starts (one
// shard each, in this order).
type Shard struct {
	ID        uint64   `json:"i"`
	Total     int      `json:"n,omitempty"`
	Executors []string `json:"e,omitempty"`
	// Left names an executor that left while the broadcast ran: its
	// shards of ID that wait to run (READY, RETRYING) end FAILED.
	Left string `json:"l,omitempty"`
}

// Count is how many shards a fan-out creates (0 for Left).
func (s *Shard) Count() int {
	if s.Left != "" {
		return 0
	}
	if len(s.Executors) > 0 {
		return len(s.Executors)
	}
	return s.Total
}

// Validate checks the instance id and exactly one of a count
// (1..model.MaxShards), distinct executor names (as many at most) and
// a departed executor's name.
func (s *Shard) Validate(*Command) *model.Error {
	if s.ID == 0 {
		return model.FieldErrorf("id", "instance id 0")
	}
	set := 0
	for _, b := range []bool{s.Total != 0, len(s.Executors) > 0, s.Left != ""} {
		if b {
			set++
		}
	}
	if set != 1 {
		return model.FieldErrorf("total", "give one of total, executors and left")
	}
	switch {
	case s.Left != "":
		return checkName(field("left"), s.Left)
	case len(s.Executors) > 0:
		if len(s.Executors) > model.MaxShards {
			return model.FieldErrorf("executors", "%d executors, at most %d", len(s.Executors), model.MaxShards)
		}
		seen := append([]string(nil), s.Executors...)
		sort.Strings(seen)
		for i, e := range s.Executors {
			if err := checkName(item("executors", i, ""), e); err != nil {
				return err
			}
		}
		for i := 1; i < len(seen); i++ {
			if seen[i] == seen[i-1] {
				return model.FieldErrorf("executors", "executor %q named twice", seen[i])
			}
		}
	case s.Total < 1 || s.Total > model.MaxShards:
		return model.FieldErrorf("total", "%d shards, want 1 to %d", s.Total, model.MaxShards)
	}
	return nil
}
