package raftnode

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// handlerTransport keeps the heartbeat handler it is given, as
// raft.NetworkTransport does.
type handlerTransport struct {
	raft.Transport
	handler func(raft.RPC)
}

func (h *handlerTransport) SetHeartbeatHandler(cb func(raft.RPC)) { h.handler = cb }

// fixedView is a Raft frozen in one role and term.
type fixedView struct {
	state raft.RaftState
	term  uint64
}

func (v fixedView) State() raft.RaftState { return v.state }
func (v fixedView) CurrentTerm() uint64   { return v.term }

// TestHeartbeatGate: only a heartbeat of a follower's current term takes
// Raft's fast path; one that would change the node's term or role (the
// deposed leader of hashicorp/raft#695 meeting its successor's heartbeat,
// a follower learning a newer term, a candidate) reaches Raft's main
// goroutine through Consumer, and is answered by it.
func TestHeartbeatGate(t *testing.T) {
	heartbeat := func(term uint64) any { return &raft.AppendEntriesRequest{Term: term} }
	for _, c := range []struct {
		name string
		view *fixedView // nil: Raft not running yet
		cmd  any
		fast bool
	}{
		{"follower, same term", &fixedView{raft.Follower, 5}, heartbeat(5), true},
		{"follower, newer term", &fixedView{raft.Follower, 5}, heartbeat(6), false},
		{"follower, older term", &fixedView{raft.Follower, 5}, heartbeat(4), false},
		{"deposed leader, newer term", &fixedView{raft.Leader, 5}, heartbeat(6), false},
		{"candidate, same term", &fixedView{raft.Candidate, 6}, heartbeat(6), false},
		{"raft not running", nil, heartbeat(5), false},
		{"not an append", &fixedView{raft.Follower, 5}, &raft.RequestVoteRequest{Term: 5}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			inner := &handlerTransport{Transport: plainTransport{}}
			tr, w := watchCommits(inner)
			defer w.stop()
			if c.view != nil {
				w.gate.setRaft(*c.view)
			}
			var fast []raft.RPC
			tr.SetHeartbeatHandler(func(rpc raft.RPC) { fast = append(fast, rpc) })
			if inner.handler == nil {
				t.Fatal("the wrapper installed no handler on the transport")
			}
			resp := make(chan raft.RPCResponse, 1)
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				inner.handler(raft.RPC{Command: c.cmd, RespChan: resp})
			}()
			if c.fast {
				<-sent
				if len(fast) != 1 {
					t.Fatalf("fast path called %d times, want once", len(fast))
				}
				return
			}
			select {
			case rpc := <-w.out: // what Raft's main goroutine reads (Consumer)
				if rpc.Command != c.cmd {
					t.Fatalf("the main goroutine got %#v, want the heartbeat", rpc.Command)
				}
				rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
			case <-time.After(5 * time.Second):
				t.Fatal("the heartbeat never reached the main goroutine")
			}
			<-sent
			if len(fast) != 0 {
				t.Fatal("the fast path was called too")
			}
			if r := <-resp; r.Error != nil {
				t.Fatalf("answer: %v", r.Error)
			}
		})
	}

	// A heartbeat waiting for the main goroutine when the node closes is
	// answered with an error, not left hanging.
	inner := &handlerTransport{Transport: plainTransport{}}
	tr, w := watchCommits(inner)
	tr.SetHeartbeatHandler(func(raft.RPC) { t.Error("fast path called before Raft runs") })
	resp := make(chan raft.RPCResponse, 1)
	go inner.handler(raft.RPC{Command: heartbeat(1), RespChan: resp})
	w.stop()
	select {
	case r := <-resp:
		if r.Error != raft.ErrTransportShutdown {
			t.Fatalf("answer after close: %v, want %v", r.Error, raft.ErrTransportShutdown)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a heartbeat pending at close was never answered")
	}
}
