package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
)

// RestoreTimeout bounds a restore into the running cluster, from the
// file received to every member told.
const RestoreTimeout = 10 * time.Minute

// Restore implements api.ClusterBackend: it writes body to a file in the
// data dir, checks its SHA-256 against sum (when given), and restores it
// as the cluster's state on the leader, this node or, through one
// forward, the leader. The restore is not repeated once it may have
// reached the leader.
func (c *Cluster) Restore(ctx context.Context, body io.Reader, sum string) (*fsm.StateInfo, error) {
	tmp, err := os.CreateTemp(c.cfg.DataDir, "restore-*.ax")
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("restore: receiving the file (%d bytes in): %w", n, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); sum != "" && got != sum {
		return nil, model.FieldErrorf("sha256", "the %d bytes received have SHA-256 %s, not %s: the file was changed or cut on the way", n, got, sum)
	}
	if _, err := fsm.InspectState(tmp.Name()); err != nil {
		return nil, model.FieldErrorf("snapshot", "%v", err)
	}
	c.log.Info("received a state to restore", "bytes", n)
	return replica.Ask(ctx, c.rep, replica.Call{Once: true, Deadline: time.Now().Add(RestoreTimeout)},
		func(ctx context.Context, _ *replica.Term) (*fsm.StateInfo, error) {
			return c.rep.RestoreState(ctx, tmp.Name())
		},
		func(ctx context.Context, cl *client.Client) (*fsm.StateInfo, error) {
			f, err := os.Open(tmp.Name())
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return cl.RestoreSnapshot(ctx, f)
		})
}
