package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/model"
)

// submitCmd is ax submit.
type submitCmd struct {
	clientBase
	payload, at, key string
	delay            time.Duration
	wait             waitFlags
}

func newSubmitCmd(m *Main) command {
	c := &submitCmd{}
	c.init(m, "submit", `
Usage: ax submit NAME [-payload JSON_OR_TEXT] (-delay D | -at TIME) [-key IDEMPOTENCY_KEY] [-wait [-log]]

Creates a delayed instance of a task, due after -delay (leader time) or at
-at (RFC 3339, or 2006-01-02T15:04 in UTC). A payload that is not valid
JSON is sent as a JSON string. -wait and -log as for ax trigger: exit 0
SUCCESS, 1 FAILED, 3 TERMINATED, 4 CANCELED or SKIPPED.

Examples:
	ax submit close_order -payload '{"order":42}' -delay 30m -key order-42
	ax submit remind -payload "call back" -at 2026-12-01T09:00:00+08:00
`)
	c.fs.StringVar(&c.payload, "payload", "", "payload (JSON, or text sent as a JSON string)")
	c.fs.DurationVar(&c.delay, "delay", 0, "due after this long")
	c.fs.StringVar(&c.at, "at", "", "due at this time (RFC 3339, or 2006-01-02T15:04 in UTC)")
	c.fs.StringVar(&c.key, "key", "", "idempotency key: resubmitting it returns the existing instance")
	c.wait.register(c.fs)
	return c
}

func (c *submitCmd) Run(ctx context.Context, args []string) error {
	name, err := c.parseOne(args, "task name")
	if err != nil {
		return err
	}
	if err := c.wait.check(); err != nil {
		return fmt.Errorf("submit: %w", err)
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
	cl, err := c.cf.client()
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
	fmt.Fprintf(c.m.Stdout, "%s %s due %s%s\n", res.ID, res.State, res.ScheduledAt.Format(model.TimeLayout), existing)
	return c.wait.follow(ctx, c.m, cl, res.ID)
}
