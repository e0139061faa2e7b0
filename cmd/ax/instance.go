package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

type triggerCommand struct{}

func (*triggerCommand) Usage() string {
	return `
Usage: ax trigger NAME [-p key=value]... [-key IDEMPOTENCY_KEY] [-wait [-log]]

Runs a task now (an instance with source "api") and prints its id and
state. With -wait it follows the instance to its end (through leader
changes) and exits with its outcome: 0 SUCCESS, 1 FAILED, 3 TERMINATED,
4 CANCELED or SKIPPED; -log prints its output meanwhile.

Examples:
	ax trigger daily_report -p date=2026-11-29
	ax trigger daily_report -wait -log && echo done
`
}

func (c *triggerCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("trigger", c.Usage())
	var cf clientFlags
	cf.register(fs)
	var params multiFlag
	fs.Var(&params, "p", "parameter key=value (repeatable)")
	key := fs.String("key", "", "idempotency key: a repeated trigger with it returns the first instance")
	var wf waitFlags
	wf.register(fs)
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("trigger: want exactly one task name")
	}
	if err := wf.check(); err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	req := model.TriggerRequest{IdempotencyKey: *key}
	var err error
	if req.Params, err = params.pairs("trigger: -p"); err != nil {
		return err
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	res, err := cl.Trigger(ctx, fs.Arg(0), req)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\n", res.ID, res.State)
	return wf.follow(ctx, cl, res.ID)
}

type submitCommand struct{}

func (*submitCommand) Usage() string {
	return `
Usage: ax submit NAME [-payload JSON_OR_TEXT] (-delay D | -at TIME) [-key IDEMPOTENCY_KEY] [-wait [-log]]

Creates a delayed instance of a task, due after -delay (leader time) or at
-at (RFC 3339, or 2006-01-02T15:04 in UTC). A payload that is not valid
JSON is sent as a JSON string. -wait and -log as for ax trigger: exit 0
SUCCESS, 1 FAILED, 3 TERMINATED, 4 CANCELED or SKIPPED.

Examples:
	ax submit close_order -payload '{"order":42}' -delay 30m -key order-42
	ax submit remind -payload "call back" -at 2026-12-01T09:00:00+08:00
`
}

func (c *submitCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("submit", c.Usage())
	var cf clientFlags
	cf.register(fs)
	payload := fs.String("payload", "", "payload (JSON, or text sent as a JSON string)")
	delay := fs.Duration("delay", 0, "due after this long")
	at := fs.String("at", "", "due at this time (RFC 3339, or 2006-01-02T15:04 in UTC)")
	key := fs.String("key", "", "idempotency key: resubmitting it returns the existing instance")
	var wf waitFlags
	wf.register(fs)
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("submit: want exactly one task name")
	}
	if err := wf.check(); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	req := model.SubmitRequest{Delay: model.Duration(*delay), IdempotencyKey: *key}
	if *payload != "" {
		if json.Valid([]byte(*payload)) {
			req.Payload = json.RawMessage(*payload)
		} else {
			b, _ := json.Marshal(*payload)
			req.Payload = b
		}
	}
	if *at != "" {
		t, err := parseDate(*at)
		if err != nil {
			return fmt.Errorf("submit: -at: %w", err)
		}
		req.At = &model.Time{Time: t}
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	res, err := cl.Submit(ctx, fs.Arg(0), req)
	if err != nil {
		return err
	}
	existing := ""
	if res.Existing {
		existing = " (existing)"
	}
	fmt.Printf("%s %s due %s%s\n", res.ID, res.State, res.ScheduledAt.Format(model.TimeLayout), existing)
	return wf.follow(ctx, cl, res.ID)
}

type instanceCommand struct{}

func (*instanceCommand) Usage() string {
	return `
Usage: ax instance <subcommand> [flags] [args]

Subcommands:
	list [-task NAME] [-state STATE] [-source SOURCE] [-since TIME] [-until TIME] [-limit N] [-cursor ID] [-w]
	                       newest first: id, task, source, state, scheduled time, age,
	                       attempt, how long it took, executor
	get ID                 an instance with its attempts and events
	log [-f] ID            the latest attempt's output (-f follows it)
	approve|reject ID [-comment TEXT]
	cancel ID              a SCHEDULED, READY, BLOCKED, WAITING_APPROVAL or RETRYING instance
	terminate ID           kill a RUNNING attempt's process group

list and get take -o table|json|yaml (-json: -o json); list -w redraws
the table on every change until Ctrl-C. list shows the newest 50
(-limit N; 0 for all), following the server's pages; -cursor ID starts
after that instance (a list that stops short names it). TIME is a
duration ago (30m, 1h, 2d), a date (2006-01-02), a time in UTC
(2006-01-02T15:04) or RFC 3339. list, get and log read linearizably
(an instance just triggered through another node is found); -stale
reads the node's own state instead, answered even without a leader.

Examples:
	ax instance list -task daily_report -state FAILED -since 2d
	ax instance list -w
	ax instance get 0000000000a30001
`
}

func (c *instanceCommand) Run(ctx context.Context, args []string) error {
	sub, args, fs, cf, err := subcommand("instance", c.Usage(), args)
	if err != nil {
		return err
	}
	var (
		f            model.InstanceFilter
		since, until timeFlag
		limit        int
		watch        bool
		out          output
		follow       bool
		comment      string
	)
	switch sub {
	case "list":
		fs.StringVar(&f.Task, "task", "", "only this task's instances")
		fs.StringVar(&f.State, "state", "", "only instances in this state")
		fs.StringVar(&f.Source, "source", "", "only instances of this source (cron, api, delay, backfill...)")
		fs.Var(&since, "since", "only instances created at or after TIME: "+timeForms)
		fs.Var(&until, "until", "only instances created before TIME (the same forms)")
		fs.IntVar(&limit, "limit", 50, "at most this many (0: all)")
		fs.StringVar(&f.Cursor, "cursor", "", "start after this instance id (a previous list's next cursor)")
		fs.BoolVar(&watch, "w", false, "watch: redraw the table on every change, until Ctrl-C")
		cf.registerStale(fs, true)
		out.register(fs)
	case "get":
		cf.registerStale(fs, true)
		out.register(fs)
	case "log":
		cf.registerStale(fs, false)
		fs.BoolVar(&follow, "f", false, "follow the output until the instance ends")
	case "approve", "reject", "cancel", "terminate":
		fs.StringVar(&comment, "comment", "", "comment recorded with the decision")
	default:
		return unknownSub("instance", sub)
	}
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return fmt.Errorf("instance %s: %w", sub, err)
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	if sub == "list" {
		if fs.NArg() > 0 {
			return fmt.Errorf("instance list: unexpected arguments %q (filters are flags: -task, -state...)", fs.Args())
		}
		if limit < 0 {
			return fmt.Errorf("instance list: -limit wants 0 (all) or more")
		}
		f.State = strings.ToUpper(f.State)
		f.Since, f.Until = model.Time{Time: since.t}, model.Time{Time: until.t}
		if watch {
			var q url.Values
			if f.Task != "" {
				q = url.Values{"task": {f.Task}}
			}
			return watchTable(ctx, cl, out, q, func(ctx context.Context, w io.Writer) error {
				return instanceList(ctx, cl, f, limit, out, w, true)
			})
		}
		return instanceList(ctx, cl, f, limit, out, os.Stdout, false)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("instance %s: want exactly one instance id", sub)
	}
	id := fs.Arg(0)
	switch sub {
	case "get":
		in, err := cl.GetInstance(ctx, id)
		if err != nil {
			return err
		}
		return out.print(os.Stdout, in, func(w io.Writer) error { return writeInstance(w, in) })
	case "log":
		return instanceLog(ctx, cl, id, follow)
	default: // approve, reject, cancel, terminate
		state, err := cl.Decide(ctx, id, client.Decision(sub), comment)
		if err != nil {
			return err
		}
		fmt.Printf("%s %s\n", id, state)
		return nil
	}
}

// instanceLog prints an instance's output; with follow it keeps printing
// new output until the attempt ends.
func instanceLog(ctx context.Context, cl *client.Client, id string, follow bool) error {
	var offset int64
	attempt := 0
	for {
		l, err := cl.InstanceLog(ctx, id, offset)
		if err != nil {
			return err
		}
		if l.Attempt != attempt {
			// A retry's output starts over at offset 0; this answer was
			// asked from the old attempt's offset.
			if attempt != 0 {
				fmt.Fprintf(os.Stderr, "--- attempt %d\n", l.Attempt)
			}
			resumed := offset > 0
			attempt, offset = l.Attempt, 0
			if resumed {
				continue
			}
		}
		if l.Offset+int64(len(l.Output)) > offset {
			skip := max(offset-l.Offset, 0)
			if skip < int64(len(l.Output)) {
				fmt.Print(l.Output[skip:])
			}
			offset = l.Offset + int64(len(l.Output))
		}
		if !follow || !l.Live {
			if follow && (l.State == model.StateReady || l.State == model.StateScheduled || l.State == model.StateRetrying) {
				// Not started yet: wait for it.
			} else {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}

type backfillCommand struct{}

func (*backfillCommand) Usage() string {
	return `
Usage: ax backfill NAME -from TIME -to TIME

Creates one instance (source "backfill") per fire time of the task in
[from, to], skipping times that already have an instance, so running it
twice is harmless. TIME is RFC 3339, a date (2006-01-02, midnight UTC), a
time in UTC (2006-01-02T15:04) or a duration ago (30m, 2d); to must be in
the past. At most 10,000 fire times per call.

Examples:
	ax backfill daily_report -from 2026-11-01 -to 2026-11-29
`
}

func (c *backfillCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("backfill", c.Usage())
	var cf clientFlags
	cf.register(fs)
	var from, to timeFlag
	fs.Var(&from, "from", "first fire time (inclusive): "+timeForms)
	fs.Var(&to, "to", "last fire time (inclusive), the same forms")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("backfill: want exactly one task name")
	}
	if from.t.IsZero() || to.t.IsZero() {
		return fmt.Errorf("backfill: -from and -to are required")
	}
	req := model.BackfillRequest{From: model.Time{Time: from.t}, To: model.Time{Time: to.t}}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	res, err := cl.Backfill(ctx, fs.Arg(0), req)
	if err != nil {
		return err
	}
	for _, id := range res.Created {
		fmt.Println(id)
	}
	fmt.Printf("%d created, %d already had an instance\n", len(res.Created), res.Existing)
	return nil
}
