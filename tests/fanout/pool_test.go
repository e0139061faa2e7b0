package fanout

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestExec_Pool: two tasks share a pool of one slot, written and read
// through a follower: with an executor free to run four attempts at
// once, their instances still run one at a time (the runs, logged by
// the scripts, never overlap), the waiting ones say so, and the pool is
// empty at the end (issue 24, pools).
func TestExec_Pool(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 120*time.Second)
	follower, _, err := c.Follower(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fc := client.New(client.Config{Addrs: []string{follower.HTTPAddr}})
	testkit.Eventually(t, 30*time.Second, func() error { // protocol 8
		return fc.Do(ctx, client.Request{Method: http.MethodPut, Path: "/v1/pools/db", Body: model.Pool{Slots: 1}}, nil)
	})
	ledger := filepath.Join(t.TempDir(), "ledger")
	script := `echo "start $(date +%s%N)" >> ` + ledger + `; sleep 0.3; echo "end $(date +%s%N)" >> ` + ledger
	for _, name := range []string{"a", "b"} {
		if _, err := fc.PutTask(ctx, shellTask(name, script, model.Policy{MaxConcurrency: 4, Pool: "db"})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.StartExecutor("wide", "-capacity", "4"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range []string{"a", "b", "a", "b"} {
		ids = append(ids, trigger(t, fc, name))
	}
	for _, id := range ids {
		agenttest.WaitState(t, fc, id, 60*time.Second, model.StateSuccess)
	}
	data, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ from, to int64 }
	var spans []span
	var open int64
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		v, _ := strconv.ParseInt(f[1], 10, 64)
		if f[0] == "start" {
			open = v
		} else {
			spans = append(spans, span{open, v})
		}
	}
	if len(spans) != 4 {
		t.Fatalf("ledger %q: want four runs, one after the other", data)
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	for i := 1; i < len(spans); i++ {
		if spans[i].from < spans[i-1].to {
			t.Errorf("runs %d and %d overlap: a pool of one slot ran two at once", i, i+1)
		}
	}
	blocked := 0
	for _, id := range ids {
		in, err := fc.GetInstance(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if hasEvent(in, "blocked", "pool db") {
			blocked++
		}
	}
	if blocked == 0 {
		t.Errorf("no instance waited for the pool")
	}
	var p model.Pool
	if err := fc.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/pools/db"}, &p); err != nil || p.Busy != 0 || p.Queued != 0 ||
		fmt.Sprint(p.Tasks) != "[a b]" {
		t.Errorf("pool at the end: %+v %v, want empty, used by a and b", p, err)
	}
}
