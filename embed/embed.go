// Package embed runs an ax node inside a Go service (seed 000's embedded
// kernel: a service that imports ax is a scheduling node). Three replicas
// of the service, each started with embed.Start, form a cluster exactly
// as three `ax agent` processes do; the service's own Go functions run
// the tasks whose action is {"type": "sdk", "handler": NAME}.
//
//	node, err := embed.Start(ctx, embed.Config{Args: []string{
//		"-node", "orders-1", "-data", "/var/lib/orders/ax",
//		"-http", "10.0.0.1:7070", "-raft", "10.0.0.1:7071",
//		"-join", "10.0.0.2:7070,10.0.0.3:7070", "-insecure"}})
//	if err != nil { ... }
//	defer node.Close(context.Background())
//	node.Handle("expire-order", func(ctx context.Context, job worker.Job) error { ... })
//	node.Client().PutTask(ctx, &model.Task{...})
//
// Config.Args are `ax agent`'s flags, checked the same way (the same
// defaults, the config file with -config, AX_TOKEN and the other
// variables): whatever the docs say of an agent holds for an embedded
// node. Its embedded executor is on (shell and http actions too) unless
// the Args say -executor false.
package embed

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/agent/config"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/worker"
)

// Config configures an embedded node.
type Config struct {
	// Args are ax agent's flags, as its command line takes them.
	Args []string
	// Getenv reads the environment the settings may come from (AX_TOKEN,
	// AX_EXECUTOR_TOKEN...); nil is os.Getenv.
	Getenv func(string) string
	// Logger receives the node's logs; nil logs at the Args' -log-level
	// (info) to LogOutput (nil: stderr).
	Logger    hclog.Logger
	LogOutput io.Writer
	// Handlers are the service's sdk handlers, by name, from the start;
	// Node.Handle adds more.
	Handlers map[string]worker.Handler
	// Token is the credential Client uses (default: the Args' -token).
	Token string
	// Version is what the node reports as its build (default "embedded").
	Version string
}

// Node is a running embedded node.
type Node struct {
	a      *agent.Agent
	client *client.Client
}

// Start starts a node with cfg and returns once it serves (it may not
// have a leader yet: a new cluster's first node elects itself, a joining
// one reaches its peers in the background, as ax agent does). ctx bounds
// the start only.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var s config.Settings
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.Register(fs)
	warnings, err := s.Parse(fs, cfg.Args, getenv)
	if err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, errors.New("embed: unexpected arguments in Config.Args: " + fs.Arg(0))
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "executor" })
	if !set {
		s.Executor = "true" // the service's handlers run here, joined or not
	}
	ac, more, err := s.Config()
	if err != nil {
		return nil, err
	}
	ac.Logger = cfg.Logger
	if ac.Logger == nil {
		out := cfg.LogOutput
		if out == nil {
			out = os.Stderr
		}
		ac.Logger = hclog.New(&hclog.LoggerOptions{Name: "ax", Level: hclog.LevelFromString(s.LogLevel), JSONFormat: s.LogJSON, Output: out})
	}
	for _, w := range append(warnings, more...) {
		ac.Logger.Warn(w)
	}
	ac.Handlers, ac.Version = cfg.Handlers, cfg.Version
	if ac.Version == "" {
		ac.Version = "embedded"
	}
	a, err := agent.New(ac)
	if err != nil {
		return nil, err
	}
	token := cfg.Token
	if token == "" {
		token = ac.Token
	}
	cl := client.New(client.Config{Addrs: []string{a.HTTPAddr()}, Token: token, TLS: a.ClientTLS(), RetryFor: 10 * time.Second})
	return &Node{a: a, client: cl}, nil
}

// Handle registers (or replaces) the sdk handler name: the node's
// executor runs the attempts of tasks whose action names it. Register
// handlers before their work arrives: the executor restarts with the new
// set, and attempts it was running are drained as at a shutdown.
func (n *Node) Handle(name string, h worker.Handler) error { return n.a.Handle(name, h) }

// Client returns a client of this node's API (the node forwards what its
// leader must answer): the SDK's client, for tasks, triggers,
// submissions and reads.
func (n *Node) Client() *client.Client { return n.client }

// Addr is the node's HTTP address.
func (n *Node) Addr() string { return n.a.HTTPAddr() }

// Close drains the node's executor (running attempts get the agent's
// -executor-shutdown-grace), hands leadership to a follower if it leads,
// and stops the node. ctx bounds the hand-over.
func (n *Node) Close(ctx context.Context) error { return n.a.Shutdown(ctx) }
