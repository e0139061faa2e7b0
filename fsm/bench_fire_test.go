package fsm

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// BenchmarkApplyFire measures the state machine's cost per task fire
// (ns/op is one fire; a command fires 1,000 tasks at once), plain and
// with every task naming a calendar of 60 excluded days and matched by
// two blackout windows not in force: the cost of the checks fire adds
// for them (issue 23's A/B, in one process).
func BenchmarkApplyFire(b *testing.B) {
	const tasks = 1000
	for _, defs := range []bool{false, true} {
		b.Run(fmt.Sprintf("calendars=%v", defs), func(b *testing.B) {
			f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			index, now := uint64(0), t0
			apply := func(typ CommandType, body any) {
				c, err := NewCommand(typ, "", "bench", body)
				if err != nil {
					b.Fatal(err)
				}
				index++
				now += 10
				c.Now = now
				out := f.ApplyBatch([]*raft.Log{{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}})
				if r, ok := out[0].(*Result); ok && r.Err != nil {
					b.Fatal(r.Err)
				}
			}
			apply(CmdSetProto, SetProto{Proto: ProtoVersion})
			tr := model.Trigger{Type: model.TriggerCron, Expression: "* * * * * *"}
			labels := map[string]string{"bench": "cron"}
			if defs {
				var days []string
				for d := 2; len(days) < 60; d += 3 {
					days = append(days, time.UnixMilli(t0).UTC().AddDate(0, 0, d).Format(time.DateOnly))
				}
				apply(CmdPutCalendar, PutCalendar{Calendar: calendar.Calendar{Name: "hol", Exclude: days}})
				apply(CmdPutWindow, PutWindow{Window: calendar.Window{Name: "w1", Cron: "0 3 * * *", Duration: model.Duration(time.Hour), Selector: labels}})
				apply(CmdPutWindow, PutWindow{Window: calendar.Window{Name: "w2", Ranges: []string{"2027-01-01"}, Selector: labels}})
				tr.Calendars = []string{"hol"}
			}
			for i := range tasks {
				apply(CmdPutTask, PutTask{Task: model.Task{Name: fmt.Sprintf("t%04d", i), Trigger: tr, Labels: labels,
					Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1_000_000}}})
			}
			fire := Fire{Tasks: make([]TaskFire, tasks)}
			at := t0 + 60_000
			b.ResetTimer()
			for done := 0; done < b.N; done += tasks {
				at += 1000
				for i := range fire.Tasks {
					name := fmt.Sprintf("t%04d", i)
					fire.Tasks[i] = TaskFire{Task: name, Version: 1, At: at, Key: name + "@" + fmt.Sprint(at)}
				}
				apply(CmdFire, fire)
			}
		})
	}
}
