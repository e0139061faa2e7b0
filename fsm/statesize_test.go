package fsm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// TestFSM_StateBytes: a pending delayed instance (a submission of a
// small payload, as a delay queue makes) costs at most maxPendingBytes of
// state file. Keys appended in order filled bbolt's pages only half
// (its default FillPercent): 234 bytes each, against 138 at 90% fill.
// The per-bucket figures it logs are what docs/performance.md quotes.
func TestFSM_StateBytes(t *testing.T) {
	const maxPendingBytes = 160
	f := openTest(t, filepath.Join(t.TempDir(), "fsm.db"), true)
	idx := uint64(0)
	apply := func(c *Command) {
		idx++
		f.ApplyBatch([]*raft.Log{{Index: idx, Term: 1, Type: raft.LogCommand, Data: c.Encode()}})
	}
	apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: ProtoVersion}))
	apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: wideTask("q")}))
	payload := json.RawMessage(`{"order":12345678}`)
	const entries, per = 100, 1000
	for i := 0; i < entries; i++ {
		items := make([]SubmitItem, per)
		for j := range items {
			items[j] = SubmitItem{Payload: payload, DelayMs: 86_400_000}
		}
		c := submitCmd(t, "q", t0+int64(i)*10, items...)
		c.ReqID = fmt.Sprintf("req-%d", i)
		apply(c)
	}
	if f.Pending() != entries*per {
		t.Fatalf("pending %d, want %d", f.Pending(), entries*per)
	}
	path := f.cfg.Path
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := float64(entries * per)
	_ = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if s := b.Stats(); s.KeyN > entries {
				t.Logf("%-16s %7d keys, %5.1f bytes in use and %5.1f allocated per pending instance", name, s.KeyN,
					float64(s.LeafInuse+s.BranchInuse)/n, float64(s.LeafAlloc+s.BranchAlloc)/n)
			}
			return nil
		})
	})
	per1 := float64(st.Size()) / n
	t.Logf("state file %d bytes: %.1f bytes per pending instance", st.Size(), per1)
	if per1 > maxPendingBytes {
		t.Errorf("%.1f bytes of state per pending instance, want at most %d", per1, maxPendingBytes)
	}
}
