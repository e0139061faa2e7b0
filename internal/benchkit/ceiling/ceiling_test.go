package ceiling

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/benchkit/scale"
	"github.com/ax-scheduler/ax/internal/localcluster"
)

func TestDueLog(t *testing.T) {
	var d dueLog
	t0 := time.Unix(1000, 0)
	d.add(t0, 10)
	d.add(t0.Add(time.Second), 5)
	for _, tt := range []struct {
		at   time.Time
		want int64
	}{
		{t0.Add(-time.Millisecond), 0},
		{t0, 10},
		{t0.Add(999 * time.Millisecond), 10},
		{t0.Add(time.Second), 15},
	} {
		if got := d.by(tt.at); got != tt.want {
			t.Errorf("by(%s) = %d, want %d", tt.at.Sub(t0), got, tt.want)
		}
	}
}

func TestProcFigures(t *testing.T) {
	pid := os.Getpid()
	if ticks := cpuTicks(pid); ticks < 0 {
		t.Errorf("cpuTicks(self) = %d", ticks)
	}
	if fds := countFDs(pid); fds < 3 {
		t.Errorf("countFDs(self) = %d, want at least stdin, stdout, stderr", fds)
	}
	if cpuTicks(-1) != -1 || countFDs(-1) != -1 {
		t.Error("an unknown process should read as -1")
	}
	ps := []Proc{{Name: "n1", Cores: 0.5}, {Name: "n2*", Cores: 0.25}}
	if got := cores(ps); got != "n1 0.50 / n2* 0.25 (Σ 0.75)" {
		t.Errorf("cores = %q", got)
	}
	if got := leaderProc(ps).Name; got != "n2*" {
		t.Errorf("leaderProc = %q", got)
	}
}

func TestRun_Refuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    Options
		c    scale.Cluster
		want string
	}{
		{"no phase", Options{}, scale.Cluster{}, "give -fires, -pollers or -tasks"},
		{"no temporary cluster", Options{Fires: "100"}, scale.Cluster{}, "temporary cluster"},
		{"bad list", Options{Pollers: "10,x"}, scale.Cluster{Local: &localcluster.Cluster{}}, "-pollers"},
		{"no step", Options{Fires: "100", Workers: 1, Capacity: 1, MaxLate: time.Second}, scale.Cluster{Local: &localcluster.Cluster{}}, "-step"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Run(context.Background(), tt.c, tt.o, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v, want an error with %q", err, tt.want)
			}
		})
	}
}
