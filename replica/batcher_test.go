package replica

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/hashicorp/go-hclog"
)

func TestGroupFits(t *testing.T) {
	cmd := func(body, ids int) *pendingCmd {
		return &pendingCmd{cmd: &command.Command{Body: make([]byte, body)}, ids: ids}
	}
	maxIDs := fsm.MaxEntryInstances()
	cases := []struct {
		name string
		have []*pendingCmd
		next *pendingCmd
		want bool
	}{
		{"empty takes anything", nil, cmd(2*maxBatchBytes, 2*maxIDs), true},
		{"small", []*pendingCmd{cmd(10, 1)}, cmd(10, 1), true},
		{"bytes at the limit", []*pendingCmd{cmd(maxBatchBytes-10, 0)}, cmd(10, 0), true},
		{"bytes over", []*pendingCmd{cmd(maxBatchBytes-10, 0)}, cmd(11, 0), false},
		{"instances at the limit", []*pendingCmd{cmd(10, maxIDs-10_000)}, cmd(10, 10_000), true},
		{"instances over", []*pendingCmd{cmd(10, maxIDs-9_999)}, cmd(10, 10_000), false},
		{"commands over", func() []*pendingCmd {
			var cs []*pendingCmd
			for range maxBatchCmds {
				cs = append(cs, cmd(1, 0))
			}
			return cs
		}(), cmd(1, 0), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var g group
			for _, p := range tc.have {
				g.add(p)
			}
			if got := g.fits(tc.next); got != tc.want {
				t.Fatalf("fits = %v, want %v (group: %d commands, %d bytes, %d instances)", got, tc.want, len(g.cmds), g.bytes, g.ids)
			}
		})
	}
}

// fakeFuture is a proposal the test answers.
type fakeFuture struct {
	data []byte
	done chan struct{}
}

func (f *fakeFuture) Wait() (any, error) {
	<-f.done
	return &fsm.Result{}, nil
}

// TestBatcher_TermEndsQueue: the group commit is the term's. Commands
// queued behind a proposal in flight when the term ends are answered
// raftnode.ErrNotLeader (not proposed: the caller tries the next leader)
// and never proposed afterwards, even once the proposal in flight
// commits; the one in flight gets its outcome; the term's end waits for
// it; a command submitted after the end is refused at once.
func TestBatcher_TermEndsQueue(t *testing.T) {
	r := &Replica{cfg: Config{NodeID: "n1"}, stamper: &stamper{now: time.Now, hwm: func() int64 { return 0 }, log: hclog.NewNullLogger()}}
	proposed := make(chan *fakeFuture, 16)
	b := newBatcher(r, func(data []byte) *fakeFuture {
		f := &fakeFuture{data: data, done: make(chan struct{})}
		proposed <- f
		return f
	})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = b.run(ctx) }()
	cmd := func() *command.Command { return &command.Command{Type: command.TypeNoop} }
	type answer struct{ err error }
	submit := func() <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			_, err := b.submit(context.Background(), cmd())
			ch <- answer{err}
		}()
		return ch
	}
	first := submit()
	var inFlight *fakeFuture
	select {
	case inFlight = <-proposed:
	case <-time.After(5 * time.Second):
		t.Fatal("the first command was not proposed")
	}
	var queued []chan cmdOutcome
	for range 3 {
		p := &pendingCmd{cmd: cmd(), done: make(chan cmdOutcome, 1)}
		b.queue <- p
		queued = append(queued, p.done)
	}
	testkit.Until(t, 5*time.Second, "the group commit to take the queued commands", func() bool { return len(b.queue) == 0 })
	cancel() // the term ends while one proposal is in flight
	select {
	case <-ran:
		t.Fatal("the group commit returned before its proposal in flight had its outcome")
	case <-time.After(50 * time.Millisecond):
	}
	close(inFlight.done)
	var late atomic.Int32 // proposals after the term ended
	go func() {
		for f := range proposed {
			late.Add(1)
			close(f.done)
		}
	}()
	<-ran
	if a := <-first; a.err != nil {
		t.Fatalf("the proposal in flight: %v, want its outcome", a.err)
	}
	for i, ch := range queued {
		if a := <-ch; !errors.Is(a.err, raftnode.ErrNotLeader) {
			t.Fatalf("queued command %d: %v, want raftnode.ErrNotLeader (not proposed)", i, a.err)
		}
	}
	if _, err := b.submit(context.Background(), cmd()); !errors.Is(err, raftnode.ErrNotLeader) {
		t.Fatalf("a command after the term: %v, want raftnode.ErrNotLeader", err)
	}
	if n := late.Load(); n != 0 {
		t.Fatalf("%d entries proposed after the term ended", n)
	}
}
