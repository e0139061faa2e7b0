package work

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/model"
)

// submitCmd is ax submit.
type submitCmd struct {
	command.ClientBase
	payload, at, key string
	delay            time.Duration
	wait             command.WaitFlags
}

// NewSubmit makes ax submit.
func NewSubmit(io *command.IO) command.Command {
	c := &submitCmd{}
	c.Init(io, "submit", `
Usage: ax submit NAME [-payload JSON_OR_TEXT] (-delay D | -at TIME) [-key IDEMPOTENCY_KEY] [-wait [-log]]

Creates a delayed instance of a task, due after -delay (leader time) or at
-at (RFC 3339, or 2006-01-02T15:04 in UTC). A payload that is not valid
JSON is sent as a JSON string. -wait and -log as for ax trigger: exit 0
SUCCESS, 1 FAILED, 3 TERMINATED, 4 CANCELED or SKIPPED.

Examples:
	ax submit close_order -payload '{"order":42}' -delay 30m -key order-42
	ax submit remind -payload "call back" -at 2026-12-01T09:00:00+08:00
`)
	c.FS.StringVar(&c.payload, "payload", "", "payload (JSON, or text sent as a JSON string)")
	c.FS.DurationVar(&c.delay, "delay", 0, "due after this long")
	c.FS.StringVar(&c.at, "at", "", "due at this time (RFC 3339, or 2006-01-02T15:04 in UTC)")
	c.FS.StringVar(&c.key, "key", "", "idempotency key: resubmitting it returns the existing instance")
	c.wait.Register(c.FS)
	return c
}

func (c *submitCmd) Run(ctx context.Context, args []string) error {
	name, err := c.ParseOne(args, "task name")
	if err != nil {
		return err
	}
	if err := c.wait.Check(); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	switch {
	case c.delay == 0 && c.at == "":
		return fmt.Errorf("submit: say when the instance is due: -delay D (30m) or -at TIME (ax trigger runs it now)")
	case c.delay != 0 && c.at != "":
		return fmt.Errorf("submit: -delay and -at both given: want one")
	case c.delay < 0:
		return fmt.Errorf("submit: -delay %s is negative", c.delay)
	}
	req := model.SubmitRequest{Delay: model.Duration(c.delay), IdempotencyKey: c.key}
	if c.payload != "" {
		if json.Valid([]byte(c.payload)) {
			req.Payload = json.RawMessage(c.payload)
		} else {
			b, _ := json.Marshal(c.payload)
			req.Payload = b
		}
	}
	if c.at != "" {
		t, err := cli.ParseDate(c.at)
		if err != nil {
			return fmt.Errorf("submit: -at: %w", err)
		}
		req.At = &model.Time{Time: t}
	}
	cl, err := c.CF.Client()
	if err != nil {
		return err
	}
	res, err := cl.Submit(ctx, name, req)
	if err != nil {
		return err
	}
	existing := ""
	if res.Existing {
		existing = " (existing)"
	}
	fmt.Fprintf(c.IO.Stdout, "%s %s due %s%s\n", res.ID, res.State, res.ScheduledAt.Format(model.TimeLayout), existing)
	return c.wait.Follow(ctx, c.IO, cl, res.ID)
}
