package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// LiveLatency times how soon a change shows where the console watches:
// from a trigger of the event task task through cl to its instance's
// first event on watch's event stream (GET /v1/events?task=task), n
// changes one at a time. It returns the latencies sorted.
func LiveLatency(ctx context.Context, cl, watch *client.Client, task string, n int) ([]time.Duration, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan []byte, 1024)
	go func() {
		_ = watch.Stream(sctx, "/v1/events", url.Values{"task": {task}}, func(e client.Event) error {
			select {
			case events <- e.Data:
			case <-sctx.Done():
			}
			return nil
		})
	}()
	// change triggers an instance and waits for its event, within wait.
	change := func(wait time.Duration) (time.Duration, error) {
		t0 := time.Now()
		in, err := cl.Trigger(ctx, task, model.TriggerRequest{})
		if err != nil {
			return 0, err
		}
		for deadline := time.After(wait); ; {
			select {
			case d := <-events:
				if bytes.Contains(d, []byte(in.ID)) {
					return time.Since(t0), nil
				}
			case <-deadline:
				return 0, fmt.Errorf("live: no event for instance %s on the stream within %v", in.ID, wait)
			}
		}
	}
	// Until one change is seen, the stream may not be open yet.
	for try := 0; ; try++ {
		if _, err := change(2 * time.Second); err == nil {
			break
		} else if try == 4 {
			return nil, err
		}
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		d, err := change(10 * time.Second)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	slices.Sort(lat)
	return lat, nil
}
