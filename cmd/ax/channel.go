package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/ax-scheduler/ax/model"
)

type channelCommand struct{}

func (*channelCommand) Usage() string {
	return `
Usage: ax channel <subcommand> [flags] [args]

Subcommands:
	apply -f FILE|-   create or replace a notification channel from JSON (its name in the file)
	list              the channels (secrets and passwords only as set or not)
	get NAME          one channel (-o json: as apply takes it)
	delete NAME       delete a channel

A channel is {"name", "type": "webhook"|"slack"|"email", "url", "secret",
"email": {"to", "from", "smtp", "username", "password", "tls"}, "match",
"minSeverity", "events"}. Alerts of tasks whose labels hold every pair of
"match" go to it (an empty match takes every alert), and so do those of
tasks that name it in policy.notify. An omitted secret or password keeps
the stored one, so "get -o json" output can be edited and applied again.
list and get take -o table|json|yaml (-json: -o json).

Examples:
	ax channel apply -f ops-webhook.json
	echo '{"name":"chat","type":"slack","url":"https://hooks.slack.com/services/T/B/X","minSeverity":"critical"}' | ax channel apply -f -
	ax channel list
	ax channel get ops
	ax channel delete chat
`
}

func (c *channelCommand) Run(ctx context.Context, args []string) error {
	sub, args, fs, cf, err := subcommand("channel", c.Usage(), args)
	if err != nil {
		return err
	}
	var file string
	var out output
	switch sub {
	case "apply":
		fs.StringVar(&file, "f", "", "channel JSON file, or - for stdin")
	case "list", "get":
		cf.registerStale(fs, false)
		out.register(fs)
	case "delete":
	default:
		return unknownSub("channel", sub)
	}
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return fmt.Errorf("channel %s: %w", sub, err)
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	switch sub {
	case "apply":
		var data []byte
		switch file {
		case "":
			return fmt.Errorf("channel apply: -f FILE (or - for stdin) is required")
		case "-":
			data, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
		default:
			data, err = os.ReadFile(file)
		}
		if err != nil {
			return fmt.Errorf("channel apply: %w", err)
		}
		var ch model.Channel
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ch); err != nil {
			return fmt.Errorf("channel apply: %w", err)
		}
		if ch.Name == "" {
			return fmt.Errorf("channel apply: name is required in the file")
		}
		out, err := cl.PutChannel(ctx, &ch)
		if err != nil {
			return err
		}
		fmt.Printf("channel %s applied (version %d)\n", out.Name, out.Version)
		return nil
	case "list":
		l, err := cl.ListChannels(ctx)
		if err != nil {
			return err
		}
		return out.print(os.Stdout, l, func(w io.Writer) error { return writeChannels(w, l.Channels) })
	case "get":
		if fs.NArg() != 1 {
			return fmt.Errorf("channel get: want exactly one channel name")
		}
		ch, err := cl.GetChannel(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		return out.print(os.Stdout, ch, func(w io.Writer) error { return writeChannels(w, []model.Channel{*ch}) })
	default: // delete
		if fs.NArg() != 1 {
			return fmt.Errorf("channel delete: want exactly one channel name")
		}
		if _, err := cl.DeleteChannel(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Printf("deleted %s\n", fs.Arg(0))
		return nil
	}
}

// writeChannels prints channels as a table (secrets only as set or not).
func writeChannels(w io.Writer, chans []model.Channel) error {
	tw := newTable(w)
	row(tw, "NAME", "TYPE", "TO", "MATCH", "MIN SEVERITY", "EVENTS", "SECRET")
	for _, ch := range chans {
		to, secret := ch.URL, "-"
		if ch.Email != nil {
			to = strings.Join(ch.Email.To, ",")
			if ch.Email.PasswordSet {
				secret = "password set"
			}
		}
		if ch.SecretSet {
			secret = "set"
		}
		row(tw, ch.Name, ch.Type, orDash(to), matchText(ch.Match), orDash(ch.MinSeverity), orDash(strings.Join(ch.Events, ",")), secret)
	}
	return tw.Flush()
}

func matchText(m map[string]string) string {
	if len(m) == 0 {
		return "(every alert)"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return strings.Join(keys, ",")
}
