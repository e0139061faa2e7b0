package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// fakeSub is a subscription the tests feed by hand.
type fakeSub struct {
	f      live.Filter
	ch     chan live.Event
	lost   chan struct{}
	closed atomic.Bool
}

func (s *fakeSub) Events() <-chan live.Event { return s.ch }
func (s *fakeSub) Lost() <-chan struct{}     { return s.lost }
func (s *fakeSub) Close()                    { s.closed.Store(true) }

func (f fakeLive) Subscribe(ctx context.Context, flt live.Filter) (api.Subscription, error) {
	f.record(ctx, call{Method: "Subscribe", Live: flt})
	if f.SubErr != nil {
		return nil, f.SubErr
	}
	s := &fakeSub{f: flt, ch: make(chan live.Event, 16), lost: make(chan struct{}, 1)}
	f.mu.Lock()
	f.subs = append(f.subs, s)
	added := f.subAdded
	f.mu.Unlock()
	if added != nil {
		added <- struct{}{}
	}
	return s, nil
}

func (f *fakeBackend) stopping() <-chan struct{} {
	if f.Stop != nil {
		return f.Stop
	}
	c := make(chan struct{})
	close(c)
	return c
}

func (f *fakeBackend) nodeID() string {
	if f.Node == "" {
		return "n1"
	}
	return f.Node
}

func (f fakeACL) ACLEnabled() bool { return f.ACL }

func (f fakeLive) Upcoming(ctx context.Context, q live.UpcomingQuery) (*live.Upcoming, error) {
	f.record(ctx, call{Method: "Upcoming", Upcoming: q})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.UpcomingV != nil {
		return f.UpcomingV, nil
	}
	return &live.Upcoming{From: model.Time{Time: q.From}, To: model.Time{Time: q.To}, Fires: []live.UpcomingFire{}}, nil
}

// sseEvent is one parsed Server-Sent Event; a comment has Type ":".
type sseEvent struct {
	Type, ID, Data string
}

// sseReader parses an event stream.
type sseReader struct{ r *bufio.Reader }

// next returns the next event or comment.
func (s *sseReader) next(t *testing.T) sseEvent {
	t.Helper()
	var ev sseEvent
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v (event so far %+v)", err, ev)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev != (sseEvent{}) {
				return ev
			}
		case strings.HasPrefix(line, ":"):
			return sseEvent{Type: ":", Data: strings.TrimSpace(line[1:])}
		default:
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "event":
				ev.Type = v
			case "id":
				ev.ID = v
			case "data":
				ev.Data = v
			default:
				t.Fatalf("unknown field in line %q", line)
			}
		}
	}
}

// nextEvent skips keepalive comments.
func (s *sseReader) nextEvent(t *testing.T) sseEvent {
	t.Helper()
	for {
		if ev := s.next(t); ev.Type != ":" {
			return ev
		}
	}
}

// liveServer serves an API over fb on a real listener, with short stream
// timings.
func liveServer(t *testing.T, cfg api.Config, fb *fakeBackend, keepalive time.Duration) *httptest.Server {
	t.Helper()
	fb.configure(&cfg)
	s := api.New(cfg)
	s.SetStreamTimings(keepalive, 5*time.Millisecond)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

// openStream GETs path and returns the response and its parser; the
// stream is closed when ctx ends.
func openStream(t *testing.T, ctx context.Context, srv *httptest.Server, path string) (*http.Response, *sseReader) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, &sseReader{r: bufio.NewReader(resp.Body)}
}

func instanceEvent(id, task, state string, index uint64) live.Event {
	return live.Event{Type: live.TypeInstance, Instance: &live.Instance{ID: id, Task: task, State: state, Attempt: 1, Executor: "w1", Index: index}}
}

// openEvents opens GET path on a live server over a new fake backend and
// waits for its subscription; cancel ends the client's side.
func openEvents(t *testing.T, path string, keepalive time.Duration) (fb *fakeBackend, sub *fakeSub, resp *http.Response, sr *sseReader, cancel context.CancelFunc) {
	t.Helper()
	fb = &fakeBackend{Stop: make(chan struct{}), subAdded: make(chan struct{}, 1)}
	srv := liveServer(t, api.Config{}, fb, keepalive)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp, sr = openStream(t, ctx, srv, path)
	<-fb.subAdded
	return fb, fb.subs[0], resp, sr, cancel
}

func TestServer_EventsStream(t *testing.T) {
	_, sub, resp, sr, cancel := openEvents(t, "/v1/events?task=daily", time.Hour)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: got %q, want %q", k, got, want)
		}
	}
	if sub.f != (live.Filter{Task: "daily"}) {
		t.Errorf("filter: got %+v", sub.f)
	}
	sub.ch <- instanceEvent("0000000000000007", "daily", model.StateRunning, 42)
	sub.ch <- live.Event{Type: live.TypeTask, Task: &live.Task{Name: "daily", Index: 43}}

	ev := sr.nextEvent(t)
	if ev.Type != "instance" || ev.ID != "42" {
		t.Errorf("first event: got %+v, want instance with id 42", ev)
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(ev.Data), &in); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": "0000000000000007", "task": "daily", "state": "RUNNING", "attempt": 1.0, "executor": "w1", "index": 42.0}
	if fmt.Sprint(in) != fmt.Sprint(want) {
		t.Errorf("instance data: got %v, want %v", in, want)
	}
	ev = sr.nextEvent(t)
	if ev.Type != "task" || ev.ID != "43" || ev.Data != `{"name":"daily","index":43}` {
		t.Errorf("second event: got %+v", ev)
	}

	// The client going away ends the handler, which closes its
	// subscription.
	cancel()
	testkit.Until(t, 5*time.Second, "the subscription to close after the client left", sub.closed.Load)
}

func TestServer_EventsKeepaliveAndShutdown(t *testing.T) {
	fb, sub, _, sr, _ := openEvents(t, "/v1/events", 10*time.Millisecond)
	if ev := sr.next(t); ev.Type != ":" || ev.Data != "keepalive" {
		t.Errorf("got %+v, want a keepalive comment", ev)
	}
	close(fb.Stop) // the node shuts down
	testkit.Until(t, 5*time.Second, "the subscription to close on shutdown", sub.closed.Load)
	for {
		if _, err := sr.r.ReadString('\n'); err != nil {
			break // the stream ended
		}
	}
}

// TestServer_EventsResync: after the subscriber lost events it gets one
// resync event, once it has read what was buffered.
func TestServer_EventsResync(t *testing.T) {
	_, sub, _, sr, _ := openEvents(t, "/v1/events", time.Hour)
	for i := range 3 {
		sub.ch <- instanceEvent(model.FormatID(uint64(i+1)), "daily", model.StateReady, uint64(10+i))
	}
	sub.lost <- struct{}{}
	var got []string
	for len(got) < 4 {
		ev := sr.nextEvent(t)
		got = append(got, ev.Type+"/"+ev.ID)
	}
	if want := "instance/10 instance/11 instance/12 resync/"; strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
	sub.ch <- instanceEvent(model.FormatID(9), "daily", model.StateReady, 20)
	if ev := sr.nextEvent(t); ev.Type != "instance" || ev.ID != "20" {
		t.Errorf("after the resync: got %+v", ev)
	}
}

func TestServer_EventsBadInput(t *testing.T) {
	tests := []struct {
		name       string
		path       string
		subErr     error
		wantStatus int
		wantField  string
	}{
		{"bad task", "/v1/events?task=Not%20A%20Name", nil, 400, "task"},
		{"bad instance", "/v1/events?instance=xyz", nil, 400, "instance"},
		{"at the subscriber cap", "/v1/events", &model.Error{Code: model.CodeUnavailable, Message: "too many event streams"}, 503, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{SubErr: tt.subErr}
			rec := serve(t, api.Config{}, fb, getReq(tt.path))
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (%s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if e := errorOf(t, rec); e.Field != tt.wantField {
				t.Errorf("field: got %q, want %q", e.Field, tt.wantField)
			}
		})
	}
}

func TestServer_Whoami(t *testing.T) {
	tests := []struct {
		name  string
		auth  api.Authenticator
		token string
		acl   bool
		want  live.Whoami
	}{
		{"without ACLs", nil, "", false, live.Whoami{Name: "anonymous", Role: "admin", ACL: false, Node: "n1"}},
		{"reader", roleTokens, "reader", true, live.Whoami{Name: "r", Role: "reader", ACL: true, Node: "n1"}},
		{"operator", roleTokens, "operator", true, live.Whoami{Name: "o", Role: "operator", ACL: true, Node: "n1"}},
		{"executor token", roleTokens, "executor", true, live.Whoami{Name: "e", Role: "executor", ACL: true, Node: "n1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := getReq("/v1/acl/whoami")
			if tt.token != "" {
				req.header = map[string]string{"Authorization": "Bearer " + tt.token}
			}
			rec := serve(t, api.Config{Auth: tt.auth}, &fakeBackend{ACL: tt.acl}, req)
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var got map[string]any
			decodeBody(t, rec, &got)
			want := map[string]any{"name": tt.want.Name, "role": tt.want.Role, "acl": tt.want.ACL, "node": tt.want.Node}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	t.Run("without a token", func(t *testing.T) {
		rec := serve(t, api.Config{Auth: roleTokens}, &fakeBackend{ACL: true}, getReq("/v1/acl/whoami"))
		if rec.Code != 401 {
			t.Errorf("status: got %d, want 401", rec.Code)
		}
	})
}

func TestServer_Upcoming(t *testing.T) {
	tests := []struct {
		name             string
		path             string
		wantFrom, wantTo time.Time
		wantLimit        int
		wantTask         string
	}{
		{"defaults", "/v1/upcoming", fixedNow, fixedNow.Add(time.Hour), 500, ""},
		{"days", "/v1/upcoming?within=2d&limit=5000&task=daily", fixedNow, fixedNow.Add(48 * time.Hour), 5000, "daily"},
		{"go duration", "/v1/upcoming?within=90m&limit=1", fixedNow, fixedNow.Add(90 * time.Minute), 1, ""},
		{"the most", "/v1/upcoming?within=168h", fixedNow, fixedNow.Add(7 * 24 * time.Hour), 500, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{Now: fixedClock}, fb, getReq(tt.path))
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			q := fb.Calls()[0].Upcoming
			if !q.From.Equal(tt.wantFrom) || !q.To.Equal(tt.wantTo) || q.Limit != tt.wantLimit || q.Task != tt.wantTask {
				t.Errorf("query: got %+v, want from %v to %v limit %d task %q", q, tt.wantFrom, tt.wantTo, tt.wantLimit, tt.wantTask)
			}
			var got live.Upcoming
			decodeBody(t, rec, &got)
			if got.Fires == nil {
				t.Errorf("fires: got null, want []")
			}
		})
	}
}

func TestServer_UpcomingBadInput(t *testing.T) {
	for _, tt := range []struct{ query, field string }{
		{"within=abc", "within"}, {"within=0s", "within"}, {"within=-1h", "within"}, {"within=8d", "within"},
		{"within=169h", "within"}, {"limit=0", "limit"}, {"limit=5001", "limit"}, {"limit=x", "limit"},
		{"task=No%20Such", "task"}, {"consistent=maybe", "consistent"},
	} {
		t.Run(tt.query, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{}, fb, getReq("/v1/upcoming?"+tt.query))
			checkRejected(t, fb, rec, 400, model.CodeInvalid, tt.field)
		})
	}
}

// logScript answers InstanceLog from a list of answers, one per call; the
// last one repeats.
func logScript(t *testing.T, answers ...func(offset int64) *model.InstanceLog) func(int64) (*model.InstanceLog, error) {
	var n atomic.Int32
	return func(offset int64) (*model.InstanceLog, error) {
		i := int(n.Add(1)) - 1
		if i >= len(answers) {
			i = len(answers) - 1
		}
		return answers[i](offset), nil
	}
}

func TestServer_LogFollow(t *testing.T) {
	id := "0000000000000007"
	running := func(attempt int, out string, start int64) func(int64) *model.InstanceLog {
		return func(int64) *model.InstanceLog {
			return &model.InstanceLog{InstanceID: id, Attempt: attempt, State: model.StateRunning, Live: true, Offset: start, Output: out}
		}
	}
	fb := &fakeBackend{Stop: make(chan struct{})}
	fb.LogFn = logScript(t,
		running(1, "abc", 0),
		running(1, "", 3), // nothing new yet
		running(1, "def", 3),
		running(2, "zz", 6),  // a retry, asked from the old offset: asked again
		running(2, "new", 0), // the retry's output from its start
		func(offset int64) *model.InstanceLog { // ended: the committed tail from offset
			return &model.InstanceLog{InstanceID: id, Attempt: 2, State: model.StateSuccess, Offset: offset, Output: "new!"[offset:]}
		},
	)
	srv := liveServer(t, api.Config{}, fb, time.Hour)
	resp, sr := openStream(t, context.Background(), srv, "/v1/instances/"+id+"/log?follow=true")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	var got []string
	for {
		ev := sr.nextEvent(t)
		got = append(got, ev.Type+" "+ev.Data)
		if ev.Type == "end" {
			break
		}
	}
	want := []string{
		`log {"offset":0,"data":"abc","attempt":1}`,
		`log {"offset":3,"data":"def","attempt":1}`,
		`log {"offset":0,"data":"new","attempt":2}`,
		`log {"offset":3,"data":"!","attempt":2}`,
		`end {"state":"SUCCESS"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var offsets []int64
	for _, c := range fb.Calls() {
		offsets = append(offsets, c.Offset)
	}
	if fmt.Sprint(offsets) != "[0 3 3 6 0 3]" {
		t.Errorf("offsets asked: got %v", offsets)
	}
}

// TestServer_LogFollowResumes: a client resuming from an offset in
// attempt 1 (?attempt=1) while attempt 2 has begun gets attempt 2 from its
// start, not from attempt 1's offset; without ?attempt= the offset is
// taken as the running attempt's.
func TestServer_LogFollowResumes(t *testing.T) {
	id := "0000000000000007"
	retried := func(offset int64) *model.InstanceLog {
		return &model.InstanceLog{InstanceID: id, Attempt: 2, State: model.StateSuccess, Offset: offset, Output: "second"[offset:]}
	}
	for _, tc := range []struct {
		query string
		want  string
	}{
		{"&offset=3&attempt=1", `log {"offset":0,"data":"second","attempt":2}`},
		{"&offset=3&attempt=2", `log {"offset":3,"data":"ond","attempt":2}`},
		{"&offset=3", `log {"offset":3,"data":"ond","attempt":2}`},
	} {
		fb := &fakeBackend{Stop: make(chan struct{}), LogFn: func(offset int64) (*model.InstanceLog, error) { return retried(offset), nil }}
		srv := liveServer(t, api.Config{}, fb, time.Hour)
		_, sr := openStream(t, context.Background(), srv, "/v1/instances/"+id+"/log?follow=true"+tc.query)
		ev := sr.nextEvent(t)
		if got := ev.Type + " " + ev.Data; got != tc.want {
			t.Errorf("%s: first event %s, want %s", tc.query, got, tc.want)
		}
	}
	fb := &fakeBackend{}
	rec := serve(t, api.Config{}, fb, getReq("/v1/instances/"+id+"/log?follow=true&offset=3&attempt=0"))
	checkRejected(t, fb, rec, 400, model.CodeInvalid, "attempt")
}

func TestServer_LogFollowEnds(t *testing.T) {
	id := "0000000000000007"
	t.Run("already ended", func(t *testing.T) {
		fb := &fakeBackend{LogFn: func(offset int64) (*model.InstanceLog, error) {
			return &model.InstanceLog{InstanceID: id, Attempt: 1, State: model.StateFailed, Output: "boom"}, nil
		}}
		rec := serve(t, api.Config{}, fb, getReq("/v1/instances/"+id+"/log?follow=1"))
		if want := "event: log\ndata: {\"offset\":0,\"data\":\"boom\",\"attempt\":1}\n\nevent: end\ndata: {\"state\":\"FAILED\"}\n\n"; rec.Body.String() != want {
			t.Errorf("body %q, want %q", rec.Body, want)
		}
	})
	t.Run("client leaves", func(t *testing.T) {
		fb := &fakeBackend{Stop: make(chan struct{}), LogFn: func(offset int64) (*model.InstanceLog, error) {
			return &model.InstanceLog{InstanceID: id, Attempt: 1, State: model.StateRunning, Live: true, Offset: offset}, nil
		}}
		srv := liveServer(t, api.Config{}, fb, time.Hour)
		ctx, cancel := context.WithCancel(context.Background())
		openStream(t, ctx, srv, "/v1/instances/"+id+"/log?follow=true")
		testkit.Until(t, 5*time.Second, "a few polls", func() bool { return len(fb.Calls()) >= 3 })
		cancel()
		time.Sleep(50 * time.Millisecond) // let a poll in flight land
		n := len(fb.Calls())
		time.Sleep(100 * time.Millisecond)
		if m := len(fb.Calls()); m != n {
			t.Errorf("the handler kept polling after the client left: %d calls, then %d", n, m)
		}
	})
	t.Run("bad follow", func(t *testing.T) {
		fb := &fakeBackend{}
		rec := serve(t, api.Config{}, fb, getReq("/v1/instances/"+id+"/log?follow=sure"))
		checkRejected(t, fb, rec, 400, model.CodeInvalid, "follow")
	})
	t.Run("no such instance", func(t *testing.T) {
		fb := &fakeBackend{Err: model.ErrNotFound}
		rec := serve(t, api.Config{}, fb, getReq("/v1/instances/"+id+"/log?follow=true"))
		if rec.Code != 404 {
			t.Errorf("status: got %d, want 404", rec.Code)
		}
	})
}
