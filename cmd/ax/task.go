package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/ax-scheduler/ax/model"
)

type taskCommand struct{}

func (*taskCommand) Usage() string {
	return `
Usage: ax task <subcommand> [flags] [args]

Subcommands:
	apply -f FILE|DIR|-    create or update tasks from JSON or YAML files
	                       [-dry-run] [-prune -l k=v] (ax task apply -h)
	export [-l k=v] [-o yaml|json] [-d DIR]
	                       write the definitions as apply reads them
	list [-label k=v] [-paused true|false] [-w]
	                       name, trigger, next fire, last run, paused, labels
	get NAME               the definition, recent runs and next fire times
	pause NAME | resume NAME | delete NAME
	history NAME           every version: who, when, what
	events NAME            the task's events (misfires...)

list, get, history and events take -o table|json|yaml (-json: -o json);
list -w redraws the table on every change until Ctrl-C. Reads are
linearizable (they see every acknowledged write, through any node);
-stale reads the node's own state instead, answered even without a
leader.

Examples:
	ax task apply -f daily_report.json
	ax task apply -f tasks/ -dry-run
	ax task export -l team=data -d tasks/
	echo '{"name":"hello","trigger":{"type":"cron","expression":"@every 10s"},"action":{"type":"shell","command":"echo hi"}}' | ax task apply -f -
	ax task list -label team=data
	ax task get daily_report -o yaml
	ax task history daily_report
`
}

func (c *taskCommand) Run(ctx context.Context, args []string) error {
	sub, args, fs, cf, err := subcommand("task", c.Usage(), args)
	if err != nil {
		return err
	}
	switch sub {
	case "apply":
		return runApply(ctx, fs, cf, args)
	case "export":
		return runExport(ctx, fs, cf, args)
	}
	var (
		labels multiFlag
		paused string
		out    output
		watch  bool
	)
	switch sub {
	case "list":
		fs.Var(&labels, "label", "only tasks with this label k=v (repeatable)")
		fs.StringVar(&paused, "paused", "", "only paused (true) or active (false) tasks")
		fs.BoolVar(&watch, "w", false, "watch: redraw the table on every change, until Ctrl-C")
		cf.registerStale(fs, false)
		out.register(fs)
	case "get", "history", "events":
		cf.registerStale(fs, true)
		out.register(fs)
	case "pause", "resume", "delete":
	default:
		return unknownSub("task", sub)
	}
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return fmt.Errorf("task %s: %w", sub, err)
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	if sub == "list" {
		f, err := taskFilter(labels, paused)
		if err != nil {
			return err
		}
		if watch {
			return watchTable(ctx, cl, out, nil, func(ctx context.Context, w io.Writer) error { return taskList(ctx, cl, f, out, w) })
		}
		return taskList(ctx, cl, f, out, os.Stdout)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("task %s: want exactly one task name", sub)
	}
	name := fs.Arg(0)
	switch sub {
	case "get":
		t, err := cl.GetTask(ctx, name)
		if err != nil {
			return err
		}
		return out.print(os.Stdout, t, func(w io.Writer) error { return writeTask(ctx, cl, w, t) })
	case "events":
		ev, err := cl.TaskEvents(ctx, name)
		if err != nil {
			return err
		}
		return out.print(os.Stdout, ev, func(w io.Writer) error { return writeEvents(w, ev.Events) })
	case "history":
		h, err := cl.TaskHistory(ctx, name)
		if err != nil {
			return err
		}
		return out.print(os.Stdout, h, func(w io.Writer) error { return writeHistory(w, h) })
	}
	var res *model.WriteResult
	switch sub {
	case "pause":
		res, err = cl.PauseTask(ctx, name)
	case "resume":
		res, err = cl.ResumeTask(ctx, name)
	case "delete":
		res, err = cl.DeleteTask(ctx, name)
	}
	if err != nil {
		return err
	}
	fmt.Printf("%s %sd (version %d)\n", name, sub, res.Version)
	return nil
}

func describeTrigger(t model.Trigger) string {
	switch t.Type {
	case model.TriggerCron:
		return fmt.Sprintf("cron %q %s", t.Expression, t.Timezone)
	case model.TriggerInterval:
		return "every " + t.Every.Std().String()
	case model.TriggerOnce:
		if t.At != nil {
			return "once at " + t.At.UTC().Format(model.TimeLayout)
		}
	}
	return t.Type
}

func joinLabels(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// pairs turns key=value entries into a map (nil when there are none);
// what names the flag in the error.
func (m multiFlag) pairs(what string) (map[string]string, error) {
	var out map[string]string
	for _, p := range m {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("%s wants key=value, got %q", what, p)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out, nil
}
