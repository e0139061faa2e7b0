// Package command is the frame of ax's leaf commands: the streams and
// environment a run gives them (IO), the interface a leaf implements
// (Command), and what leaves share: a flag set and help (Base), the
// client flags and a client of them (ClientBase), -wait and -log
// (WaitFlags), an exit status without a message (ExitStatus). The
// command table and dispatch are cmd/ax's; the leaves live by domain in
// the packages under this one.
package command

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/follow"
	"github.com/ax-scheduler/ax/internal/view"
)

// IO is what one run of ax gives its commands, Litestream style: they
// read Stdin, write to Stdout and Stderr and read the environment with
// Getenv, never the process's own, so that tests run many at once.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads an environment variable (AX_ADDR, AX_TOKEN...).
	Getenv func(key string) string
	// Setenv sets a variable of the environment the processes a command
	// starts inherit (an executor's shell tasks, which may run ax).
	Setenv func(key, value string) error
}

// Screen is where a watched table (-w) is drawn.
func (o *IO) Screen() view.Screen { return view.Screen{Stdout: o.Stdout, Stderr: o.Stderr} }

// Command is a leaf of ax's command table: a command that runs. Its
// constructor builds its flag set and registers its flags, so that help
// and completion read its flags without running it.
type Command interface {
	// Flags is the command's flag set.
	Flags() *flag.FlagSet
	// Usage is the command's help with examples (-h adds the flags).
	Usage() string
	// Run runs the command with the arguments after its name.
	Run(ctx context.Context, args []string) error
}

// Base is what every command has: its IO, its flag set, its help.
type Base struct {
	IO    *IO
	FS    *flag.FlagSet
	usage string
}

// Init makes b the command name of io with help usage: -h prints usage
// and the flags on io.Stdout.
func (b *Base) Init(io *IO, name, usage string) {
	b.IO, b.usage = io, usage
	b.FS = cli.NewFlagSet(name, usage, io.Stdout)
}

// Flags is the command's flag set.
func (b *Base) Flags() *flag.FlagSet { return b.FS }

// Usage is the command's help.
func (b *Base) Usage() string { return b.usage }

// Parse parses args, flags before or after the arguments.
func (b *Base) Parse(args []string) error { return cli.ParseInterspersed(b.FS, args) }

// ParseOne parses args, which hold one argument besides the flags: what
// names it in the error.
func (b *Base) ParseOne(args []string, what string) (string, error) {
	if err := b.Parse(args); err != nil {
		return "", err
	}
	return b.Arg(what)
}

// Arg is the one argument the command was given, what naming it in the
// error.
func (b *Base) Arg(what string) (string, error) {
	if b.FS.NArg() != 1 {
		return "", fmt.Errorf("%s: want exactly one %s", b.FS.Name(), what)
	}
	return b.FS.Arg(0), nil
}

// ClientBase is a command that talks to a cluster: Base and the client
// flags.
type ClientBase struct {
	Base
	CF ClientFlags
}

// Init is Base's, with the client flags registered. The command must not
// be copied afterwards: its flags point into it.
func (c *ClientBase) Init(io *IO, name, usage string) {
	c.Base.Init(io, name, usage)
	c.CF.Register(c.FS, io.Getenv)
}

// Connect parses args, checks out (when the command has -o) and returns
// a client of the flags.
func (c *ClientBase) Connect(args []string, out *view.Output) (*client.Client, error) {
	if err := c.Parse(args); err != nil {
		return nil, err
	}
	if out != nil {
		if err := out.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", c.FS.Name(), err)
		}
	}
	return c.CF.Client()
}

// ConnectOne is Connect for a command of one argument: what names it in
// the error.
func (c *ClientBase) ConnectOne(args []string, out *view.Output, what string) (*client.Client, string, error) {
	cl, err := c.Connect(args, out)
	if err != nil {
		return nil, "", err
	}
	arg, err := c.Arg(what)
	return cl, arg, err
}

// ClientFlags are the flags every client command takes (-addr defaulting
// to $AX_ADDR or 127.0.0.1:7070), and -stale for the commands that read.
type ClientFlags struct {
	cli.ClientFlags
	stale bool
}

// staleHelp is the -stale flag's help.
const staleHelp = "read the node's own state without asking the leader: answered even without a leader, but it may miss recent writes (reads are linearizable by default)"

// RegisterStale registers -stale, which makes every read of the command
// stale (?stale=true), and -consistent when old is set: the former
// opt-in to linearizable reads, now the default, accepted for scripts.
func (c *ClientFlags) RegisterStale(fs *flag.FlagSet, old bool) {
	fs.BoolVar(&c.stale, "stale", false, staleHelp)
	if old {
		fs.Bool("consistent", false, "ignored: reads are linearizable by default (kept for scripts)")
	}
}

// Register registers the client flags on fs, their defaults from the
// environment as getenv reads it.
func (c *ClientFlags) Register(fs *flag.FlagSet, getenv func(string) string) {
	c.Getenv = getenv
	c.ClientFlags.Register(fs, cli.DefaultAddr(getenv), "server HTTP address(es), comma-separated (env AX_ADDR)")
}

// dialTimeout bounds connecting to one address: an unreachable one is
// given up this fast and the next one tried.
const dialTimeout = 2 * time.Second

// Client returns a client of the flags' addresses that records this user
// as the actor of its changes. Each call tries each address once (a
// person is waiting): an unreachable address costs at most dialTimeout
// and a server's 503 is final once every address gave one.
func (c *ClientFlags) Client() (*client.Client, error) {
	cfg, err := c.Config()
	if err != nil {
		return nil, err
	}
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg.Actor, cfg.DialTimeout, cfg.FailFast, cfg.StaleReads = actor(getenv), dialTimeout, true, c.stale
	return client.New(cfg), nil
}

// actor names the person behind CLI changes in task history: $USER (or
// the current user) at this host.
func actor(getenv func(string) string) string {
	name := getenv("USER")
	if u, err := user.Current(); err == nil && name == "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if name == "" {
		name = "unknown"
	}
	return name + "@" + host
}

// waitHelp is the -wait flag's help, with the exit statuses.
const waitHelp = "follow the instance to its end and exit with its outcome: 0 SUCCESS, 1 FAILED, 3 TERMINATED, 4 CANCELED or SKIPPED"

// WaitFlags are -wait and -log of the commands that create an instance.
type WaitFlags struct {
	Wait, Log bool
}

// Register registers -wait and -log on fs.
func (f *WaitFlags) Register(fs *flag.FlagSet) {
	fs.BoolVar(&f.Wait, "wait", false, waitHelp)
	fs.BoolVar(&f.Log, "log", false, "with -wait: print the instance's output as it comes")
}

// Check refuses -log without -wait.
func (f *WaitFlags) Check() error {
	if f.Log && !f.Wait {
		return fmt.Errorf("-log goes with -wait")
	}
	return nil
}

// Follow follows instance id when -wait is set, on io's streams.
func (f *WaitFlags) Follow(ctx context.Context, io *IO, cl *client.Client, id string) error {
	if !f.Wait {
		return nil
	}
	return follow.Instance(ctx, cl, id, f.Log, io.Stdout, io.Stderr)
}

// ExitStatus ends ax with this status and no message: the command has
// said what there was to say (ax approval request, rejected).
type ExitStatus int

func (e ExitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
