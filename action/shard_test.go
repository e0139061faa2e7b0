package action

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// TestRunner_Run_shard: a shard's attempt knows its place: shell actions
// in AX_SHARD_INDEX, AX_SHARD_TOTAL and AX_PARENT_ID and in templates,
// HTTP actions in X-AX-Shard; an instance that is not a shard gets none.
func TestRunner_Run_shard(t *testing.T) {
	job := shellJob(`echo "$AX_SHARD_INDEX/$AX_SHARD_TOTAL $AX_PARENT_ID {{.Shard.Index}} of {{.Shard.Total}}"`)
	job.Shard, job.Parent = &model.ShardRef{Index: 3, Total: 10}, "p1"
	if got := (&Runner{}).Run(context.Background(), job, nil); !got.Success || string(got.Output) != "3/10 p1 3 of 10\n" {
		t.Errorf("shard: %+v %q", got.Success, got.Output)
	}
	plain := shellJob(`echo "[${AX_SHARD_INDEX-unset}] {{.Shard.Total}}"`)
	if got := (&Runner{}).Run(context.Background(), plain, nil); string(got.Output) != "[unset] 0\n" {
		t.Errorf("not a shard: %q", got.Output)
	}

	seen := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen <- r.Header.Get(ShardHeader) }))
	defer srv.Close()
	hj := httpJob(srv.URL)
	hj.Shard = &model.ShardRef{Index: 0, Total: 2}
	if got := (&Runner{}).Run(context.Background(), hj, nil); !got.Success {
		t.Fatalf("http: %+v", got)
	}
	if h := <-seen; h != "0/2" {
		t.Errorf("%s: %q, want 0/2", ShardHeader, h)
	}
	(&Runner{}).Run(context.Background(), httpJob(srv.URL), nil)
	if h := <-seen; h != "" {
		t.Errorf("%s on an instance that is not a shard: %q", ShardHeader, h)
	}
}
