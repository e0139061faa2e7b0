package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Timings of the live streams (Server fields, changed by tests).
const (
	defaultKeepalive = 15 * time.Second
	defaultLogPoll   = 300 * time.Millisecond
	defaultLiveFlush = 100 * time.Millisecond
	// sseWriteWait bounds one event's write: a client that stops reading
	// ends its stream instead of holding a handler forever.
	sseWriteWait = 10 * time.Second
)

// sseStream writes Server-Sent Events: each event is written under its own
// write deadline; send flushes at once, queue leaves the flush to the
// caller (who flushes when no more events are waiting, so a burst of
// events, such as one applied batch's, leaves in one write). The server sets no WriteTimeout, and
// the per-write deadline is cleared when the stream ends so that it does
// not outlive the stream on a kept-alive connection.
type sseStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startSSE sends the headers of an event stream.
func startSSE(w http.ResponseWriter) *sseStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer
	w.WriteHeader(http.StatusOK)
	s := &sseStream{w: w, rc: http.NewResponseController(w)}
	_ = s.flush()
	return s
}

// end clears the write deadline the stream set.
func (s *sseStream) end() { _ = s.rc.SetWriteDeadline(time.Time{}) }

// event writes one event and flushes it: its type, an id when id > 0 and
// data as JSON.
func (s *sseStream) event(typ string, id uint64, data any) error {
	if err := s.queue(typ, id, data); err != nil {
		return err
	}
	return s.flush()
}

// queue writes one event without flushing it.
func (s *sseStream) queue(typ string, id uint64, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(b)+64)
	buf = append(buf, "event: "...)
	buf = append(buf, typ...)
	buf = append(buf, '\n')
	if id > 0 {
		buf = append(buf, "id: "...)
		buf = strconv.AppendUint(buf, id, 10)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, b...) // JSON has no raw newlines
	buf = append(buf, "\n\n"...)
	return s.write(buf)
}

// comment writes a comment line (a keepalive) and flushes it.
func (s *sseStream) comment(text string) error {
	if err := s.write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	return s.flush()
}

func (s *sseStream) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(sseWriteWait)) // unsupported by recorders: fine
	_, err := s.w.Write(b)
	return err
}

func (s *sseStream) flush() error {
	err := s.rc.Flush()
	if errors.Is(err, http.ErrNotSupported) {
		return nil
	}
	return err
}
