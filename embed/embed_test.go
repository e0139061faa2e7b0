package embed_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/embed"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

// TestStart: a node embedded in this process, started with ax agent's
// flags, runs this process's handler for its task; a handler added once
// it runs is used too; Close stops it. Bad flags are refused as ax agent
// refuses them.
func TestStart(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	if _, err := embed.Start(ctx, embed.Config{Args: []string{"-no-such-flag"}, LogOutput: io.Discard}); err == nil ||
		!strings.Contains(err.Error(), "no-such-flag") {
		t.Fatalf("a bad flag: %v", err)
	}
	ran := make(chan string, 4)
	node, err := embed.Start(ctx, embed.Config{LogOutput: io.Discard,
		Args:     []string{"-node", "e1", "-data", t.TempDir(), "-http", "127.0.0.1:0", "-raft", testkit.FreeAddr(t)},
		Handlers: map[string]worker.Handler{"first": func(ctx context.Context, job worker.Job) error { ran <- "first " + job.Task; return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close(context.Background())
	if err := node.Handle("second", func(ctx context.Context, job worker.Job) error { ran <- "second " + job.Task; return nil }); err != nil {
		t.Fatal(err)
	}
	cl := node.Client()
	for _, h := range []string{"first", "second"} {
		task := &model.Task{Name: "t-" + h, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionSDK, Handler: h}}
		testkit.Eventually(t, 30*time.Second, func() error { _, err := cl.PutTask(ctx, task); return err })
		if _, err := cl.Trigger(ctx, task.Name, model.TriggerRequest{}); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-ran:
			if got != h+" t-"+h {
				t.Errorf("ran %q, want handler %s for task t-%s", got, h, h)
			}
		case <-ctx.Done():
			t.Fatalf("handler %s never ran", h)
		}
	}
	if err := node.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := node.Handle("third", func(context.Context, worker.Job) error { return nil }); err == nil {
		t.Error("Handle after Close was accepted")
	}
}
