package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/ax-scheduler/ax/action/proc"
	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/action"
)

// superviseCmd is the helper an `ax executor` starts next to itself
// (package action/proc): it stops the processes of the executor's running
// attempts when the executor dies, kill -9 included. Not for people.
type superviseCmd struct {
	command.Base
	session string
	grace   time.Duration
}

func newSuperviseCmd(io *command.IO) command.Command {
	c := &superviseCmd{}
	c.Init(io, "executor-supervise", `
Usage: ax executor-supervise -session S [-grace 5s]

Started by ax executor; not meant to be run by hand. Reads the executor's
running attempts from stdin and, when stdin ends (the executor is gone),
stops them: SIGTERM, then SIGKILL after -grace.
`)
	c.FS.StringVar(&c.session, "session", "", "the executor's session mark")
	c.FS.DurationVar(&c.grace, "grace", action.DefaultKillGrace, "SIGTERM to SIGKILL")
	return c
}

func (c *superviseCmd) Run(ctx context.Context, args []string) error {
	if err := c.FS.Parse(args); err != nil {
		return err
	}
	if c.session == "" {
		return errors.New("executor-supervise: -session is required")
	}
	// The signal context of main is not ours to follow: this helper
	// outlives whatever stops the executor, and ends with its stdin.
	if code := proc.ReaperMain(c.IO.Stdin, c.session, max(c.grace, 0)); code != 0 {
		return command.ExitStatus(code)
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
