package action

import (
	"context"
	"io"
	"sync"

	"github.com/ax-scheduler/ax/action/redact"
)

// tail keeps the last limit bytes written to it in a ring.
type tail struct {
	limit int
	buf   []byte // grows up to limit, then is a ring
	pos   int    // when full: index of the oldest byte, where the next write goes
	full  bool
}

func (t *tail) write(p []byte) {
	if len(p) >= t.limit {
		t.buf = append(t.buf[:0], p[len(p)-t.limit:]...)
		t.pos, t.full = 0, true
		return
	}
	if !t.full {
		n := min(t.limit-len(t.buf), len(p))
		t.buf = append(t.buf, p[:n]...)
		p = p[n:]
		if len(t.buf) < t.limit {
			return
		}
		t.full, t.pos = true, 0
	}
	for len(p) > 0 {
		n := copy(t.buf[t.pos:], p)
		p = p[n:]
		t.pos = (t.pos + n) % t.limit
	}
}

// bytes returns a copy of the kept bytes, oldest first; nil if none.
func (t *tail) bytes() []byte {
	if len(t.buf) == 0 {
		return nil
	}
	out := make([]byte, 0, len(t.buf))
	if !t.full {
		return append(out, t.buf...)
	}
	out = append(out, t.buf[t.pos:]...)
	return append(out, t.buf[:t.pos]...)
}

// sink is the output of one attempt: it masks the job's secrets, keeps
// the last OutputLimit bytes and copies everything to the live writer
// until it is closed. It is safe for concurrent use; writes after close
// are dropped.
type sink struct {
	mu     sync.Mutex
	tail   tail
	live   io.Writer
	red    *redact.Writer // nil without secrets
	closed bool
}

func newSink(live io.Writer, limit int, red *redact.Masker) *sink {
	s := &sink{tail: tail{limit: limit}, live: live}
	if red != nil {
		s.red = red.Writer(sinkOut{s})
	}
	return s
}

// sinkOut is where a sink's masked output goes: its tail and live
// writer. It is written with the sink's lock held.
type sinkOut struct{ s *sink }

func (o sinkOut) Write(p []byte) (int, error) {
	o.s.tail.write(p)
	if o.s.live != nil {
		_, _ = o.s.live.Write(p) // a broken log stream must not fail the job
	}
	return len(p), nil
}

// Write implements io.Writer; it never fails.
func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return len(p), nil
	}
	if s.red != nil {
		_, _ = s.red.Write(p)
	} else {
		_, _ = sinkOut{s}.Write(p)
	}
	return len(p), nil
}

// close flushes what the sink holds back, stops it and returns what it
// kept.
func (s *sink) close() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.red != nil && !s.closed {
		_ = s.red.Flush()
	}
	s.closed = true
	return s.tail.bytes()
}

type outputKey struct{}

// Output returns the writer an SDK handler writes its log to: what it
// writes becomes the attempt's output (Result.Output keeps the last
// OutputLimit bytes) and is streamed to Run's live writer. Writes never
// fail, and are dropped once the attempt is over. Outside a handler run by
// a Runner it returns io.Discard.
func Output(ctx context.Context) io.Writer {
	if w, ok := ctx.Value(outputKey{}).(io.Writer); ok {
		return w
	}
	return io.Discard
}
