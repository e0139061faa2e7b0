package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// Event is one Server-Sent Event of a stream.
type Event struct {
	Type string // the "event:" field ("message" when absent)
	ID   string
	Data []byte
}

// StreamIdle is how long Stream waits for a line (an event or the
// server's keepalive, sent every 15 s) before it takes the stream for
// lost.
const StreamIdle = 45 * time.Second

// Stream reads the Server-Sent Events stream of GET path?query (GET
// /v1/events, GET /v1/instances/{id}/log?follow=true) from the first
// address that accepts it, trying the next on an unreachable address or
// a 503, and calls fn with each event. It returns nil when the server
// ends the stream, fn's error when fn fails, ctx's error when ctx ends,
// and an unavailable error when the stream breaks or stays silent for
// StreamIdle (the caller reconnects: a stream does not resume, so it
// reloads what it shows first). Stream does not fall under RetryFor.
func (t *transport) Stream(ctx context.Context, path string, query url.Values, fn func(Event) error) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := Request{Method: http.MethodGet, Path: path, Query: query}
	start := int(t.next.Load())
	var failed []error
	var resp *http.Response
	for attempt := 0; resp == nil; attempt++ {
		i := (start + attempt) % len(t.bases)
		hr, err := t.newRequest(sctx, t.bases[i], req, nil, http.Header{"Accept": {"text/event-stream"}})
		if err != nil {
			return err
		}
		r, err := t.hc.Do(hr)
		if err != nil {
			retry, err := t.sendFailed(sctx, req, nil, hr.URL.String(), err)
			if !retry || ctx.Err() != nil {
				return err
			}
			failed = append(failed, err)
		} else if r.StatusCode/100 != 2 {
			data, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body.Close()
			err := answerError(http.MethodGet, hr.URL.String(), r.StatusCode, data)
			if r.StatusCode != http.StatusServiceUnavailable {
				return err
			}
			failed = append(failed, err)
		} else {
			resp = r
			t.next.Store(uint32(i))
			break
		}
		if len(failed) == len(t.bases) {
			return everyAddressFailed(failed)
		}
	}
	defer resp.Body.Close()
	// A stream that stays silent past StreamIdle (a node cut off without
	// closing the connection) is given up.
	idle := time.AfterFunc(StreamIdle, cancel)
	defer idle.Stop()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	var ev Event
	var data bytes.Buffer
	for sc.Scan() {
		idle.Reset(StreamIdle)
		line := sc.Text()
		if line == "" { // the end of an event
			if data.Len() > 0 || ev.Type != "" {
				if ev.Type == "" {
					ev.Type = "message"
				}
				ev.Data = bytes.TrimSuffix(data.Bytes(), []byte("\n"))
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, data = Event{}, bytes.Buffer{}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Type = value
		case "id":
			ev.ID = value
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
		}
	}
	err := sc.Err()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil && sctx.Err() == nil {
		return nil // the server ended the stream
	}
	if err == nil || errors.Is(err, context.Canceled) {
		err = fmt.Errorf("no event or keepalive for %s", StreamIdle)
	}
	return &model.Error{Code: model.CodeUnavailable, Message: fmt.Sprintf("GET %s: stream lost: %v", resp.Request.URL, err)}
}
