package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/follow"
)

// Main is one run of the ax program, Litestream style: the commands read
// Stdin, write to Stdout and Stderr and read the environment with Getenv,
// never the process's own, so that tests run many Mains at once. Only the
// function main touches the process's streams and calls os.Exit.
type Main struct {
	command.IO
}

// NewMain returns a Main on the process's standard streams and
// environment.
func NewMain() *Main {
	return &Main{command.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Setenv: os.Setenv}}
}

// Run runs the command args name (the arguments after "ax"): the usage
// without arguments (flag.ErrHelp, as exit status 2), help at every
// level, or a leaf of the command table.
func (m *Main) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(m.Stdout, usage())
		return flag.ErrHelp
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	if cli.IsHelp(args[0]) { // ax help, ax help task
		return m.help(args[1:])
	}
	e := lookup(args[0])
	if e == nil {
		return unknownCommand(args[0])
	}
	path, rest := args[:1], args[1:]
	if e.subs != nil {
		switch {
		case len(rest) == 0:
			fmt.Fprint(m.Stdout, strings.TrimLeft(e.usage, "\n"))
			return flag.ErrHelp
		case len(rest) == 1 && cli.IsHelp(rest[0]):
			fmt.Fprint(m.Stdout, strings.TrimLeft(e.usage, "\n"))
			return nil
		}
		sub, n := e.sub(rest)
		if sub == nil {
			// A group inside the group ("acl token", "tls ca"): its help.
			k := e.prefix(rest)
			switch {
			case k > 0 && len(rest) == k:
				fmt.Fprint(m.Stdout, strings.TrimLeft(e.usage, "\n"))
				return flag.ErrHelp
			case k > 0 && len(rest) == k+1 && cli.IsHelp(rest[k]):
				fmt.Fprint(m.Stdout, strings.TrimLeft(e.usage, "\n"))
				return nil
			}
			return unknownSub(e, rest[:k], rest[k])
		}
		e, path, rest = sub, args[:1+n], rest[n:]
	}
	err := e.new(&m.IO).Run(ctx, rest)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil // -h was asked for and printed
	case err != nil && cli.IsFlagError(err):
		return fmt.Errorf("%w (ax %s -h for help)", err, strings.Join(path, " "))
	}
	return err
}

// help answers "ax help [COMMAND]": ax's usage, or the command's.
func (m *Main) help(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(m.Stdout, usage())
		return nil
	}
	e := lookup(args[0])
	if e == nil {
		return unknownCommand(args[0])
	}
	u := e.usage
	if e.new != nil {
		u = e.new(&m.IO).Usage()
	}
	fmt.Fprint(m.Stdout, strings.TrimLeft(u, "\n"))
	return nil
}

// Exit reports err on Stderr, as "ax: ERROR" and "ax: hint: HINT", and
// returns the exit status of the run that ended with it after sig (nil:
// no signal): see exitCode. A usage request, a command ended by a signal
// (context.Canceled after Ctrl-C or SIGTERM) and a command.ExitStatus
// say nothing more.
func (m *Main) Exit(err error, sig os.Signal) int {
	code := exitCode(err, sig)
	var quiet command.ExitStatus
	if err != nil && code != 2 && !(sig != nil && errors.Is(err, context.Canceled)) && !errors.As(err, &quiet) {
		fmt.Fprintln(m.Stderr, "ax:", err)
		if h := cli.Hint(err); h != "" {
			fmt.Fprintln(m.Stderr, "ax: hint:", h)
		}
	}
	return code
}

// exitCode is the process's exit status: an command.ExitStatus's own (the
// command chose it, signal or not); 130 after Ctrl-C (SIGINT, as shells
// report it), whatever else the command made of it; 2 for a usage
// request without a command; an instance's outcome after -wait (see
// follow.OutcomeError); 1 for an error; 0 otherwise, and after SIGTERM
// when the command stopped because of it (SIGTERM asks an agent or an
// executor to stop cleanly, and ends a watch -w quietly), but for a
// -wait, which it ends quietly with 143 (follow.StoppedError): the
// instance did not end while it waited, and a script must not take that
// for a success.
func exitCode(err error, sig os.Signal) int {
	var oe *follow.OutcomeError
	var es command.ExitStatus
	var stopped *follow.StoppedError
	switch {
	case errors.As(err, &es):
		return int(es)
	case sig == os.Interrupt:
		return 130
	case sig != nil && errors.As(err, &stopped):
		return 143 // a -wait stopped by SIGTERM did not see its instance end: not a success
	case sig != nil && errors.Is(err, context.Canceled):
		return 0 // SIGTERM: asked to stop, stopped (a watch, a -wait)
	case errors.Is(err, flag.ErrHelp):
		return 2
	case errors.As(err, &oe):
		return oe.Code()
	case err != nil:
		return 1
	}
	return 0
}

// unknownCommand is the one-line answer to a command ax does not have; the
// benchmarks, which ax had as "ax bench", are in ax-bench.
func unknownCommand(name string) error {
	if name == "bench" {
		return fmt.Errorf("unknown command %q: the benchmarks are in ax-bench (go run ./cmd/ax-bench -h)", name)
	}
	var names []string
	for _, e := range commands() {
		if !e.hidden {
			names = append(names, e.name)
		}
	}
	return fmt.Errorf("unknown command %q%s (ax help lists them)", name, cli.DidYouMean(name, names))
}

// unknownSub is the error of a word sub that no subcommand of group e
// has after the words of prefix ("acl token" + "craete"), with the
// nearest subcommand word when one is close.
func unknownSub(e *entry, prefix []string, sub string) error {
	var words []string
	for _, s := range e.subs {
		if w := strings.Fields(s.name); len(w) > len(prefix) && slices.Equal(w[:len(prefix)], prefix) && !slices.Contains(words, w[len(prefix)]) {
			words = append(words, w[len(prefix)])
		}
	}
	return fmt.Errorf("%s: unknown subcommand %q%s (ax %s -h lists them)",
		strings.Join(append([]string{e.name}, prefix...), " "), sub, cli.DidYouMean(sub, words), e.name)
}
