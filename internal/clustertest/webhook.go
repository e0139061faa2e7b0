package clustertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// Webhook records the alert notifications POSTed to it, until the test
// ends.
type Webhook struct {
	mu   sync.Mutex
	got  []model.AlertNotification
	srv  *httptest.Server
	errs []string
}

// NewWebhook starts a Webhook.
func NewWebhook(t testing.TB) *Webhook {
	w := &Webhook{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var n model.AlertNotification
		w.mu.Lock()
		defer w.mu.Unlock()
		if err := json.Unmarshal(b, &n); err != nil {
			w.errs = append(w.errs, string(b))
		}
		w.got = append(w.got, n)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

// URL is where to send the notifications.
func (w *Webhook) URL() string { return w.srv.URL }

// Got returns the notifications received so far.
func (w *Webhook) Got() []model.AlertNotification {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// Errs returns the bodies received that were not notifications.
func (w *Webhook) Errs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.errs)
}

// Count returns how many notifications of event alert id received.
func (w *Webhook) Count(id, event string) int {
	n := 0
	for _, g := range w.Got() {
		if g.Alert.ID == id && g.Event == event {
			n++
		}
	}
	return n
}

// Total returns how many notifications about task it received.
func (w *Webhook) Total(task string) int {
	n := 0
	for _, g := range w.Got() {
		if g.Alert.Subject.Task == task {
			n++
		}
	}
	return n
}
