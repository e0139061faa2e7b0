package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	axmetrics "ax/metrics"
	"ax/model"
)

// notifier delivers alert notifications (AL2 implements it with channels).
type notifier interface {
	Notify(ctx context.Context, n model.AlertNotification) error
}

// logNotifier is the stub notifier: it logs every notification at INFO
// and POSTs its JSON to the http(s):// entries of n.Notify (a task's
// policy.notify), as the failure webhook did, so those URLs keep working.
// Entries that are not URLs (channel names) are left to the channels
// notifier.
type logNotifier struct {
	log  hclog.Logger
	hc   *http.Client
	post func(ctx context.Context, hc *http.Client, url string, body []byte) (string, bool)
	// count records each delivery in ax_notifications_total.
	count func(ok bool, took time.Duration)
}

// Notify implements notifier. It fails if a URL did not take the POST
// (after a few tries), so that the transition is tried again.
func (n *logNotifier) Notify(ctx context.Context, an model.AlertNotification) error {
	n.log.Info("alert", "event", an.Event, "id", an.Alert.ID, "rule", an.Alert.Rule, "severity", an.Alert.Severity,
		"summary", an.Alert.Summary, "count", an.Alert.Count)
	body, err := json.Marshal(an)
	if err != nil {
		return err
	}
	var failed []string
	for _, u := range an.Notify {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			continue
		}
		start := time.Now()
		st, ok := n.post(ctx, n.hc, u, body)
		n.count(ok, time.Since(start))
		if !ok {
			failed = append(failed, u+": "+st)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("notify: %s", strings.Join(failed, "; "))
	}
	return nil
}

func (a *Agent) newLogNotifier() *logNotifier {
	return &logNotifier{log: a.log.Named("alerts"), hc: &http.Client{Timeout: 5 * time.Second}, post: a.post,
		count: func(ok bool, took time.Duration) { a.metrics.notify.Notified(axmetrics.ChannelWebhook, ok, took) }}
}
