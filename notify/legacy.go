package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// LegacyFailure is the JSON body POSTed to a task's policy.notify URLs
// when one of its instances ends FAILED on a cluster below protocol 4
// (before alert records): the first release's webhook, kept while a
// cluster is being upgraded. From protocol 4 on, a failure is an
// instance_failed alert, which Notifier delivers.
type LegacyFailure struct {
	Event       string     `json:"event"` // "instance_failed"
	Task        string     `json:"task"`
	InstanceID  string     `json:"instanceId"`
	ScheduledAt model.Time `json:"scheduledAt"`
	Attempts    int        `json:"attempts"`
	Error       string     `json:"error"`
	Node        string     `json:"node"`
}

// PostLegacy delivers f to url with hc, three tries a second apart (then
// two), and says how it went (the status, an error, "canceled") and
// whether it was delivered (2xx).
func PostLegacy(ctx context.Context, hc *http.Client, url string, f LegacyFailure) (string, bool) {
	body, _ := json.Marshal(f)
	var last string
	for try := 0; try < 3; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return "canceled", false
			case <-time.After(time.Duration(try) * time.Second):
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err.Error(), false
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			last = err.Error()
			continue
		}
		resp.Body.Close()
		last = resp.Status
		if resp.StatusCode/100 == 2 {
			return last, true
		}
	}
	return "failed: " + last, false
}
