package replica

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/raftnode"
)

// TestRounds_Coalesce: callers that ask while a round is out share the
// next round, one fetch for all of them, and none is answered by the
// round that was out when it asked (its index could predate the call).
func TestRounds_Coalesce(t *testing.T) {
	var rs rounds
	var fetches atomic.Uint64
	release := make(chan struct{})
	fetch := func() (uint64, error) {
		n := fetches.Add(1)
		<-release
		return n, nil
	}
	ctx := context.Background()
	first := make(chan uint64, 1)
	go func() {
		v, _ := rs.get(ctx, fetch)
		first <- v
	}()
	testkit.Eventually(t, 5*time.Second, func() error {
		if fetches.Load() != 1 {
			return errors.New("round 1 not out yet")
		}
		return nil
	})
	const callers = 64
	got := make(chan uint64, callers)
	for i := 0; i < callers; i++ {
		go func() {
			v, err := rs.get(ctx, fetch)
			if err != nil {
				t.Error(err)
			}
			got <- v
		}()
	}
	testkit.Eventually(t, 5*time.Second, func() error {
		if n := rs.waiting(); n != callers {
			return errors.New("not every caller waits yet")
		}
		return nil
	})
	close(release)
	if v := <-first; v != 1 {
		t.Fatalf("first caller: round %d, want 1", v)
	}
	for i := 0; i < callers; i++ {
		if v := <-got; v != 2 {
			t.Fatalf("a caller that asked while round 1 was out got round %d, want 2", v)
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches for %d callers, want 2", n, callers+1)
	}
	// Idle again: the next caller starts a round of its own.
	if v, _ := rs.get(ctx, fetch); v != 3 {
		t.Fatalf("a later caller got round %d, want 3", v)
	}
}

// TestRounds_CallerGivesUp: a caller whose context ends is answered at
// once (a timeout); the round goes on for the others.
func TestRounds_CallerGivesUp(t *testing.T) {
	var rs rounds
	release := make(chan struct{})
	fetch := func() (uint64, error) { <-release; return 7, nil }
	ctx, cancel := context.WithCancel(context.Background())
	other := make(chan uint64, 1)
	go func() {
		v, _ := rs.get(context.Background(), fetch)
		other <- v
	}()
	cancel()
	if _, err := rs.get(ctx, fetch); !errors.Is(err, raftnode.ErrTimeout) {
		t.Fatalf("cancelled caller: %v, want raftnode.ErrTimeout", err)
	}
	close(release)
	if v := <-other; v != 7 {
		t.Fatalf("other caller got %d, want 7", v)
	}
}
