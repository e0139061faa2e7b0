package execution

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestExec_OverlapReplace: with overlap replace, a trigger through a
// follower while the task's one slot runs ends the running instance as
// TERMINATED ("replaced by" the new one), its process is stopped, and the
// new instance runs to SUCCESS.
func TestExec_OverlapReplace(t *testing.T) {
	c, _ := execCluster(t)
	ctx := ctxT(t, 90*time.Second)
	follower, _, err := c.Follower(ctx, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cl := client.New(client.Config{Addrs: []string{follower.HTTPAddr}})
	dir := t.TempDir()
	first, pidfile := filepath.Join(dir, "first"), filepath.Join(dir, "pid")
	script := "if [ -e " + first + " ]; then echo second; exit 0; fi; touch " + first + "; echo $$ > " + pidfile + "; exec sleep 60"
	if _, err := cl.PutTask(ctx, shellTask("syncer", script, model.Policy{Overlap: model.OverlapReplace})); err != nil {
		t.Fatal(err)
	}
	old := trigger(t, cl, "syncer")
	var pid int
	testkit.Eventually(t, 30*time.Second, func() error {
		b, err := os.ReadFile(pidfile)
		if err == nil {
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return err
	})
	replacing := trigger(t, cl, "syncer")
	in := agenttest.WaitState(t, cl, old, 10*time.Second, model.StateTerminated)
	want := "replaced by " + replacing
	if last := in.AttemptList[len(in.AttemptList)-1]; last.Outcome != model.OutcomeTerminated || !strings.Contains(last.Error, want) {
		t.Fatalf("replaced instance's attempt %+v, want terminated %q", last, want)
	}
	if !hasEvent(in, "replaced", want) {
		t.Fatalf("replaced instance's events %+v, want a replaced event", in.Events)
	}
	agenttest.WaitState(t, cl, replacing, 30*time.Second, model.StateSuccess)
	testkit.Eventually(t, 30*time.Second, func() error {
		if !procGone(pid) {
			return fmt.Errorf("the replaced attempt's sleep (pid %d) still runs", pid)
		}
		return nil
	})
	l, err := cl.InstanceLog(ctx, replacing, 0)
	if err != nil || l.Output != "second\n" {
		t.Fatalf("the replacing instance's log %+v %v, want its own run", l, err)
	}
}
