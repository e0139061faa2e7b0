// Package sse writes Server-Sent Events, each under its own write
// deadline, for the API's live streams.
package sse

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// WriteWait bounds one event's write: a client that stops reading ends
// its stream instead of holding a handler forever.
const WriteWait = 10 * time.Second

// Stream writes Server-Sent Events: each event is written under its own
// write deadline; Event flushes at once, Queue leaves the flush to the
// caller (who flushes when no more events are waiting, so a burst of
// events, such as one applied batch's, leaves in one write). The server sets no WriteTimeout, and
// the per-write deadline is cleared when the stream ends so that it does
// not outlive the stream on a kept-alive connection.
type Stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// Start sends the headers of an event stream.
func Start(w http.ResponseWriter) *Stream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer
	w.WriteHeader(http.StatusOK)
	s := &Stream{w: w, rc: http.NewResponseController(w)}
	_ = s.Flush()
	return s
}

// End clears the write deadline the stream set.
func (s *Stream) End() { _ = s.rc.SetWriteDeadline(time.Time{}) }

// Event writes one event and flushes it: its type, an id when id > 0 and
// data as JSON.
func (s *Stream) Event(typ string, id uint64, data any) error {
	if err := s.Queue(typ, id, data); err != nil {
		return err
	}
	return s.Flush()
}

// Queue writes one event without flushing it.
func (s *Stream) Queue(typ string, id uint64, data any) error {
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

// Comment writes a comment line (a keepalive) and flushes it.
func (s *Stream) Comment(text string) error {
	if err := s.write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	return s.Flush()
}

func (s *Stream) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(WriteWait)) // unsupported by recorders: fine
	_, err := s.w.Write(b)
	return err
}

func (s *Stream) Flush() error {
	err := s.rc.Flush()
	if errors.Is(err, http.ErrNotSupported) {
		return nil
	}
	return err
}
