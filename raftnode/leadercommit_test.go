package raftnode

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// plainTransport hides every optional interface of the transport it
// wraps (pre-vote, close).
type plainTransport struct{ raft.Transport }

// TestWatchCommits_Transport: Raft asks the transport it is given whether
// it supports pre-vote, so the wrapper claims it only over a transport
// that does; every AppendEntries request reaches Raft unchanged and the
// highest commit index among them is kept (a lower one, from a request
// that arrives late, does not lower it).
func TestWatchCommits_Transport(t *testing.T) {
	_, inmem := raft.NewInmemTransport("a")
	_, peer := raft.NewInmemTransport("b")
	inmem.Connect("b", peer)
	peer.Connect("a", inmem)
	for _, c := range []struct {
		name    string
		inner   raft.Transport
		prevote bool
	}{
		{"in-memory", inmem, true},
		{"without pre-vote", plainTransport{inmem}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, _ := watchCommits(c.inner)
			if _, ok := tr.(raft.WithPreVote); ok != c.prevote {
				t.Errorf("wrapper supports pre-vote: %v, want %v", ok, c.prevote)
			}
		})
	}

	tr, w := watchCommits(inmem)
	defer tr.(raft.WithClose).Close()
	rpcs := tr.Consumer()
	for _, commit := range []uint64{5, 9, 7} {
		done := make(chan error, 1)
		go func() {
			var resp raft.AppendEntriesResponse
			done <- peer.AppendEntries("a", "a", &raft.AppendEntriesRequest{Term: 1, LeaderCommitIndex: commit}, &resp)
		}()
		select {
		case rpc := <-rpcs:
			if got := rpc.Command.(*raft.AppendEntriesRequest).LeaderCommitIndex; got != commit {
				t.Fatalf("Raft got commit index %d, want %d", got, commit)
			}
			rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
		case <-time.After(5 * time.Second):
			t.Fatal("the request never reached the consumer")
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := w.leaderCommit.Load(); got != 9 {
		t.Fatalf("kept commit index %d, want the highest seen, 9", got)
	}
}
