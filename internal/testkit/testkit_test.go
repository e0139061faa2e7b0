package testkit

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// recorder is a testing.TB whose Fatal and Log are recorded: Fatal ends
// the goroutine as the real one does.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	fatal  string
	logged []string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logged = append(r.logged, fmt.Sprint(args...))
}

// run calls f with r in a goroutine of its own, as a test would, and
// returns the message of the Fatal that ended it ("" if none did).
func (r *recorder) run(f func(testing.TB)) string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fatal
}

// after returns a condition that fails n times, then holds, and counts
// its calls in *calls.
func after(n int, calls *int) func() error {
	return func() error {
		*calls++
		if *calls <= n {
			return fmt.Errorf("try %d", *calls)
		}
		return nil
	}
}

func TestPoll(t *testing.T) {
	for _, tt := range []struct {
		name      string
		fails     int
		d         time.Duration
		wantErr   string
		wantCalls int
	}{
		{name: "holds at once", fails: 0, d: time.Second, wantCalls: 1},
		{name: "holds after some tries", fails: 5, d: 5 * time.Second, wantCalls: 6},
		{name: "zero duration tries once", fails: 1, d: 0, wantErr: "condition not met within 0s: try 1", wantCalls: 1},
		{name: "never holds", fails: 1 << 30, d: 50 * time.Millisecond, wantErr: "condition not met within 50ms: try"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			start := time.Now()
			err := Poll(tt.d, after(tt.fails, &calls))
			took := time.Since(start)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Poll: %v, want nil", err)
				}
			} else if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("Poll: %v, want an error starting %q", err, tt.wantErr)
			}
			if tt.wantCalls > 0 && calls != tt.wantCalls {
				t.Errorf("%d calls, want %d", calls, tt.wantCalls)
			}
			if err != nil && took < tt.d {
				t.Errorf("gave up after %s, before the %s deadline", took, tt.d)
			}
			if took > tt.d+time.Second {
				t.Errorf("took %s, want about %s at most", took, tt.d)
			}
		})
	}
}

// TestPoll_LastErrorWrapped: the error names the condition's last error
// and wraps it, so errors.Is sees it.
func TestPoll_LastErrorWrapped(t *testing.T) {
	errLast := errors.New("last")
	calls := 0
	err := Poll(20*time.Millisecond, func() error {
		calls++
		if calls == 1 {
			return errors.New("first")
		}
		return errLast
	})
	if !errors.Is(err, errLast) || !strings.HasSuffix(err.Error(), ": last") {
		t.Fatalf("Poll: %v, want the last error wrapped", err)
	}
}

// TestPoll_Pauses: the pauses between tries start at a millisecond and
// double up to maxPause, where they stay.
func TestPoll_Pauses(t *testing.T) {
	want := []time.Duration{1, 2, 4, 8, 16, 20, 20}
	p := firstPause
	for i, w := range want {
		if p != w*time.Millisecond {
			t.Fatalf("pause %d is %s, want %s", i+1, p, w*time.Millisecond)
		}
		p = nextPause(p)
	}
}

func TestEventuallyAndUntil(t *testing.T) {
	for _, tt := range []struct {
		name      string
		call      func(tb testing.TB)
		wantFatal string
	}{
		{name: "Eventually holds", call: func(tb testing.TB) {
			calls := 0
			Eventually(tb, time.Second, after(3, &calls))
		}},
		{name: "Eventually fails with the last error", call: func(tb testing.TB) {
			Eventually(tb, 30*time.Millisecond, func() error { return errors.New("instance 7 is RUNNING") })
		}, wantFatal: "condition not met within 30ms: instance 7 is RUNNING"},
		{name: "Until holds", call: func(tb testing.TB) {
			calls := 0
			Until(tb, time.Second, "three calls", func() bool { calls++; return calls == 3 })
		}},
		{name: "Until fails naming what", call: func(tb testing.TB) {
			Until(tb, 30*time.Millisecond, "a leader", func() bool { return false })
		}, wantFatal: "timed out after 30ms waiting for a leader"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			if got := r.run(tt.call); got != tt.wantFatal {
				t.Errorf("fatal %q, want %q", got, tt.wantFatal)
			}
		})
	}
}

func TestBuffer_ConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("ab"))
			}
		}()
	}
	wg.Wait()
	if b.Len() != 1600 || b.String() != strings.Repeat("ab", 800) {
		t.Errorf("Len %d, String %q...; want 1600 bytes of \"ab\"", b.Len(), b.String()[:min(10, b.Len())])
	}
}

func TestLogWriter_TrimsTheNewline(t *testing.T) {
	r := &recorder{TB: t}
	n, err := LogWriter(r).Write([]byte("a line\n"))
	if n != 7 || err != nil {
		t.Fatalf("Write: %d, %v; want 7, nil", n, err)
	}
	if len(r.logged) != 1 || r.logged[0] != "a line" {
		t.Errorf("logged %q, want [\"a line\"]", r.logged)
	}
}

func TestLogger_LevelFromEnv(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want hclog.Level
	}{
		{"", hclog.Warn},
		{"debug", hclog.Debug},
		{"TRACE", hclog.Trace},
		{"error", hclog.Error},
		{"verbose", hclog.Warn},
	} {
		t.Run("AX_TEST_LOG="+tt.env, func(t *testing.T) {
			t.Setenv("AX_TEST_LOG", tt.env)
			r := &recorder{TB: t}
			l := Logger(r, "n1")
			if got := l.GetLevel(); got != tt.want {
				t.Errorf("level %s, want %s", got, tt.want)
			}
			l.Error("boom", "k", 1)
			if len(r.logged) != 1 || !strings.Contains(r.logged[0], "[ERROR] n1: boom: k=1") {
				t.Errorf("logged %q, want one error line named n1", r.logged)
			}
		})
	}
}

func TestFreeAddr(t *testing.T) {
	addr := FreeAddr(t)
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("FreeAddr = %q, want 127.0.0.1:port", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	ln.Close()
}
