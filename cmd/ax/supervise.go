package main

import (
	"context"
	"errors"
	"os"

	"github.com/ax-scheduler/ax/action"
)

// superviseCommand is the helper an `ax executor` starts next to itself
// (action.Reaper): it stops the processes of the executor's running
// attempts when the executor dies, kill -9 included. Not for people.
type superviseCommand struct{}

func (*superviseCommand) Usage() string {
	return `
Usage: ax executor-supervise -session S [-grace 5s]

Started by ax executor; not meant to be run by hand. Reads the executor's
running attempts from stdin and, when stdin ends (the executor is gone),
stops them: SIGTERM, then SIGKILL after -grace.
`
}

func (c *superviseCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("executor-supervise", c.Usage())
	session := fs.String("session", "", "the executor's session mark")
	grace := fs.Duration("grace", action.DefaultKillGrace, "SIGTERM to SIGKILL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *session == "" {
		return errors.New("executor-supervise: -session is required")
	}
	// The signal context of main is not ours to follow: this helper
	// outlives whatever stops the executor, and ends with its stdin.
	if code := action.ReaperMain(os.Stdin, *session, max(*grace, 0)); code != 0 {
		os.Exit(code)
	}
	return nil
}

// reaperArgv is the command line of this binary's reaper helper, nil if
// this binary cannot be found.
func reaperArgv() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, "executor-supervise"}
}
