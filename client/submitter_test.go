package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// submitServer is a stand-in for the submit route that records each
// request's submissions by their payload's "n" and answers instance id n
// for each. A submission whose payload has "bad" is refused by its array
// index, as the API refuses an invalid element; task "missing" is not
// found. With hold set, every request waits for a value on release.
type submitServer struct {
	*httptest.Server
	hold    bool
	release chan struct{}

	mu      sync.Mutex
	batches [][]int
	keys    []string
}

type testPayload struct {
	N   int  `json:"n"`
	Bad bool `json:"bad,omitempty"`
}

func newSubmitServer(t *testing.T, hold bool) *submitServer {
	t.Helper()
	s := &submitServer{hold: hold, release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/tasks/{task}/submit", s.serve)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *submitServer) serve(w http.ResponseWriter, r *http.Request) {
	var reqs []model.SubmitRequest
	if err := json.NewDecoder(r.Body).Decode(&reqs); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ps := make([]testPayload, len(reqs))
	ns := make([]int, len(reqs))
	for i, q := range reqs {
		if err := json.Unmarshal(q.Payload, &ps[i]); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ns[i] = ps[i].N
	}
	s.mu.Lock()
	s.batches = append(s.batches, ns)
	s.keys = append(s.keys, r.Header.Get(HeaderIdempotencyKey))
	s.mu.Unlock()
	if s.hold {
		<-s.release
	}
	w.Header().Set("Content-Type", "application/json")
	if r.PathValue("task") == "missing" {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"not_found","field":"name","message":"task missing not found"}}`))
		return
	}
	for i, p := range ps {
		if p.Bad {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"code":"invalid_argument","field":"[%d].payload","message":"bad payload"}}`, i)
			return
		}
	}
	var res model.SubmitResult
	for _, n := range ns {
		res.Instances = append(res.Instances, model.Submitted{ID: model.FormatID(uint64(n)), State: model.StateScheduled})
	}
	_ = json.NewEncoder(w).Encode(&res)
}

// sizes is the number of submissions of each request so far.
func (s *submitServer) sizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, len(s.batches))
	for i, b := range s.batches {
		out[i] = len(b)
	}
	return out
}

// seen is every submission received, in order.
func (s *submitServer) seen() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Concat(s.batches...)
}

// eventually fails t unless cond holds within 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// queued counts the submissions of task waiting to be sent.
func (s *Submitter) queued(task string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[task]; q != nil {
		return q.live
	}
	return 0
}

func submitN(n int) model.SubmitRequest {
	return model.SubmitRequest{Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), Delay: model.Duration(time.Hour)}
}

// result is one caller's outcome.
type result struct {
	n   int
	s   *model.Submitted
	err error
}

// submitAll runs Submit for each n from its own goroutine and returns the
// outcomes once all have returned.
func submitAll(ctx context.Context, s *Submitter, task string, ns []int) []result {
	out := make([]result, len(ns))
	var wg sync.WaitGroup
	for i, n := range ns {
		wg.Go(func() {
			got, err := s.Submit(ctx, task, submitN(n))
			out[i] = result{n: n, s: got, err: err}
		})
	}
	wg.Wait()
	return out
}

// checkOwn fails unless every caller got its own instance (id n).
func checkOwn(t *testing.T, rs []result) {
	t.Helper()
	for _, r := range rs {
		if r.err != nil || r.s == nil || r.s.ID != model.FormatID(uint64(r.n)) {
			t.Errorf("caller %d: got %+v, %v; want instance %s", r.n, r.s, r.err, model.FormatID(uint64(r.n)))
		}
	}
}

// fakeClock is a clock that moves only when told.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestSubmitter_BatchesBySize(t *testing.T) {
	srv := newSubmitServer(t, false)
	clock := &fakeClock{}
	// The linger never ends on this clock: only size and Close send.
	s := newSubmitter(New(Config{Addrs: []string{srv.URL}}), SubmitterConfig{MaxBatch: 10, Linger: time.Second}, clock.now)
	var rs []result
	done := make(chan struct{})
	go func() { rs = submitAll(context.Background(), s, "job", seq(1, 25)); close(done) }()
	eventually(t, "two full requests sent and 5 queued", func() bool {
		return slices.Equal(srv.sizes(), []int{10, 10}) && s.queued("job") == 5
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if got := srv.sizes(); !slices.Equal(got, []int{10, 10, 5}) {
		t.Errorf("request sizes %v, want [10 10 5] (the last 5 sent by Close)", got)
	}
	checkOwn(t, rs)
	if _, err := s.Submit(context.Background(), "job", submitN(99)); !errors.Is(err, ErrSubmitterClosed) {
		t.Errorf("Submit after Close: %v, want ErrSubmitterClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestSubmitter_BatchesByBytes(t *testing.T) {
	srv := newSubmitServer(t, false)
	body, _ := json.Marshal(submitN(10))
	// Room for 3 encoded submissions ("[a,b,c]"), not 4.
	limit := 3*len(body) + 4
	s := newSubmitter(New(Config{Addrs: []string{srv.URL}}), SubmitterConfig{MaxBytes: limit, Linger: time.Hour}, (&fakeClock{}).now)
	defer s.Close()
	rs := make(chan []result, 1)
	go func() { rs <- submitAll(context.Background(), s, "job", seq(10, 16)) }()
	eventually(t, "two requests of 3 bytes-full", func() bool { return slices.Equal(srv.sizes(), []int{3, 3}) })
	if q := s.queued("job"); q != 1 {
		t.Errorf("%d queued, want 1 (below the byte limit)", q)
	}
	s.Close()
	checkOwn(t, <-rs)
}

func TestSubmitter_Linger(t *testing.T) {
	srv := newSubmitServer(t, false)
	clock := &fakeClock{}
	s := newSubmitter(New(Config{Addrs: []string{srv.URL}}), SubmitterConfig{Linger: 2 * time.Millisecond}, clock.now)
	defer s.Close()
	rs := make(chan []result, 1)
	go func() { rs <- submitAll(context.Background(), s, "job", seq(1, 5)) }()
	eventually(t, "5 queued", func() bool { return s.queued("job") == 5 })
	if got := srv.sizes(); len(got) != 0 {
		t.Fatalf("sent %v before the linger ended", got)
	}
	clock.advance(2 * time.Millisecond)
	s.wake <- struct{}{}
	checkOwn(t, <-rs)
	if got := srv.sizes(); !slices.Equal(got, []int{5}) {
		t.Errorf("request sizes %v, want one of 5 once the linger ended", got)
	}
}

// While every request slot is out, submissions collect into the next
// request, without a linger.
func TestSubmitter_CollectsWhileInFlight(t *testing.T) {
	srv := newSubmitServer(t, true)
	s := NewSubmitter(New(Config{Addrs: []string{srv.URL}}), SubmitterConfig{MaxInFlight: 1})
	defer s.Close()
	first := make(chan []result, 1)
	go func() { first <- submitAll(context.Background(), s, "job", []int{1}) }()
	eventually(t, "the first request out", func() bool { return len(srv.sizes()) == 1 })
	rest := make(chan []result, 1)
	go func() { rest <- submitAll(context.Background(), s, "job", seq(2, 9)) }()
	eventually(t, "8 queued behind it", func() bool { return s.queued("job") == 8 })
	srv.release <- struct{}{}
	checkOwn(t, <-first)
	srv.release <- struct{}{}
	checkOwn(t, <-rest)
	if got := srv.sizes(); !slices.Equal(got, []int{1, 8}) {
		t.Errorf("request sizes %v, want [1 8]", got)
	}
}

func TestSubmitter_Errors(t *testing.T) {
	srv := newSubmitServer(t, false)
	clock := &fakeClock{}
	for _, tc := range []struct {
		name  string
		task  string
		bad   []int // submissions the server refuses by index
		check func(t *testing.T, r result, bad bool)
	}{
		{name: "elements refused alone", task: "job", bad: []int{2, 5}, check: func(t *testing.T, r result, bad bool) {
			var me *model.Error
			switch {
			case bad && (!errors.As(r.err, &me) || me.Code != model.CodeInvalid || me.Field != "payload"):
				t.Errorf("caller %d: got %v, want invalid_argument naming field payload", r.n, r.err)
			case !bad && (r.err != nil || r.s.ID != model.FormatID(uint64(r.n))):
				t.Errorf("caller %d: got %+v, %v; want its own instance", r.n, r.s, r.err)
			}
		}},
		{name: "request refused as a whole", task: "missing", check: func(t *testing.T, r result, _ bool) {
			if !errors.Is(r.err, model.ErrNotFound) {
				t.Errorf("caller %d: got %v, want not_found", r.n, r.err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSubmitter(New(Config{Addrs: []string{srv.URL}}), SubmitterConfig{Linger: time.Hour}, clock.now)
			out := make([]result, 6)
			var wg sync.WaitGroup
			for i := range out {
				n := i + 1
				req := submitN(n)
				if slices.Contains(tc.bad, n) {
					req.Payload = json.RawMessage(fmt.Sprintf(`{"n":%d,"bad":true}`, n))
				}
				wg.Go(func() {
					got, err := s.Submit(context.Background(), tc.task, req)
					out[i] = result{n: n, s: got, err: err}
				})
			}
			eventually(t, "6 queued", func() bool { return s.queued(tc.task) == 6 })
			s.Close()
			wg.Wait()
			for _, r := range out {
				tc.check(t, r, slices.Contains(tc.bad, r.n))
			}
		})
	}
	// Each refusal resent the others as a new request with a new key.
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.keys) < 3 || srv.keys[0] == srv.keys[1] || srv.keys[1] == srv.keys[2] {
		t.Errorf("idempotency keys %q, want a new one for each resend", srv.keys)
	}
}

// Submissions the server cannot take in any case fail without a request.
func TestSubmitter_RefusesLocally(t *testing.T) {
	srv := newSubmitServer(t, false)
	s := NewSubmitter(New(Config{Addrs: []string{srv.URL}}), SubmitterConfig{})
	defer s.Close()
	at := model.Time{Time: time.Now().Add(time.Hour)}
	for _, tc := range []struct {
		name  string
		req   model.SubmitRequest
		field string
	}{
		{"negative delay", model.SubmitRequest{Delay: model.Duration(-time.Second)}, "delay"},
		{"delay and at", model.SubmitRequest{Delay: model.Duration(time.Second), At: &at}, "delay"},
		{"payload not JSON", model.SubmitRequest{Payload: json.RawMessage(`{nope`)}, "payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Submit(context.Background(), "job", tc.req)
			var me *model.Error
			if !errors.As(err, &me) || me.Field != tc.field {
				t.Errorf("got %v, want an error naming %s", err, tc.field)
			}
		})
	}
	if got := srv.sizes(); len(got) != 0 {
		t.Errorf("requests sent: %v", got)
	}
}

func TestSubmitter_Cancel(t *testing.T) {
	srv := newSubmitServer(t, true)
	s := NewSubmitter(New(Config{Addrs: []string{srv.URL}}), SubmitterConfig{MaxInFlight: 1})
	defer s.Close()

	// Sent, then cancelled: the caller leaves at once; the request goes on.
	ctx1, cancel1 := context.WithCancel(context.Background())
	sent := make(chan error, 1)
	go func() { _, err := s.Submit(ctx1, "job", submitN(1)); sent <- err }()
	eventually(t, "the first request out", func() bool { return len(srv.sizes()) == 1 })

	// Queued behind it, then cancelled: dropped, never sent.
	ctx2, cancel2 := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	go func() { _, err := s.Submit(ctx2, "job", submitN(2)); queued <- err }()
	eventually(t, "the second queued", func() bool { return s.queued("job") == 1 })
	others := make(chan []result, 1)
	go func() { others <- submitAll(context.Background(), s, "job", []int{3, 4}) }()
	eventually(t, "three queued", func() bool { return s.queued("job") == 3 })

	cancel1()
	if err := <-sent; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while sent: %v, want context.Canceled", err)
	}
	cancel2()
	if err := <-queued; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while queued: %v, want context.Canceled", err)
	}
	eventually(t, "two live queued", func() bool { return s.queued("job") == 2 })
	srv.release <- struct{}{}
	srv.release <- struct{}{}
	checkOwn(t, <-others)
	if got := slices.Sorted(slices.Values(srv.seen())); !slices.Equal(got, []int{1, 3, 4}) {
		t.Errorf("the server received %v, want [1 3 4]: the sent one, not the one cancelled while queued", got)
	}
	// A context already done sends nothing.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Submit(done, "job", submitN(5)); !errors.Is(err, context.Canceled) {
		t.Errorf("done context: %v", err)
	}
}

// Many goroutines, several tasks, each caller its own answer (run with
// -race).
func TestSubmitter_Concurrent(t *testing.T) {
	srv := newSubmitServer(t, false)
	s := NewSubmitter(New(Config{Addrs: []string{srv.URL}}), SubmitterConfig{MaxBatch: 16, Linger: 200 * time.Microsecond})
	const goroutines, each = 32, 40
	var wg sync.WaitGroup
	var bad atomic.Int32
	for g := range goroutines {
		wg.Go(func() {
			task := []string{"a", "b", "c"}[g%3]
			for i := range each {
				n := g*each + i + 1
				got, err := s.Submit(context.Background(), task, submitN(n))
				if err != nil || got.ID != model.FormatID(uint64(n)) {
					t.Errorf("caller %d: %+v, %v", n, got, err)
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	s.Close()
	seen := srv.seen()
	slices.Sort(seen)
	if !slices.Equal(seen, seq(1, goroutines*each)) {
		t.Errorf("the server received %d submissions, want each of %d once", len(seen), goroutines*each)
	}
	if sizes := srv.sizes(); len(sizes) >= goroutines*each {
		t.Errorf("%d requests for %d submissions: nothing was batched", len(sizes), goroutines*each)
	}
}

func TestItemError(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		n         int
		wantIndex int
		wantField string // "-": no item named
	}{
		{"api element", &model.Error{Code: model.CodeInvalid, Field: "[3].at"}, 5, 3, "at"},
		{"state machine element", &model.Error{Code: model.CodeInvalid, Field: "items[0].delay"}, 1, 0, "delay"},
		{"element itself", &model.Error{Code: model.CodeInvalid, Field: "[2]"}, 5, 2, ""},
		{"out of range", &model.Error{Code: model.CodeInvalid, Field: "[7].at"}, 5, 0, "-"},
		{"request field", &model.Error{Code: model.CodeNotFound, Field: "name"}, 5, 0, "-"},
		{"count", &model.Error{Code: model.CodeInvalid, Field: "items"}, 5, 0, "-"},
		{"not an API error", errors.New("boom"), 5, 0, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, err := itemError(tc.err, tc.n)
			if tc.wantField == "-" {
				if err != nil {
					t.Errorf("got element %d: %v, want none", i, err)
				}
				return
			}
			var me *model.Error
			if !errors.As(err, &me) || i != tc.wantIndex || me.Field != tc.wantField {
				t.Errorf("got %d, %v; want element %d with field %q", i, err, tc.wantIndex, tc.wantField)
			}
		})
	}
}

// seq is from, from+1, ..., to.
func seq(from, to int) []int {
	var out []int
	for n := from; n <= to; n++ {
		out = append(out, n)
	}
	return out
}

// BenchmarkSubmitter is the client's own cost per submission, against a
// server that answers at once, from 64 goroutines.
func BenchmarkSubmitter(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqs []json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&reqs); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		res := model.SubmitResult{Instances: make([]model.Submitted, len(reqs))}
		for i := range res.Instances {
			res.Instances[i] = model.Submitted{ID: model.FormatID(uint64(i)), State: model.StateScheduled}
		}
		w.Write(res.AppendJSON(nil))
	}))
	defer srv.Close()
	s := NewSubmitter(New(Config{Addrs: []string{srv.URL}}), SubmitterConfig{})
	defer s.Close()
	req := submitN(1)
	b.SetParallelism(32) // 64 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Submit(context.Background(), "job", req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// The linger ends early once as many callers as the last request
// answered have submitted again; fewer wait for it.
func TestSubmitter_LingerEndsWhenCallersAreBack(t *testing.T) {
	srv := newSubmitServer(t, false)
	clock := &fakeClock{}
	s := newSubmitter(New(Config{Addrs: []string{srv.URL}}), SubmitterConfig{Linger: time.Second}, clock.now)
	defer s.Close()
	first := make(chan []result, 1)
	go func() { first <- submitAll(context.Background(), s, "job", seq(1, 3)) }()
	eventually(t, "3 queued", func() bool { return s.queued("job") == 3 })
	clock.advance(time.Second) // the first batch leaves on its linger
	checkOwn(t, <-first)

	// The three come back: no linger (the clock stands still).
	checkOwn(t, submitAll(context.Background(), s, "job", seq(4, 6)))
	// Two come back: they wait for the linger.
	again := make(chan []result, 1)
	go func() { again <- submitAll(context.Background(), s, "job", seq(7, 8)) }()
	eventually(t, "2 queued", func() bool { return s.queued("job") == 2 })
	if got := srv.sizes(); !slices.Equal(got, []int{3, 3}) {
		t.Fatalf("request sizes %v, want [3 3] with two waiting", got)
	}
	clock.advance(time.Second)
	checkOwn(t, <-again)
	// One caller after another: the first waits for the linger, then
	// each answer makes the next lone one leave at once.
	lone := make(chan []result, 1)
	go func() { lone <- submitAll(context.Background(), s, "job", []int{9}) }()
	eventually(t, "1 queued", func() bool { return s.queued("job") == 1 })
	clock.advance(time.Second)
	checkOwn(t, <-lone)
	for n := 10; n <= 12; n++ {
		checkOwn(t, submitAll(context.Background(), s, "job", []int{n}))
	}
	if got := srv.sizes(); !slices.Equal(got, []int{3, 3, 2, 1, 1, 1, 1}) {
		t.Errorf("request sizes %v, want [3 3 2 1 1 1 1]", got)
	}
}
