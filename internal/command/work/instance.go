package work

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/follow"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// InstanceUsage is the help of ax instance and of its subcommands.
const InstanceUsage = `
Usage: ax instance <subcommand> [flags] [args]

Subcommands:
	list [-task NAME] [-state STATE] [-source SOURCE] [-since TIME] [-until TIME] [-limit N] [-cursor ID] [-w]
	                       newest first: id, task, source, state, scheduled time, age,
	                       attempt, how long it took, executor
	get ID                 an instance with its attempts and events (and its shard grid)
	shards [-all] ID       a sharded instance's shards: a grid of their states and the
	                       shards that did not succeed (-all: every shard)
	log [-f] ID            the latest attempt's output (-f follows it)
	result ID              the JSON result its successful attempt published
	                       (-o json|yaml: with the instance, task and attempt)
	approve|reject ID [-comment TEXT]
	cancel ID              a SCHEDULED, READY, BLOCKED, WAITING_APPROVAL or RETRYING instance
	terminate ID           kill a RUNNING attempt's process group
	rerun ID [-wait [-log]]
	                       run a finished instance again: same instance, new attempts

list, get and rerun take -o table|json|yaml (-json: -o json); list -w redraws
the table on every change until Ctrl-C. list shows the newest 50
(-limit N; 0 for all), following the server's pages; -cursor ID starts
after that instance (a list that stops short names it). TIME is a
duration ago (30m, 1h, 2d), a date (2006-01-02), a time in UTC
(2006-01-02T15:04) or RFC 3339. list, get, log and result read linearizably
(an instance just triggered through another node is found); -stale
reads the node's own state instead, answered even without a leader.

Examples:
	ax instance list -task daily_report -state FAILED -since 2d
	ax instance list -w
	ax instance get 0000000000a30001
	ax instance result 0000000000a30001
	ax instance rerun 0000000000a30001 -wait -log
`

// instanceListCmd is ax instance list.
type instanceListCmd struct {
	command.ClientBase
	f            model.InstanceFilter
	since, until cli.TimeFlag
	limit        int
	watch        bool
	out          view.Output
}

// NewInstanceList makes ax instance list.
func NewInstanceList(io *command.IO) command.Command {
	c := &instanceListCmd{}
	c.Init(io, "instance list", InstanceUsage)
	c.FS.StringVar(&c.f.Task, "task", "", "only this task's instances")
	c.FS.StringVar(&c.f.State, "state", "", "only instances in this state")
	c.FS.StringVar(&c.f.Source, "source", "", "only instances of this source (cron, api, delay, backfill...)")
	c.FS.Var(&c.since, "since", "only instances created at or after TIME: "+cli.TimeForms)
	c.FS.Var(&c.until, "until", "only instances created before TIME (the same forms)")
	c.FS.IntVar(&c.limit, "limit", 50, "at most this many (0: all)")
	c.FS.StringVar(&c.f.Cursor, "cursor", "", "start after this instance id (a previous list's next cursor)")
	c.FS.BoolVar(&c.watch, "w", false, "watch: redraw the table on every change, until Ctrl-C")
	c.CF.RegisterStale(c.FS, true)
	c.out.Register(c.FS)
	return c
}

func (c *instanceListCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, &c.out)
	if err != nil {
		return err
	}
	if c.FS.NArg() > 0 {
		return fmt.Errorf("instance list: unexpected arguments %q (filters are flags: -task, -state...)", c.FS.Args())
	}
	if c.limit < 0 {
		return fmt.Errorf("instance list: -limit wants 0 (all) or more")
	}
	f := c.f
	f.State = strings.ToUpper(f.State)
	f.Since, f.Until = model.Time{Time: c.since.Time}, model.Time{Time: c.until.Time}
	if c.watch {
		var q url.Values
		if f.Task != "" {
			q = url.Values{"task": {f.Task}}
		}
		return c.IO.Screen().Watch(ctx, cl, c.out, q, func(ctx context.Context, w io.Writer) error {
			return view.InstanceList(ctx, cl, f, c.limit, c.out, w, nil)
		})
	}
	return view.InstanceList(ctx, cl, f, c.limit, c.out, c.IO.Stdout, c.IO.Stderr)
}

// instanceGetCmd is ax instance get.
type instanceGetCmd struct {
	command.ClientBase
	out view.Output
}

// NewInstanceGet makes ax instance get.
func NewInstanceGet(io *command.IO) command.Command {
	c := &instanceGetCmd{}
	c.Init(io, "instance get", InstanceUsage)
	c.CF.RegisterStale(c.FS, true)
	c.out.Register(c.FS)
	return c
}

func (c *instanceGetCmd) Run(ctx context.Context, args []string) error {
	cl, id, err := c.ConnectOne(args, &c.out, "instance id")
	if err != nil {
		return err
	}
	in, err := cl.GetInstance(ctx, id)
	if err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, in, func(w io.Writer) error {
		if err := view.Instance(w, in); err != nil || in.Shards == nil {
			return err
		}
		l, err := cl.Shards(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "\nShards:")
		return view.ShardGrid(w, l, false)
	})
}

// instanceShardsCmd is ax instance shards.
type instanceShardsCmd struct {
	command.ClientBase
	all bool
	out view.Output
}

// NewInstanceShards makes ax instance shards.
func NewInstanceShards(io *command.IO) command.Command {
	c := &instanceShardsCmd{}
	c.Init(io, "instance shards", InstanceUsage)
	c.FS.BoolVar(&c.all, "all", false, "list every shard, not only those that did not succeed")
	c.CF.RegisterStale(c.FS, true)
	c.out.Register(c.FS)
	return c
}

func (c *instanceShardsCmd) Run(ctx context.Context, args []string) error {
	cl, id, err := c.ConnectOne(args, &c.out, "instance id")
	if err != nil {
		return err
	}
	l, err := cl.Shards(ctx, id)
	if err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, l, func(w io.Writer) error { return view.ShardGrid(w, l, c.all) })
}

// instanceLogCmd is ax instance log.
type instanceLogCmd struct {
	command.ClientBase
	follow bool
}

// NewInstanceLog makes ax instance log.
func NewInstanceLog(io *command.IO) command.Command {
	c := &instanceLogCmd{}
	c.Init(io, "instance log", InstanceUsage)
	c.CF.RegisterStale(c.FS, false)
	c.FS.BoolVar(&c.follow, "f", false, "follow the output until the instance ends")
	return c
}

func (c *instanceLogCmd) Run(ctx context.Context, args []string) error {
	cl, id, err := c.ConnectOne(args, nil, "instance id")
	if err != nil {
		return err
	}
	return follow.Log(ctx, cl, id, c.follow, c.IO.Stdout, c.IO.Stderr)
}

// instanceResultCmd is ax instance result.
type instanceResultCmd struct {
	command.ClientBase
	out view.Output
}

// NewInstanceResult makes ax instance result.
func NewInstanceResult(io *command.IO) command.Command {
	c := &instanceResultCmd{}
	c.Init(io, "instance result", InstanceUsage)
	c.CF.RegisterStale(c.FS, true)
	c.out.Register(c.FS)
	return c
}

func (c *instanceResultCmd) Run(ctx context.Context, args []string) error {
	cl, id, err := c.ConnectOne(args, &c.out, "instance id")
	if err != nil {
		return err
	}
	r, err := cl.InstanceResult(ctx, id)
	if err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, r, func(w io.Writer) error {
		var b bytes.Buffer
		if err := json.Indent(&b, r.Result, "", "  "); err != nil {
			return err
		}
		b.WriteByte('\n')
		_, err := b.WriteTo(w)
		return err
	})
}

// instanceDecideCmd is ax instance approve, reject, cancel and terminate.
type instanceDecideCmd struct {
	command.ClientBase
	decision string
	comment  string
}

// NewInstanceDecide makes ax instance DECISION (approve, reject, cancel, terminate).
func NewInstanceDecide(decision string) func(*command.IO) command.Command {
	return func(io *command.IO) command.Command {
		c := &instanceDecideCmd{decision: decision}
		c.Init(io, "instance "+decision, InstanceUsage)
		c.FS.StringVar(&c.comment, "comment", "", "comment recorded with the decision")
		return c
	}
}

func (c *instanceDecideCmd) Run(ctx context.Context, args []string) error {
	cl, id, err := c.ConnectOne(args, nil, "instance id")
	if err != nil {
		return err
	}
	state, err := cl.Decide(ctx, id, client.Decision(c.decision), c.comment)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "%s %s\n", id, state)
	return nil
}
