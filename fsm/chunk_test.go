package fsm

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
)

func TestChunkLen(t *testing.T) {
	logOf := func(sizes ...int) []*raft.Log {
		var out []*raft.Log
		for _, s := range sizes {
			out = append(out, &raft.Log{Data: make([]byte, s)})
		}
		return out
	}
	const m = maxTxBytes
	for _, c := range []struct {
		name  string
		sizes []int
		want  int
	}{
		{"small entries", []int{10, 20, 30}, 3},
		{"one huge entry alone", []int{3 * m}, 1},
		{"a huge first entry is applied alone", []int{3 * m, 10}, 1},
		{"cut before the entry that passes the bound", []int{m / 2, m / 2, 1, 5}, 2},
		{"exactly at the bound", []int{m / 2, m / 2}, 2},
		{"no data", []int{0, 0, 0}, 3},
	} {
		if got := chunkLen(logOf(c.sizes...)); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestFSM_ApplyBatchChunked: a batch of more than maxTxBytes of entries,
// as a node catching up gets, is applied in several transactions, and
// gives the same answers and state as the same entries one by one.
func TestFSM_ApplyBatchChunked(t *testing.T) {
	var entries []*raft.Log
	add := func(c *Command) {
		entries = append(entries, &raft.Log{Index: uint64(len(entries) + 1), Term: 1, Type: raft.LogCommand, Data: c.Encode()})
	}
	add(cmd(t, CmdPutTask, "", t0, PutTask{Task: wideTask("q")}))
	payload := json.RawMessage(`"` + strings.Repeat("x", 200) + `"`)
	size := 0
	for i := 0; size < 3*maxTxBytes; i++ {
		items := make([]SubmitItem, 500)
		for j := range items {
			items[j] = SubmitItem{Payload: payload, DelayMs: int64(1000 + j)}
		}
		c := submitCmd(t, "q", t0+int64(i), items...)
		c.ReqID = fmt.Sprintf("r%d", i)
		add(c)
		size += len(entries[len(entries)-1].Data)
	}
	whole := openTest(t, filepath.Join(t.TempDir(), "fsm.db"), true)
	txs := map[*bolt.Tx]bool{}
	whole.applyHook = func(tx *bolt.Tx, _ *command.Command) { txs[tx] = true }
	answers := whole.ApplyBatch(entries)
	if len(txs) < 3 {
		t.Errorf("%d entries, %d bytes applied in %d transactions, want at least 3", len(entries), size, len(txs))
	}
	one := openTest(t, filepath.Join(t.TempDir(), "fsm.db"), true)
	for i, e := range entries {
		a, b := mustJSON(t, one.ApplyBatch([]*raft.Log{e})[0]), mustJSON(t, answers[i])
		if a != b {
			t.Fatalf("entry %d answered %s alone, %s in the batch", i+1, a, b)
		}
	}
	if da, db := dump(t, whole), dump(t, one); da != db {
		t.Fatalf("states differ:\n%s", diffLines(da, db))
	}
	if whole.AppliedIndex() != uint64(len(entries)) || whole.Pending() != one.Pending() || one.Pending() == 0 {
		t.Errorf("applied %d of %d, pending %d and %d", whole.AppliedIndex(), len(entries), whole.Pending(), one.Pending())
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
