package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// TestAgent_JoinRefusesAnOlderProtocol: a node that speaks a lower
// protocol than the cluster has reached is refused before it is added
// (it could not apply what its peers do, and from protocol 6 none would
// talk to it); the old code added it as a voter, and a one-node cluster
// then waited for it to commit anything.
func TestAgent_JoinRefusesAnOlderProtocol(t *testing.T) {
	a := startAgent(t)
	testkit.Until(t, 10*time.Second, "the cluster at this protocol", func() bool { return a.fsm.Proto() == command.ProtoVersion })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.cl.Join(ctx, member.JoinRequest{ID: "old", RaftAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2", Proto: command.ProtoVersion - 1})
	var me *model.Error
	if !errors.As(err, &me) || me.Code != model.CodePrecondition {
		t.Fatalf("got %v, want failed_precondition", err)
	}
	servers, err := a.node.Servers(ctx)
	if err != nil || len(servers) != 1 {
		t.Fatalf("members %+v (%v), want this node alone", servers, err)
	}
}

// TestAgent_MemberKey: the key a node hands a joining one is the one its
// Raft connections use, kept 0600 in its data dir, and the one its leader
// recorded in the state machine.
func TestAgent_MemberKey(t *testing.T) {
	a := startAgent(t)
	testkit.Until(t, 10*time.Second, "a member key in the state machine", func() bool { return a.fsm.MemberKey() != nil })
	mk, err := a.cl.MemberKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !mk.Required || string(mk.Key) != string(a.fsm.MemberKey()) {
		t.Fatalf("handed out %+v, state machine key %x", mk, a.fsm.MemberKey())
	}
	fi, err := os.Stat(filepath.Join(a.cfg.DataDir, "raft", "member-key.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
}
