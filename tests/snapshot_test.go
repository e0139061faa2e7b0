package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/model"
)

// TestCluster_SnapshotSaveRestore (issue 26): `ax snapshot save` through
// a follower of a loaded three-node cluster, with ACLs (admin), writes a
// state file holding every acknowledged write, which `ax snapshot
// inspect` describes and `ax agent -restore` starts a fresh cluster from,
// with the same tasks and instances; a reader may not save one.
func TestCluster_SnapshotSaveRestore(t *testing.T) {
	c := startCluster(t, 3, withToken("s3cret-s3cret-s3cret"))
	ctx := ctxT(t, 120*time.Second)
	cl := c.Client()
	for i := 0; i < 50; i++ {
		if _, err := cl.PutTask(ctx, eventTask(fmt.Sprintf("t-%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	reqs := make([]model.SubmitRequest, 500)
	for i := range reqs {
		reqs[i] = model.SubmitRequest{Delay: model.Duration(time.Hour), Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	}
	if _, err := cl.SubmitBatch(ctx, "t-00", reqs); err != nil {
		t.Fatal(err)
	}
	last, err := cl.PutTask(ctx, eventTask("written-last"))
	if err != nil {
		t.Fatal(err)
	}
	follower, _, err := c.Follower(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "backup.ax")
	out, err := clustertest.AxOutput(t, axBinary, "snapshot", "save", "-addr", follower.HTTPAddr, "-token", "s3cret-s3cret-s3cret", file)
	if err != nil || !strings.HasPrefix(out, "saved "+file+": applied index ") || !strings.Contains(out, "sha256 ") {
		t.Fatalf("ax snapshot save: %v\n%s", err, out)
	}
	out, err = clustertest.AxOutput(t, axBinary, "snapshot", "inspect", file)
	if err != nil || !strings.Contains(out, "tasks          51\n") || !strings.Contains(out, "instances      500 (500 pending, 0 active)") {
		t.Fatalf("ax snapshot inspect: %v\n%s", err, out)
	}
	if _, err := clustertest.AxOutput(t, axBinary, "snapshot", "save", "-addr", follower.HTTPAddr, file+".2"); err == nil ||
		!strings.Contains(err.Error(), "missing token") {
		t.Errorf("a save without the token: %v", err)
	}
	c.Close()

	r := startCluster(t, 1, withFirstArgs("-restore", file), withToken("s3cret-s3cret-s3cret"))
	rcl := r.Client()
	got, err := rcl.GetTask(ctx, "written-last")
	if err != nil || got.Version != last.Version {
		t.Fatalf("the last write before the save, restored: %+v %v", got, err)
	}
	l, err := rcl.ListInstances(ctx, model.InstanceFilter{Task: "t-00", Limit: 1000})
	if err != nil || len(l.Instances) != 500 {
		t.Fatalf("restored instances: %d %v, want 500", len(l.Instances), err)
	}
}
