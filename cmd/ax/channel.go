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
	"text/tabwriter"

	"github.com/ax-scheduler/ax/model"
)

type channelCommand struct{}

func (*channelCommand) Usage() string {
	return `
Usage: ax channel <subcommand> [flags] [args]

Subcommands:
	apply -f FILE|-   create or replace a notification channel from JSON (its name in the file)
	list              the channels (secrets and passwords only as set or not)
	get NAME          one channel as JSON
	delete NAME       delete a channel

A channel is {"name", "type": "webhook"|"slack"|"email", "url", "secret",
"email": {"to", "from", "smtp", "username", "password", "tls"}, "match",
"minSeverity", "events"}. Alerts of tasks whose labels hold every pair of
"match" go to it (an empty match takes every alert), and so do those of
tasks that name it in policy.notify. An omitted secret or password keeps
the stored one, so "get" output can be edited and applied again.

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
	file := fs.String("f", "", "channel JSON file, or - for stdin (apply)")
	asJSON := fs.Bool("json", false, "print JSON (list)")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	switch sub {
	case "apply":
		var data []byte
		switch *file {
		case "":
			return fmt.Errorf("channel apply: -f FILE (or - for stdin) is required")
		case "-":
			data, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
		default:
			data, err = os.ReadFile(*file)
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
		if *asJSON {
			return printJSON(l)
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tTYPE\tTO\tMATCH\tMIN SEVERITY\tEVENTS\tSECRET")
		for _, ch := range l.Channels {
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ch.Name, ch.Type, to, matchText(ch.Match), ch.MinSeverity, strings.Join(ch.Events, ","), secret)
		}
		return tw.Flush()
	case "get":
		if fs.NArg() != 1 {
			return fmt.Errorf("channel get: want exactly one channel name")
		}
		ch, err := cl.GetChannel(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		return printJSON(ch)
	case "delete":
		if fs.NArg() != 1 {
			return fmt.Errorf("channel delete: want exactly one channel name")
		}
		if _, err := cl.DeleteChannel(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Printf("deleted %s\n", fs.Arg(0))
		return nil
	default:
		return fmt.Errorf("channel: unknown subcommand %q", sub)
	}
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
