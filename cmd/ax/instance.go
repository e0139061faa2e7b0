package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

type triggerCommand struct{}

func (*triggerCommand) Usage() string {
	return `
Usage: ax trigger NAME [-p key=value]... [-key IDEMPOTENCY_KEY]

Runs a task now (an instance with source "api").

Examples:
	ax trigger daily_report -p date=2026-11-29
`
}

func (c *triggerCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("trigger", c.Usage())
	var cf clientFlags
	cf.register(fs)
	var params multiFlag
	fs.Var(&params, "p", "parameter key=value (repeatable)")
	key := fs.String("key", "", "idempotency key: a repeated trigger with it returns the first instance")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("trigger: want exactly one task name")
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
	return nil
}

type submitCommand struct{}

func (*submitCommand) Usage() string {
	return `
Usage: ax submit NAME [-payload JSON_OR_TEXT] (-delay D | -at TIME) [-key IDEMPOTENCY_KEY]

Creates a delayed instance of a task, due after -delay (leader time) or at
-at (RFC 3339). A payload that is not valid JSON is sent as a JSON string.

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
	at := fs.String("at", "", "due at this RFC 3339 time")
	key := fs.String("key", "", "idempotency key: resubmitting it returns the existing instance")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("submit: want exactly one task name")
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
		t, err := time.Parse(time.RFC3339Nano, *at)
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
	return nil
}

type instanceCommand struct{}

func (*instanceCommand) Usage() string {
	return `
Usage: ax instance <subcommand> [flags] [args]

Subcommands:
	list [-task NAME] [-state STATE] [-since TIME] [-limit N] [-json]
	get ID                 an instance with its attempts and events
	log [-f] ID            the latest attempt's output (-f follows it)
	approve|reject ID [-comment TEXT]
	cancel ID              a SCHEDULED, READY, BLOCKED, WAITING_APPROVAL or RETRYING instance
	terminate ID           kill a RUNNING attempt's process group

Examples:
	ax instance list -task daily_report -state FAILED
	ax instance get 0000000000a30001
`
}

func (c *instanceCommand) Run(ctx context.Context, args []string) error {
	sub, args, fs, cf, err := subcommand("instance", c.Usage(), args)
	if err != nil {
		return err
	}
	task := fs.String("task", "", "only this task's instances (list)")
	state := fs.String("state", "", "only instances in this state (list)")
	since := fs.String("since", "", "only instances created at or after this RFC 3339 time (list)")
	limit := fs.Int("limit", 50, "at most this many (list)")
	asJSON := fs.Bool("json", false, "print JSON (list)")
	follow := fs.Bool("f", false, "follow the output (log)")
	comment := fs.String("comment", "", "comment recorded with the decision")
	consistent := fs.Bool("consistent", false, "linearizable read")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	var opts []client.ReadOption
	if *consistent {
		opts = append(opts, client.Consistent())
	}
	switch sub {
	case "approve", "reject", "cancel", "terminate":
		if fs.NArg() != 1 {
			return fmt.Errorf("instance %s: want exactly one instance id", sub)
		}
		state, err := cl.Decide(ctx, fs.Arg(0), client.Decision(sub), *comment)
		if err != nil {
			return err
		}
		fmt.Printf("%s %s\n", fs.Arg(0), state)
		return nil
	case "log":
		if fs.NArg() != 1 {
			return fmt.Errorf("instance log: want exactly one instance id")
		}
		return instanceLog(ctx, cl, fs.Arg(0), *follow)
	case "get":
		if fs.NArg() != 1 {
			return fmt.Errorf("instance get: want exactly one instance id")
		}
		in, err := cl.GetInstance(ctx, fs.Arg(0), opts...)
		if err != nil {
			return err
		}
		return printJSON(in)
	case "list":
		f := model.InstanceFilter{Task: *task, State: strings.ToUpper(*state), Limit: *limit}
		if *since != "" {
			t, err := time.Parse(time.RFC3339Nano, *since)
			if err != nil {
				return fmt.Errorf("instance list: -since: %w", err)
			}
			f.Since = model.Time{Time: t}
		}
		l, err := cl.ListInstances(ctx, f, opts...)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(l)
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTASK\tSOURCE\tSTATE\tSCHEDULED\tFIRED\tATTEMPTS")
		for _, in := range l.Instances {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", in.ID, in.Task, in.Source, in.State,
				fmtTime(in.ScheduledAt), fmtTime(in.FiredAt), in.Attempts)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if l.NextCursor != "" {
			fmt.Printf("(more: -cursor %s)\n", l.NextCursor)
		}
		return nil
	default:
		return fmt.Errorf("instance: unknown subcommand %q", sub)
	}
}

func fmtTime(t model.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(model.TimeLayout)
}

// instanceLog prints an instance's output; with follow it keeps printing
// new output until the attempt ends.
func instanceLog(ctx context.Context, cl *client.Client, id string, follow bool) error {
	var offset int64
	for {
		l, err := cl.InstanceLog(ctx, id, offset)
		if err != nil {
			return err
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
twice is harmless. TIME is RFC 3339 or YYYY-MM-DD (midnight UTC); to must
be in the past. At most 10,000 fire times per call.

Examples:
	ax backfill daily_report -from 2026-11-01 -to 2026-11-29
`
}

func (c *backfillCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("backfill", c.Usage())
	var cf clientFlags
	cf.register(fs)
	from := fs.String("from", "", "first fire time (inclusive)")
	to := fs.String("to", "", "last fire time (inclusive)")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("backfill: want exactly one task name")
	}
	var req model.BackfillRequest
	for _, p := range []struct {
		flag, v string
		dst     *model.Time
	}{{"from", *from, &req.From}, {"to", *to, &req.To}} {
		t, err := parseWhen(p.v)
		if err != nil {
			return fmt.Errorf("backfill: -%s: %w", p.flag, err)
		}
		*p.dst = model.Time{Time: t}
	}
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

func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("required")
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
