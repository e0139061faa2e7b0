package benchkit

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadRawAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         int
		wantErr      string
	}{
		{"200 any 2xx", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, ""},
		{"202 any 2xx", "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n", 0, ""},
		{"404 wanted", "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope", 404, ""},
		{"404 unwanted", "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope", 0, "status 404: nope"},
		{"no length", "HTTP/1.1 200 OK\r\n\r\n", 0, "without Content-Length"},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", 0, "bad Content-Length"},
		{"bad status line", "SSH-2.0-OpenSSH\r\n\r\n", 0, "bad status line"},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nok", 0, "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := readRawAnswer(bufio.NewReader(strings.NewReader(tc.answer)), tc.want)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// rawLoad sends every request over keep-alive connections, with the
// token and a fresh idempotency key each, and reads every answer.
func TestRawLoad(t *testing.T) {
	keys := make(chan string, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.URL.Path != "/v1/tasks/x/submit" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		keys <- r.Header.Get("Idempotency-Key")
		w.Write([]byte(`{"id":"1"}`))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	r, err := RawLoad(context.Background(), addr, nil, 4, 100, 0, func(buf []byte, _ int) []byte {
		return RawPost(buf, addr, "/v1/tasks/x/submit", "s3cret", []byte(`{}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	close(keys)
	seen := map[string]bool{}
	for k := range keys {
		seen[k] = true
	}
	if r.N != 100 || len(seen) != 100 {
		t.Fatalf("%d answers, %d distinct idempotency keys; want 100 of each", r.N, len(seen))
	}
	_, err = RawLoad(context.Background(), addr, nil, 1, 1, 0, func(buf []byte, _ int) []byte {
		return RawPost(buf, addr, "/v1/tasks/x/submit", "wrong", []byte(`{}`))
	})
	if err == nil || !strings.Contains(err.Error(), "status 400") {
		t.Fatalf("a refused request: %v, want its status", err)
	}
}

func TestEvery(t *testing.T) {
	var n atomic.Int64
	stop := Every(time.Millisecond, func() { n.Add(1) })
	deadline := time.Now().Add(10 * time.Second)
	for n.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	stop() // returns once the ticking goroutine has ended
	if got := n.Load(); got < 3 {
		t.Fatalf("%d calls in 10 s, want at least 3", got)
	}
}
