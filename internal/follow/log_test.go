package follow

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// TestLog_FollowsARetry: ax instance log -f prints a retry's
// output from its start, although the server takes an offset as the
// running attempt's (it was asked from the end of the first attempt).
func TestLog_FollowsARetry(t *testing.T) {
	t.Parallel()
	outputs := map[int]string{1: "first\n", 2: "second\n"}
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		offset, _ := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
		l := model.InstanceLog{InstanceID: "0000000000000007", Attempt: 1, State: model.StateRunning, Live: true}
		switch {
		case calls == 2:
			l.State, l.Live = model.StateRetrying, false // attempt 1 ended, a retry is due
		case calls >= 3:
			l.Attempt, l.State, l.Live = 2, model.StateSuccess, false
		}
		out := outputs[l.Attempt]
		l.Offset = min(offset, int64(len(out)))
		l.Output = out[l.Offset:]
		_ = json.NewEncoder(w).Encode(l)
	}))
	defer srv.Close()
	cl := client.New(client.Config{Addrs: []string{srv.URL}})

	var stdout, stderr strings.Builder
	if err := Log(context.Background(), cl, "0000000000000007", true, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if want := "first\nsecond\n"; stdout.String() != want {
		t.Errorf("printed %q, want %q", stdout.String(), want)
	}
	if want := "--- attempt 2\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// TestInstanceFrom_SkipsEarlierAttempts: following a re-run instance
// with its output (ax instance rerun -wait -log) prints the output of
// the attempts from the re-run's first on, not the tail of the attempt
// that ended before it, and no mark for the switch.
func TestInstanceFrom_SkipsEarlierAttempts(t *testing.T) {
	t.Parallel()
	const id = "0000000000000007"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/instances/" + id + "/log":
			w.Header().Set("Content-Type", "text/event-stream")
			for _, c := range []string{`{"offset":0,"data":"old\n","attempt":3}`, `{"offset":0,"data":"new\n","attempt":4}`, `{"offset":4,"data":"more\n","attempt":4}`} {
				_, _ = w.Write([]byte("event: log\ndata: " + c + "\n\n"))
			}
			_, _ = w.Write([]byte("event: end\ndata: {\"state\":\"SUCCESS\"}\n\n"))
		case "/v1/instances/" + id:
			_ = json.NewEncoder(w).Encode(model.Instance{ID: id, State: model.StateSuccess, Attempts: 4})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cl := client.New(client.Config{Addrs: []string{srv.URL}})
	var stdout, stderr strings.Builder
	if err := InstanceFrom(context.Background(), cl, id, 4, true, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if want := "new\nmore\n" + id + " SUCCESS\n"; stdout.String() != want {
		t.Errorf("printed %q, want %q", stdout.String(), want)
	}
	if stderr.String() != "" {
		t.Errorf("stderr %q, want nothing", stderr.String())
	}
}
