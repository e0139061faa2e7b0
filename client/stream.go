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
// openGet sends the GET req to each address in turn, from the last one
// that answered, until one answers 2xx, and returns that response (its
// body for the caller to read and close) and the address; an unreachable
// address or a 503 moves on to the next, another answer is its error.
// ctx is the request's, cause the caller's (a cancel of it ends the
// tries).
func (t *transport) openGet(ctx, cause context.Context, req Request, hdr http.Header) (*http.Response, string, error) {
	start := int(t.next.Load())
	var failed []error
	for attempt := 0; len(failed) < len(t.bases); attempt++ {
		i := (start + attempt) % len(t.bases)
		hr, err := t.newRequest(ctx, t.bases[i], req, nil, hdr)
		if err != nil {
			return nil, "", err
		}
		r, err := t.hc.Do(hr)
		switch {
		case err != nil:
			retry, err := t.sendFailed(ctx, req, nil, hr.URL.String(), err)
			if !retry || cause.Err() != nil {
				return nil, "", err
			}
			failed = append(failed, err)
		case r.StatusCode/100 != 2:
			data, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body.Close()
			err := answerError(req.Method, hr.URL.String(), r.StatusCode, data)
			if r.StatusCode != http.StatusServiceUnavailable {
				return nil, "", err
			}
			failed = append(failed, err)
		default:
			t.next.Store(uint32(i))
			return r, t.bases[i], nil
		}
	}
	return nil, "", everyAddressFailed(failed)
}

func (t *transport) Stream(ctx context.Context, path string, query url.Values, fn func(Event) error) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, _, err := t.openGet(sctx, ctx, Request{Method: http.MethodGet, Path: path, Query: query}, http.Header{"Accept": {"text/event-stream"}})
	if err != nil {
		return err
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
	err = sc.Err()
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
