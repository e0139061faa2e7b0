package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/model"
)

// putEventTask writes an event task that nothing runs (its delayed
// instances stay SCHEDULED for the hour they are given).
func putEventTask(t *testing.T, c *client.Client, name string) {
	t.Helper()
	_, err := c.PutTask(context.Background(), &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}})
	if err != nil {
		t.Fatal(err)
	}
}

// countInstances counts task's instances, read consistently.
func countInstances(t *testing.T, c *client.Client, task string) (ids map[string]bool) {
	t.Helper()
	ids = map[string]bool{}
	f := model.InstanceFilter{Task: task, Limit: 1000}
	for {
		page, err := c.ListInstances(context.Background(), f, client.Consistent())
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range page.Instances {
			ids[in.ID] = true
		}
		if page.NextCursor == "" {
			return ids
		}
		f.Cursor = page.NextCursor
	}
}

// TestSubmitter_AgainstAnAgent: many goroutines through one Submitter
// against a real agent create exactly one instance each, every caller
// gets its own (its payload), an element the API refuses fails only its
// caller, and a missing task fails every caller.
func TestSubmitter_AgainstAnAgent(t *testing.T) {
	a := agenttest.Start(t, nil)
	c := client.New(client.Config{Addrs: []string{a.HTTPAddr()}})
	putEventTask(t, c, "orders")
	s := client.NewSubmitter(c, client.SubmitterConfig{MaxBatch: 50})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const goroutines, each = 24, 25
	past := model.Time{Time: time.Now().Add(-time.Hour)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]int{} // instance id → order
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				n := g*each + i
				req := model.SubmitRequest{Payload: json.RawMessage(fmt.Sprintf(`{"order":%d}`, n)), Delay: model.Duration(time.Hour)}
				if n%100 == 7 { // refused by the API: "at" is in the past
					req.Delay, req.At = 0, &past
				}
				sub, err := s.Submit(ctx, "orders", req)
				if n%100 == 7 {
					var me *model.Error
					if !errors.As(err, &me) || me.Code != model.CodeInvalid || me.Field != "at" {
						t.Errorf("order %d: got %+v, %v; want invalid_argument naming at", n, sub, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("order %d: %v", n, err)
					continue
				}
				mu.Lock()
				if prev, dup := got[sub.ID]; dup {
					t.Errorf("orders %d and %d both got instance %s", prev, n, sub.ID)
				}
				got[sub.ID] = n
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	want := goroutines*each - goroutines*each/100
	if len(got) != want {
		t.Fatalf("%d instances answered, want %d", len(got), want)
	}
	if ids := countInstances(t, c, "orders"); len(ids) != want {
		t.Errorf("the task has %d instances, want exactly %d", len(ids), want)
	}
	// Each caller's instance holds its own payload.
	checked := 0
	for id, n := range got {
		in, err := c.GetInstance(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"order":%d}`, n); string(in.Payload) != want {
			t.Errorf("instance %s of order %d holds %s", id, n, in.Payload)
		}
		if checked++; checked == 50 {
			break
		}
	}

	var missing sync.WaitGroup
	for range 3 {
		missing.Go(func() {
			if _, err := s.Submit(ctx, "no-such-task", model.SubmitRequest{Delay: model.Duration(time.Hour)}); !errors.Is(err, model.ErrNotFound) {
				t.Errorf("missing task: %v, want not_found", err)
			}
		})
	}
	missing.Wait()
}

// TestSubmitter_RetriedFlushCreatesNothingTwice: the answer to the first
// array submission is lost (the connection is cut after the agent
// committed it); the Client retries with the same Idempotency-Key and is
// answered the same instances, and the task has exactly one instance per
// submission.
func TestSubmitter_RetriedFlushCreatesNothingTwice(t *testing.T) {
	a := agenttest.Start(t, nil)
	direct := client.New(client.Config{Addrs: []string{a.HTTPAddr()}})
	putEventTask(t, direct, "orders")

	var submits atomic.Int32
	var firstAnswer []byte
	var keys []string
	var mu sync.Mutex
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequest(r.Method, "http://"+a.HTTPAddr()+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if r.Method == http.MethodPost && submits.Add(1) == 1 {
			mu.Lock()
			firstAnswer = answer
			keys = append(keys, r.Header.Get(client.HeaderIdempotencyKey))
			mu.Unlock()
			// Committed, but the client never hears of it.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if r.Method == http.MethodPost {
			mu.Lock()
			keys = append(keys, r.Header.Get(client.HeaderIdempotencyKey))
			mu.Unlock()
		}
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
	}))
	defer proxy.Close()

	s := client.NewSubmitter(client.New(client.Config{Addrs: []string{proxy.URL}}), client.SubmitterConfig{Linger: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 20
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sub, err := s.Submit(ctx, "orders", model.SubmitRequest{Payload: json.RawMessage(fmt.Sprintf(`{"order":%d}`, i)), Delay: model.Duration(time.Hour)})
			if err != nil {
				t.Errorf("order %d: %v", i, err)
				return
			}
			ids[i] = sub.ID
		})
	}
	wg.Wait()
	s.Close()
	if submits.Load() < 2 {
		t.Fatalf("%d submit requests reached the agent, want the cut one and its retry", submits.Load())
	}
	mu.Lock()
	if keys[0] != keys[1] {
		t.Errorf("the retry's Idempotency-Key %q differs from the first %q", keys[1], keys[0])
	}
	var first model.SubmitResult
	if err := json.Unmarshal(firstAnswer, &first); err != nil {
		t.Fatalf("first answer %s: %v", firstAnswer, err)
	}
	mu.Unlock()
	// The first request's instances are the ones its callers were given.
	answered := map[string]bool{}
	for _, id := range ids {
		answered[id] = true
	}
	for _, in := range first.Instances {
		if !answered[in.ID] {
			t.Errorf("instance %s, created by the cut request, was not answered to any caller", in.ID)
		}
	}
	if len(answered) != n {
		t.Errorf("%d distinct instances answered, want %d", len(answered), n)
	}
	if got := countInstances(t, direct, "orders"); len(got) != n {
		t.Errorf("the task has %d instances, want exactly %d", len(got), n)
	}
}
