package fsm

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// BenchmarkUpcoming measures GET /v1/upcoming as the agent answers it:
// every task read from the state machine (TaskSchedules), then the merge of
// their fire times (live.UpcomingFires). 1,000 every-minute cron tasks, a
// day ahead, limit 500.
func BenchmarkUpcoming(b *testing.B) {
	f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for i := range 1000 {
		tk := cronTask(fmt.Sprintf("task-%04d", i), "* * * * *")
		tk.Trigger.Timezone = "Europe/Berlin"
		c, err := NewCommand(CmdPutTask, "", "bench", PutTask{Task: tk})
		if err != nil {
			b.Fatal(err)
		}
		c.Now = t0
		out := f.ApplyBatch([]*raft.Log{{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: c.Encode()}})
		if r, ok := out[0].(*Result); ok && r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	from := time.UnixMilli(t0).Add(30 * time.Second)
	q := live.UpcomingQuery{From: from, To: from.Add(24 * time.Hour), Limit: 500}
	b.ReportAllocs()
	for b.Loop() {
		ts, err := f.TaskSchedules()
		if err != nil {
			b.Fatal(err)
		}
		tasks := make([]*model.Task, len(ts))
		for i := range ts {
			tasks[i] = &ts[i].Task
		}
		if u := live.UpcomingFires(tasks, q); len(u.Fires) != 500 || !u.Truncated {
			b.Fatalf("got %d fires", len(u.Fires))
		}
	}
}
