package raftnode

import (
	"errors"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestApplyAsync_WaitReturnsAfterClose: a proposal still queued when the
// node closes is answered ErrShutdown, never left waiting. hashicorp/raft
// (with BatchApplyCh) answers neither the proposals in its apply queue at
// shutdown nor those that arrive afterwards; a leader's term services
// waiting on one then kept an agent's Shutdown from returning
// (hashicorp/raft#498).
func TestApplyAsync_WaitReturnsAfterClose(t *testing.T) {
	nodes := startCluster(t, 1)
	n := nodes[0]
	c, err := command.New(command.TypePutTask, "", "test", command.PutTask{Task: model.Task{
		Name: "queued", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionShell, Command: "true"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.Now = time.Now().UnixMilli()
	data := c.Encode()
	// Keep proposing from another goroutine while the node closes, so that
	// some proposals sit in raft's apply queue at shutdown.
	futures := make(chan *ApplyFuture, 100000)
	go func() {
		defer close(futures)
		for range 20000 {
			futures <- n.ApplyAsync(data)
		}
	}()
	testkit.Until(t, 10*time.Second, "proposals in flight", func() bool { return len(futures) >= 1000 })
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	var all []*ApplyFuture
	for f := range futures {
		all = append(all, f)
	}
	errs := make(chan error, len(all))
	for _, f := range all {
		go func() { _, err := f.Wait(); errs <- err }()
	}
	shutdown := 0
	deadline := time.After(20 * time.Second)
	for i := range all {
		select {
		case err := <-errs:
			if errors.Is(err, ErrShutdown) {
				shutdown++
			}
		case <-deadline:
			t.Fatalf("%d of %d proposals made around Close still wait after 20s", len(all)-i, len(all))
		}
	}
	t.Logf("%d proposals answered, %d with ErrShutdown", len(all), shutdown)
}
