package view

import (
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// TestShardGrid: one mark per shard by state, 50 a row with the first
// index, then the shards that did not succeed (every shard with all).
func TestShardGrid(t *testing.T) {
	l := &model.ShardList{Instance: "p", Summary: &model.ShardSummary{Total: 52, ByState: map[string]int{"SUCCESS": 50, "FAILED": 1, "RUNNING": 1}}}
	for i := 0; i < 52; i++ {
		s := model.Instance{ID: model.FormatID(uint64(100 + i)), State: model.StateSuccess, Shard: &model.ShardRef{Index: i, Total: 52}}
		switch i {
		case 7:
			s.State, s.LastError, s.Attempts = model.StateFailed, "exit status 3", 2
		case 51:
			s.State, s.Executor = model.StateRunning, "e4"
		}
		l.Shards = append(l.Shards, s)
	}
	var b strings.Builder
	if err := ShardGrid(&b, l, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Instance p: 52: 1 FAILED, 1 RUNNING, 50 SUCCESS shards\n",
		"   0  #######X" + strings.Repeat("#", 42) + "\n",
		"  50  #>\n",
		"exit status 3",
		"e4",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Count(out, "SUCCESS") != 2 { // the summary and the legend: no row
		t.Errorf("successful shards listed without -all:\n%s", out)
	}
	b.Reset()
	ShardGrid(&b, l, true)
	if n := strings.Count(b.String(), "\n"); n < 52+5 {
		t.Errorf("-all printed %d lines", n)
	}
}
