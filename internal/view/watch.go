package view

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// Timings of -w.
const (
	// watchSettle gathers a burst of events into one redraw.
	watchSettle = 500 * time.Millisecond
	// watchRefresh redraws a watched list without events (ages and next
	// fire times move on).
	watchRefresh = 5 * time.Second
)

// Render writes one picture of what is watched.
type Render func(ctx context.Context, w io.Writer) error

// Screen is where a watched picture is drawn (-w): Stdout, with the
// notes on an unreachable cluster on Stderr.
type Screen struct {
	Stdout, Stderr io.Writer
}

// Watch draws render's output, then again whenever this node's event
// stream (GET /v1/events, filtered by query) reports a change, and every
// watchRefresh; until ctx ends (Ctrl-C). A stream that breaks is opened
// again (on the next address when the node is gone), and the picture is
// drawn again, since events in between are lost.
func (s Screen) Watch(ctx context.Context, cl *client.Client, out Output, query url.Values, render Render) error {
	changes := make(chan struct{}, 1)
	signal := func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
	go func() {
		for ctx.Err() == nil {
			_ = cl.Stream(ctx, "/v1/events", query, func(client.Event) error {
				signal()
				return nil
			})
			signal() // reload after a lost stream
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return s.redraw(ctx, out, watchRefresh, changes, render)
}

// Poll draws render's output every interval until ctx ends, for what
// has no events (the members' health).
func (s Screen) Poll(ctx context.Context, out Output, interval time.Duration, render Render) error {
	return s.redraw(ctx, out, interval, nil, render)
}

// redraw shows render's output on s.Stdout when it differs from what is
// shown: on a terminal it clears the screen first; elsewhere (a pipe, a
// file) each new picture follows the last, YAML documents separated by
// "---". A picture that fails because the cluster is unreachable is
// reported on s.Stderr and tried again.
func (s Screen) redraw(ctx context.Context, out Output, interval time.Duration, changes <-chan struct{}, render Render) error {
	stdout := s.Stdout
	tty := isTerminal(stdout)
	var shown []byte
	failing := false
	for {
		var buf bytes.Buffer
		err := render(ctx, &buf)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, model.ErrUnavailable):
			if !failing {
				fmt.Fprintf(s.Stderr, "ax: %v (trying again)\n", err)
			}
			failing = true
		case err != nil:
			return err
		case !bytes.Equal(buf.Bytes(), shown):
			failing = false
			switch {
			case tty:
				fmt.Fprint(stdout, "\x1b[H\x1b[2J") // home, clear
				fmt.Fprintf(stdout, "%s  (every change; Ctrl-C to stop)\n\n", time.Now().Format("15:04:05"))
			case shown != nil && out.format == FormatYAML:
				fmt.Fprintln(stdout, "---")
			case shown != nil && out.format == FormatTable:
				fmt.Fprintln(stdout)
			}
			if _, err := stdout.Write(buf.Bytes()); err != nil {
				return err
			}
			shown = buf.Bytes()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changes:
			select { // let a burst of events settle
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(watchSettle):
			}
		case <-time.After(interval):
		}
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
