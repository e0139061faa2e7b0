package fsm

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
)

// BenchmarkApplySubmit measures the state machine's cost per delayed
// submission (ns/op; NoSync bbolt, as the agent runs it) by how the
// submissions arrive: single commands with request ids grouped N to a Raft
// entry (group commit), or one array of 1,000. pages/tx and nodes/tx are
// bbolt's pages written and nodes materialized per entry: the fixed cost
// of a transaction that grouping spreads.
func BenchmarkApplySubmit(b *testing.B) {
	payload := []byte(`{"order":123456,"action":"close"}`)
	for _, tc := range []struct {
		name      string
		group     int // single commands per entry
		arraySize int
	}{
		{"single/group=1", 1, 1},
		{"single/group=16", 16, 1},
		{"single/group=64", 64, 1},
		{"single/group=256", 256, 1},
		{"array=1000", 1, 1000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			index := uint64(0)
			apply := func(c *Command) {
				index++
				out := f.ApplyBatch([]*raft.Log{{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}})
				if r, ok := out[0].(*Result); ok && r.Err != nil {
					b.Fatal(r.Err)
				}
			}
			now := t0
			tk, err := NewCommand(CmdPutTask, "task", "bench", PutTask{Task: wideTask("t")})
			if err != nil {
				b.Fatal(err)
			}
			tk.Now = now
			apply(tk)
			items := make([]SubmitItem, tc.arraySize)
			for i := range items {
				items[i] = SubmitItem{Payload: payload, DelayMs: 3600_000}
			}
			body := EncodeSubmit(&Submit{Task: "t", Items: items})
			per := tc.group * tc.arraySize
			b.ResetTimer()
			stopCPU := cpuTimer(b)
			seq := 0
			for done := 0; done < b.N; done += per {
				now++
				cmds := make([]*Command, tc.group)
				for i := range cmds {
					seq++
					cmds[i] = &Command{Type: CmdSubmit, ReqID: "req-" + strconv.Itoa(seq), Actor: "bench", Body: body}
				}
				if tc.group == 1 {
					cmds[0].Now, cmds[0].Node = now, "n1"
					apply(cmds[0])
				} else {
					apply(EncodeBatch(now, "n1", cmds))
				}
			}
			stopCPU()
			st := f.db.Stats()
			b.ReportMetric(float64(st.TxStats.GetWrite())/float64(index), "pages/tx")
			b.ReportMetric(float64(st.TxStats.GetNodeCount())/float64(index), "nodes/tx")
		})
	}
}
