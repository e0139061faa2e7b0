// Package cli holds what ax's command-line programs (ax and ax-bench)
// share: the subcommand interface and help answers, a flag set that
// returns its errors, the flags a client of a cluster takes (addresses,
// token, TLS) turned into a client.Config, time values of flags (-since
// 2d, -at 2026-12-01T09:00), and the hint that names the fix of a failed
// command (Hint).
package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Command is one subcommand, Litestream style.
type Command interface {
	// Run runs the command with the arguments after its name.
	Run(ctx context.Context, args []string) error
	// Usage is the command's help text, with examples.
	Usage() string
}

// IsHelp reports whether arg asks for help: -h, -help, --help or help.
func IsHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// Help answers a help request, given the arguments after it: with none it
// writes the program's usage to w, with a command's name that command's
// usage; another name is unknown's error.
func Help(w io.Writer, usage string, cmds map[string]Command, args []string, unknown func(name string) error) error {
	if len(args) == 0 {
		_, err := fmt.Fprint(w, usage)
		return err
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		return unknown(args[0])
	}
	_, err := fmt.Fprint(w, strings.TrimLeft(cmd.Usage(), "\n"))
	return err
}
