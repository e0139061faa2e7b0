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
