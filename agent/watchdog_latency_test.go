package agent

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// timedNotifier records when each alert's first firing notification came.
type timedNotifier struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (n *timedNotifier) Notify(_ context.Context, an model.AlertNotification) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.at[an.Alert.ID]; !ok && an.Event == model.AlertFiring {
		n.at[an.Alert.ID] = time.Now()
	}
	return nil
}

func (n *timedNotifier) when(id string) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.at[id]
	return t, ok
}

// TestWatchdog_NotifyLatency measures, on the real clock, the time from
// a condition's threshold (an instance READY for -stuck-after 2s) to the
// notifier's call, with -watch-interval 1s and the default notify
// interval (1s). It takes ~40s: run it with AX_LATENCY=1.
func TestWatchdog_NotifyLatency(t *testing.T) {
	if os.Getenv("AX_LATENCY") == "" {
		t.Skip("set AX_LATENCY=1 to measure")
	}
	rec := &timedNotifier{at: map[string]time.Time{}}
	const stuck = 2 * time.Second
	tc := startCluster(t, 1, func(c *Config) {
		c.testNotifier, c.StuckAfter, c.WatchInterval = rec, stuck, time.Second
	})
	testkit.Until(t, 20*time.Second, "protocol 4", func() bool { return tc.leader() != nil && tc.leader().fsm.Proto() == command.ProtoVersion })
	l := tc.leader()
	ctx := context.Background()
	var lat []time.Duration
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("job-%d", i)
		if _, err := l.tasks.PutTask(ctx, api.Caller{Actor: "t"}, eventTask(name), api.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		sub, err := l.tasks.Trigger(ctx, api.Caller{Actor: "t"}, name, model.TriggerRequest{})
		if err != nil {
			t.Fatal(err)
		}
		id, _ := model.ParseID(sub.ID)
		in, err := l.fsm.GetInstance(id)
		if err != nil {
			t.Fatal(err)
		}
		threshold := in.FiredAt.Add(stuck)
		var at time.Time
		testkit.Until(t, 20*time.Second, "the stuck_ready notification of "+name, func() bool {
			var ok bool
			at, ok = rec.when(model.RuleStuckReady + ":" + name)
			return ok
		})
		lat = append(lat, at.Sub(threshold))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	t.Logf("threshold -> Notify over %d trials: min %s, median %s, mean %s, max %s", len(lat), lat[0], lat[len(lat)/2], sum/time.Duration(len(lat)), lat[len(lat)-1])
	if lat[len(lat)-1] > 5*time.Second {
		t.Errorf("max latency %s, want at most 5s", lat[len(lat)-1])
	}
}
