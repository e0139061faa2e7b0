package tests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
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

// TestCluster_SnapshotRestoreRunning: on a TLS cluster with ACLs, ax
// snapshot save, inspect and restore (the CLI with -ca-cert and a token,
// over HTTPS) make a saved state the state of the running cluster,
// through a follower: what was
// written after the save is gone on every node, what was saved is back,
// the leader's services start again from it (an interval task fires
// after the restore, once per fire time), and writes go on. The same
// file restored into a fresh three-node cluster gives the saved state,
// with the saved ACL tokens in force there. A file that is not a state is
// refused naming it; a restore without the admin token is refused.
func TestCluster_SnapshotRestoreRunning(t *testing.T) {
	const token, other = "s3cret-s3cret-s3cret", "other-other-other-1"
	tlsDir := t.TempDir()
	c := startCluster(t, 3, withToken(token), clustertest.WithTLS(tlsDir))
	// The CLI as an operator runs it: it trusts the cluster's CA, and the
	// token is its credential (no client certificate).
	https := []string{"-ca-cert", localcluster.CAFile(tlsDir), "-token", token}
	ctx := ctxT(t, 180*time.Second)
	cl := c.Client()
	if _, err := c.StartExecutor("w1"); err != nil {
		t.Fatal(err)
	}
	saver, err := cl.ACLBootstrap(ctx) // an ACL token in the saved state
	if err != nil {
		t.Fatal(err)
	}
	tick := &model.Task{Name: "tick", Trigger: model.Trigger{Type: model.TriggerInterval, Every: model.Duration(time.Second)},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1000}}
	if _, err := cl.PutTask(ctx, tick); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := cl.PutTask(ctx, eventTask(fmt.Sprintf("t-%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	reqs := make([]model.SubmitRequest, 200)
	for i := range reqs {
		reqs[i] = model.SubmitRequest{Delay: model.Duration(time.Hour), Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	}
	if _, err := cl.SubmitBatch(ctx, "t-00", reqs); err != nil {
		t.Fatal(err)
	}
	follower, _, err := c.Follower(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "backup.ax")
	if out, err := clustertest.AxOutput(t, axBinary, append([]string{"snapshot", "save", "-addr", follower.HTTPAddr}, append(https, file)...)...); err != nil ||
		!strings.HasPrefix(out, "saved "+file+": applied index ") {
		t.Fatalf("ax snapshot save over https: %v\n%s", err, out)
	}
	saved, err := fsm.InspectState(file)
	if err != nil {
		t.Fatal(err)
	}
	// (The interval task's instances come and go: the tasks and the
	// index say it is the saved file.)
	if out, err := clustertest.AxOutput(t, axBinary, "snapshot", "inspect", file); err != nil || !strings.Contains(out, "tasks          21\n") ||
		!strings.Contains(out, fmt.Sprintf("applied index  %d\n", saved.Index)) {
		t.Fatalf("ax snapshot inspect: %v\n%s", err, out)
	}
	savedTasks, err := cl.ListTasks(ctx, model.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}

	// Written after the save: gone once restored.
	if _, err := cl.PutTask(ctx, eventTask("after-save")); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteTask(ctx, "t-01"); err != nil {
		t.Fatal(err)
	}

	if _, err := clustertest.AxOutput(t, axBinary, "snapshot", "restore", "-addr", follower.HTTPAddr, "-ca-cert", localcluster.CAFile(tlsDir), file); err == nil ||
		!strings.Contains(err.Error(), "missing token") {
		t.Errorf("a restore without the token: %v", err)
	}
	junk := filepath.Join(t.TempDir(), "junk.ax")
	if err := os.WriteFile(junk, []byte(strings.Repeat("junk", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}
	jf, err := os.Open(junk)
	if err != nil {
		t.Fatal(err)
	}
	defer jf.Close()
	var me *model.Error
	if _, err := follower.Client().RestoreSnapshot(ctx, jf); !errors.As(err, &me) || me.Field != "snapshot" || me.Code != model.CodeInvalid {
		t.Errorf("a file that is not a state, sent: %v", err)
	}

	restoredAt := time.Now()
	out, err := clustertest.AxOutput(t, axBinary, append([]string{"snapshot", "restore", "-addr", follower.HTTPAddr}, append(https, file)...)...)
	want := fmt.Sprintf("restored %s: saved at applied index %d; 21 tasks, ", file, saved.Index)
	if err != nil || !strings.HasPrefix(out, want) {
		t.Fatalf("ax snapshot restore: %v\n%s\nwant it to start %q", err, out, want)
	}
	t.Logf("restored in %s: %s", time.Since(restoredAt).Round(time.Millisecond), strings.TrimSpace(out))
	for _, n := range c.Nodes {
		ncl := n.Client()
		if _, err := ncl.GetTask(ctx, "after-save"); !errors.Is(err, model.ErrNotFound) {
			t.Errorf("node %s: a task written after the save: %v", n.ID, err)
		}
		if _, err := ncl.GetTask(ctx, "t-01"); err != nil {
			t.Errorf("node %s: a task deleted after the save: %v", n.ID, err)
		}
		l, err := ncl.ListInstances(ctx, model.InstanceFilter{Task: "t-00", Limit: 1000})
		if err != nil || len(l.Instances) != 200 {
			t.Errorf("node %s: %d instances of t-00 (%v), want 200", n.ID, len(l.Instances), err)
		}
	}
	// The leader's services run from the restored state: the interval
	// task fires after the restore, one instance per fire time.
	testkit.Eventually(t, 30*time.Second, func() error {
		l, err := cl.ListInstances(ctx, model.InstanceFilter{Task: "tick", State: model.StateSuccess, Limit: 1000})
		if err != nil {
			return err
		}
		for _, in := range l.Instances {
			if in.ScheduledAt.After(restoredAt.Add(2 * time.Second)) {
				return nil
			}
		}
		return fmt.Errorf("no successful fire of tick scheduled after the restore among %d", len(l.Instances))
	})
	l, err := cl.ListInstances(ctx, model.InstanceFilter{Task: "tick", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[time.Time]string{}
	for _, in := range l.Instances {
		if prev, dup := seen[in.ScheduledAt.Time]; dup {
			t.Errorf("tick: instances %s and %s for one fire time %s", prev, in.ID, in.ScheduledAt)
		}
		seen[in.ScheduledAt.Time] = in.ID
	}
	// Writes go on, and are read back through every node.
	if _, err := cl.PutTask(ctx, eventTask("after-restore")); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if _, err := n.Client().GetTask(ctx, "after-restore"); err != nil {
			t.Errorf("node %s: a write after the restore: %v", n.ID, err)
		}
	}

	// A fresh cluster with ACLs of its own: restored from the file, it
	// holds the saved tasks, and the saved ACL tokens are the ones in
	// force there (its -token, configuration, stays).
	fresh := startCluster(t, 3, withToken(other))
	ff, _, err := fresh.Follower(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	own, err := fresh.Client().ACLBootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := clustertest.AxOutput(t, axBinary, "snapshot", "restore", "-addr", ff.HTTPAddr, "-token", own.Secret, file); err != nil {
		t.Fatalf("restore into a fresh cluster: %v\n%s", err, out)
	}
	ownCfg := fresh.ClientConfig()
	ownCfg.Token = own.Secret
	if _, err := client.New(ownCfg).ListTasks(ctx, model.TaskFilter{}); !errors.Is(err, model.ErrUnauthorized) {
		t.Errorf("the fresh cluster's own ACL token after the restore: %v, want refused", err)
	}
	cfg := fresh.ClientConfig()
	cfg.Token = saver.Secret
	got, err := client.New(cfg).ListTasks(ctx, model.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tasks) != len(savedTasks.Tasks) {
		t.Fatalf("the fresh cluster holds %d tasks, the saved state %d", len(got.Tasks), len(savedTasks.Tasks))
	}
	for i, tk := range got.Tasks {
		if s := savedTasks.Tasks[i]; tk.Name != s.Name || tk.Version != s.Version {
			t.Errorf("task %d: %s v%d, saved %s v%d", i, tk.Name, tk.Version, s.Name, s.Version)
		}
	}
}
