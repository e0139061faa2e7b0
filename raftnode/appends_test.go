package raftnode

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/internal/testkit"
)

// failingStore is an in-memory log store whose appends fail while err is
// set.
type failingStore struct {
	*raft.InmemStore
	err error
}

func (s *failingStore) StoreLogs(logs []*raft.Log) error {
	if s.err != nil {
		return s.err
	}
	return s.InmemStore.StoreLogs(logs)
}

func (s *failingStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// TestAppendWatch_FailingStore: a failed append is remembered with its
// error, when the failures began and how many in a row; the next append
// that succeeds clears it; the total keeps counting.
func TestAppendWatch_FailingStore(t *testing.T) {
	store := &failingStore{InmemStore: raft.NewInmemStore()}
	w := &appendWatch{LogStore: store}
	entry := func(i uint64) []*raft.Log { return []*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand}} }
	full := fmt.Errorf("write raft.db: %w", syscall.ENOSPC)
	steps := []struct {
		name         string
		err          error
		single       bool // StoreLog rather than StoreLogs
		wantFailures uint64
		wantTotal    uint64
	}{
		{"appends succeed", nil, false, 0, 0},
		{"disk full", full, false, 1, 1},
		{"still full, one entry", full, true, 2, 2},
		{"space again", nil, true, 0, 2},
		{"full again", full, false, 1, 3},
		{"space again, batch", nil, false, 0, 3},
	}
	var since time.Time
	for i, s := range steps {
		store.err = s.err
		var err error
		if s.single {
			err = w.StoreLog(entry(uint64(i + 1))[0])
		} else {
			err = w.StoreLogs(entry(uint64(i + 1)))
		}
		if !errors.Is(err, s.err) || (s.err == nil) != (err == nil) {
			t.Fatalf("%s: append returned %v, want %v", s.name, err, s.err)
		}
		f, total := w.state()
		if total != s.wantTotal {
			t.Errorf("%s: total %d, want %d", s.name, total, s.wantTotal)
		}
		if s.wantFailures == 0 {
			if f != nil {
				t.Errorf("%s: failure %+v, want none", s.name, f)
			}
			continue
		}
		if f == nil || f.Failures != s.wantFailures || !errors.Is(f.Err, syscall.ENOSPC) || f.Since.IsZero() {
			t.Fatalf("%s: failure %+v, want %d in a row with ENOSPC and a start time", s.name, f, s.wantFailures)
		}
		if s.wantFailures == 1 {
			since = f.Since
		} else if !f.Since.Equal(since) {
			t.Errorf("%s: since %s, want the first failure's %s", s.name, f.Since, since)
		}
	}
	if last, err := store.LastIndex(); err != nil || last != uint64(len(steps)) {
		t.Errorf("store holds up to %d (%v), want %d: the successful appends reach the store", last, err, len(steps))
	}
}

// TestNode_FollowerCannotAppend: a follower whose appends fail keeps its
// leader (heartbeats carry no entries) and its own commit index stops
// where its log stops, but it knows the leader's commit index and says why
// it lags; once appends succeed again it catches up and the failure
// clears by itself.
func TestNode_FollowerCannotAppend(t *testing.T) {
	full := fmt.Errorf("write raft.db: %w", syscall.ENOSPC)
	var failing atomic.Bool
	nodes := startCluster(t, 3, func(i int, cfg *Config) {
		if i == 2 {
			cfg.AppendFault = func() error {
				if failing.Load() {
					return full
				}
				return nil
			}
		}
	})
	leader := leaderOf(t, nodes)
	var follower *testNode
	for _, n := range nodes[1:] {
		if n != leader && n.cfg.AppendFault != nil {
			follower = n
		}
	}
	if follower == nil {
		t.Skip("the node whose appends fail leads") // n1 bootstraps and leads in practice
	}
	if err := putTask(t, leader, "before"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, func() error {
		if got, want := follower.KnownCommitIndex(), leader.CommitIndex(); got != want {
			return fmt.Errorf("healthy follower knows commit index %d, leader has %d", got, want)
		}
		return nil
	})
	if f := follower.AppendFailure(); f != nil {
		t.Fatalf("append failure %+v before any fault", f)
	}

	failing.Store(true)
	for i := 0; i < 30; i++ {
		if err := putTask(t, leader, fmt.Sprintf("t%d", i)); err != nil {
			t.Fatalf("the leader and the other follower commit without the full one: %v", err)
		}
	}
	commit := leader.CommitIndex()
	testkit.Eventually(t, 10*time.Second, func() error {
		f := follower.AppendFailure()
		if f == nil || !errors.Is(f.Err, syscall.ENOSPC) || f.Failures == 0 {
			return fmt.Errorf("append failure %+v, want ENOSPC", f)
		}
		if got := follower.KnownCommitIndex(); got < commit {
			return fmt.Errorf("follower knows commit index %d, leader's is %d", got, commit)
		}
		return nil
	})
	if own, applied := follower.CommitIndex(), follower.fsm.AppliedIndex(); own >= commit || applied >= commit {
		t.Fatalf("follower's own commit index %d, applied %d: want both below the leader's %d (its log takes nothing)", own, applied, commit)
	}
	if id, _ := follower.Leader(); id != leader.ID() {
		t.Fatalf("follower's leader %q, want %q: a failing log does not stop heartbeats", id, leader.ID())
	}
	failures := follower.AppendFailures()

	failing.Store(false)
	testkit.Eventually(t, 30*time.Second, func() error {
		if f := follower.AppendFailure(); f != nil {
			return fmt.Errorf("append failure %+v after space came back", f)
		}
		if got := follower.fsm.CountTasks(); got != 31 {
			return fmt.Errorf("follower has %d tasks, want 31", got)
		}
		return nil
	})
	if got := follower.AppendFailures(); got < failures {
		t.Fatalf("failed appends counted %d, then %d: the total only grows", failures, got)
	}
}
