package operate

import (
	"context"
	"fmt"
	"io"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model/channel"
)

// ChannelUsage is the help of ax channel and of its subcommands.
const ChannelUsage = `
Usage: ax channel <subcommand> [flags] [args]

Subcommands:
	apply -f FILE|-   create or replace a notification channel from JSON (its name in the file)
	list              the channels (secrets and passwords only as set or not)
	get NAME          one channel (-o json: as apply takes it)
	delete NAME       delete a channel

A channel is {"name", "type": "webhook"|"slack"|"email"|"dingtalk"|"wecom"|
"feishu", "url", "secret" (webhook; signing: dingtalk, feishu), "email": {"to",
"from", "smtp", "username", "password", "tls"}, "match", "minSeverity",
"events"}. Alerts of tasks whose labels hold every pair of
"match" go to it (an empty match takes every alert), and so do those of
tasks that name it in policy.notify. An omitted secret or password keeps
the stored one, so "get -o json" output can be edited and applied again.
list and get take -o table|json|yaml (-json: -o json).

Examples:
	ax channel apply -f ops-webhook.json
	echo '{"name":"chat","type":"slack","url":"https://hooks.slack.com/services/T/B/X","minSeverity":"critical"}' | ax channel apply -f -
	echo '{"name":"ding","type":"dingtalk","url":"https://oapi.dingtalk.com/robot/send?access_token=T","secret":"SEC..."}' | ax channel apply -f -
	ax channel list
	ax channel get ops
	ax channel delete chat
`

// channelApplyCmd is ax channel apply.
type channelApplyCmd struct {
	command.ClientBase
	file string
}

// NewChannelApply makes ax channel apply.
func NewChannelApply(io *command.IO) command.Command {
	c := &channelApplyCmd{}
	c.Init(io, "channel apply", ChannelUsage)
	c.FS.StringVar(&c.file, "f", "", "channel JSON file, or - for stdin")
	return c
}

func (c *channelApplyCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, nil)
	if err != nil {
		return err
	}
	var ch channel.Channel
	if err := c.IO.ReadJSON(c.file, &ch); err != nil {
		return fmt.Errorf("channel apply: %w", err)
	}
	if ch.Name == "" {
		return fmt.Errorf("channel apply: name is required in the file")
	}
	out, err := cl.PutChannel(ctx, &ch)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "channel %s applied (version %d)\n", out.Name, out.Version)
	return nil
}

// channelListCmd is ax channel list.
type channelListCmd struct {
	command.ClientBase
	out view.Output
}

// NewChannelList makes ax channel list.
func NewChannelList(io *command.IO) command.Command {
	c := &channelListCmd{}
	c.Init(io, "channel list", ChannelUsage)
	c.CF.RegisterStale(c.FS, false)
	c.out.Register(c.FS)
	return c
}

func (c *channelListCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, &c.out)
	if err != nil {
		return err
	}
	l, err := cl.ListChannels(ctx)
	if err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, l, func(w io.Writer) error { return view.Channels(w, l.Channels) })
}

// channelGetCmd is ax channel get.
type channelGetCmd struct {
	command.ClientBase
	out view.Output
}

// NewChannelGet makes ax channel get.
func NewChannelGet(io *command.IO) command.Command {
	c := &channelGetCmd{}
	c.Init(io, "channel get", ChannelUsage)
	c.CF.RegisterStale(c.FS, false)
	c.out.Register(c.FS)
	return c
}

func (c *channelGetCmd) Run(ctx context.Context, args []string) error {
	cl, name, err := c.ConnectOne(args, &c.out, "channel name")
	if err != nil {
		return err
	}
	ch, err := cl.GetChannel(ctx, name)
	if err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, ch, func(w io.Writer) error { return view.Channels(w, []channel.Channel{*ch}) })
}

// channelDeleteCmd is ax channel delete.
type channelDeleteCmd struct{ command.ClientBase }

// NewChannelDelete makes ax channel delete.
func NewChannelDelete(io *command.IO) command.Command {
	c := &channelDeleteCmd{}
	c.Init(io, "channel delete", ChannelUsage)
	return c
}

func (c *channelDeleteCmd) Run(ctx context.Context, args []string) error {
	cl, name, err := c.ConnectOne(args, nil, "channel name")
	if err != nil {
		return err
	}
	if _, err := cl.DeleteChannel(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "deleted %s\n", name)
	return nil
}
