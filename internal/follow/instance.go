package follow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// Exit statuses of ax trigger/submit -wait for an instance that did not
// succeed (SUCCESS exits 0; ax's own errors 1, usage 2, Ctrl-C 130).
const (
	exitFailed     = 1 // FAILED: the attempts ran and failed
	exitTerminated = 3 // TERMINATED: stopped by an operator or at its timeout
	exitNotRun     = 4 // CANCELED or SKIPPED: it did not run to an end
)

// OutcomeError is the end of an instance that did not succeed; its Code
// is ax's exit status.
type OutcomeError struct {
	ID, State, LastError string
}

// Error implements error.
func (e *OutcomeError) Error() string {
	msg := "instance " + e.ID + " ended " + e.State
	if e.LastError != "" {
		msg += ": " + view.Ellipsis(e.LastError, 300)
	}
	return msg
}

// Code is the exit status of the outcome: exitFailed, exitTerminated or
// exitNotRun.
func (e *OutcomeError) Code() int {
	switch e.State {
	case model.StateTerminated:
		return exitTerminated
	case model.StateCanceled, model.StateSkipped:
		return exitNotRun
	}
	return exitFailed
}

// StoppedError is a wait that a signal ended before its instance did:
// the instance goes on, and ax's exit status says the wait did not see
// it end (143 after SIGTERM; 130 after Ctrl-C), never 0.
type StoppedError struct {
	ID  string
	Err error
}

// Error implements error.
func (e *StoppedError) Error() string {
	return "stopped waiting for instance " + e.ID + " before it ended: " + e.Err.Error()
}

// Unwrap is the cause (the context's error).
func (e *StoppedError) Unwrap() error { return e.Err }

// terminal reports whether an instance state is final.
func terminal(state string) bool {
	switch state {
	case model.StateSuccess, model.StateFailed, model.StateTerminated, model.StateSkipped, model.StateCanceled:
		return true
	}
	return false
}

// waitPoll is how often a wait reads the instance; the event stream
// wakes it sooner.
const waitPoll = 2 * time.Second

// Instance follows instance id until it ends, printing its output to w
// as it comes when showLog is set, then prints its final state and
// returns nil for SUCCESS, an *OutcomeError otherwise. It keeps going
// through a lost server or a leader change (every address is tried
// again) until ctx ends, saying so on notes.
func Instance(ctx context.Context, cl *client.Client, id string, showLog bool, w, notes io.Writer) error {
	return InstanceFrom(ctx, cl, id, 0, showLog, w, notes)
}

// InstanceFrom is Instance for the attempts from first on: the output of
// earlier ones (a re-run instance's) is not printed.
func InstanceFrom(ctx context.Context, cl *client.Client, id string, first int, showLog bool, w, notes io.Writer) error {
	var in *model.Instance
	var err error
	lost := &lostNote{w: notes}
	if showLog {
		in, err = followToEnd(ctx, cl, id, first, w, lost)
	} else {
		in, err = pollToEnd(ctx, cl, id, lost)
	}
	if err != nil && ctx.Err() != nil {
		return &StoppedError{ID: id, Err: err}
	}
	if err != nil {
		return err
	}
	line := id + " " + in.State
	if !in.StartedAt.IsZero() && !in.FinishedAt.IsZero() {
		line += " (took " + view.Human(in.FinishedAt.Sub(in.StartedAt.Time)) + ")"
	}
	fmt.Fprintln(w, line)
	if in.State != model.StateSuccess {
		return &OutcomeError{ID: id, State: in.State, LastError: in.LastError}
	}
	return nil
}

// pollToEnd reads the instance (linearizably: right after the write that
// made it, on any node) every waitPoll, and on each of its events.
func pollToEnd(ctx context.Context, cl *client.Client, id string, lost *lostNote) (*model.Instance, error) {
	wake := make(chan struct{}, 1)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for sctx.Err() == nil {
			_ = cl.Stream(sctx, "/v1/events", url.Values{"instance": {id}}, func(client.Event) error {
				select {
				case wake <- struct{}{}:
				default:
				}
				return nil
			})
			select { // reconnect (to the next address if this one is gone)
			case <-sctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	for {
		in, err := cl.GetInstance(ctx, id)
		switch {
		case err == nil:
			lost.found()
			if terminal(in.State) {
				return in, nil
			}
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, model.ErrUnavailable):
			lost.note(err)
		default:
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		case <-time.After(waitPoll):
		}
	}
}

// followToEnd streams the instance's output to w (GET
// /v1/instances/{id}/log?follow=true) until its end event, reconnecting
// from the last offset when the stream is lost, then reads the instance.
// A new attempt's mark goes to lost's writer. The output of attempts
// before first is skipped.
func followToEnd(ctx context.Context, cl *client.Client, id string, first int, w io.Writer, lost *lostNote) (*model.Instance, error) {
	var offset int64
	attempt := 0
	for {
		q := url.Values{"follow": {"true"}}
		if offset > 0 {
			// The attempt the offset is in: a retry begun while the
			// stream was lost is then sent from its start.
			q.Set("offset", strconv.FormatInt(offset, 10))
			q.Set("attempt", strconv.Itoa(attempt))
		}
		ended := false
		err := cl.Stream(ctx, "/v1/instances/"+url.PathEscape(id)+"/log", q, func(e client.Event) error {
			lost.found()
			switch e.Type {
			case "log":
				var c struct {
					Offset  int64  `json:"offset"`
					Data    string `json:"data"`
					Attempt int    `json:"attempt"`
				}
				if err := json.Unmarshal(e.Data, &c); err != nil {
					return fmt.Errorf("log stream: %w", err)
				}
				if c.Attempt != attempt && attempt >= max(first, 1) {
					fmt.Fprintf(lost.w, "--- attempt %d\n", c.Attempt)
				}
				attempt = c.Attempt
				offset = c.Offset + int64(len(c.Data))
				if c.Attempt < first {
					return nil
				}
				if _, err := io.WriteString(w, c.Data); err != nil {
					return err
				}
			case "end":
				ended = true
			}
			return nil
		})
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case ended:
			return pollToEnd(ctx, cl, id, lost) // the final record, from any node
		case err == nil:
			// The node stopped (or dropped the instance): ask again.
		case errors.Is(err, model.ErrUnavailable):
			lost.note(err)
		default:
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// lostNote tells the user (on w) once that a wait lost the cluster and
// goes on, and once that it found it again.
type lostNote struct {
	w    io.Writer
	lost bool
}

func (l *lostNote) note(err error) {
	if !l.lost {
		fmt.Fprintf(l.w, "ax: %v\nax: still waiting: trying every address again until Ctrl-C\n", err)
	}
	l.lost = true
}

func (l *lostNote) found() {
	if l.lost {
		fmt.Fprintln(l.w, "ax: reached the cluster again")
	}
	l.lost = false
}
