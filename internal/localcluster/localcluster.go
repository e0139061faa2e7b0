// Package localcluster starts real ax agent processes on free loopback
// ports in a temporary directory: the multi-process tests and ax-bench use
// it. Every process is stopped by Close.
package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ax-scheduler/ax/client"
)

// Config configures a local cluster.
type Config struct {
	// Binary is the ax executable.
	Binary string
	// NoSubcommand starts Binary with the agent's flags alone, without
	// the "agent" word before them: a service that embeds a node (package
	// embed) and takes ax agent's flags as its own.
	NoSubcommand bool
	// Nodes is the number of nodes to start (default 3).
	Nodes int
	// Dir holds every node's data dir and log file.
	Dir string
	// Args are extra flags for every agent.
	Args []string
	// FirstArgs are extra flags for the first (bootstrapping) agent only.
	FirstArgs []string
	// NodeArgs are extra flags for one agent, by node id, after Args.
	NodeArgs map[string][]string
	// Token protects the cluster when set.
	Token string
	// Output, when set, also receives every agent's log lines.
	Output io.Writer
	// NodeEnv adds variables ("K=V") to the environment of one agent's
	// process, by node id (the fault hook's AX_FAULT_CLOCK_OFFSET, say).
	NodeEnv map[string][]string
	// TLSDir, when set, makes a TLS cluster: the directory holds the CA
	// (ax-ca.pem, ax-ca-key.pem) and each node's NAME.pem and
	// NAME-key.pem, and the clients' certificate (ClientCert); whatever
	// is missing is created. Agents get -tls-*; executors and clients
	// trust the CA and present the client certificate.
	TLSDir string
	// Listen, when set, gives agent id its HTTP and Raft addresses in
	// place of free loopback ports (e.g. an address in a network
	// namespace; such agents also need -insecure or TLS).
	Listen func(id string) (httpAddr, raftAddr string)
	// Wrap, when set, returns a command prefix for the process named id
	// (an agent's node id or an executor's name): the process runs as
	// Wrap(id) followed by Binary and its arguments, e.g.
	// ip netns exec NS env AX_FAULT_CLOCK_OFFSET=+10m. The prefix must
	// exec the binary, so that signals reach it. It is asked at every
	// start, so a restart may run differently.
	Wrap func(id string) []string
}

// Cluster is a set of running ax agents.
type Cluster struct {
	cfg       Config
	tls       *tls.Config // clients' TLS, nil without TLSDir
	mu        sync.Mutex
	Nodes     []*Node
	executors []*Node
}

// Node is one agent process.
type Node struct {
	ID       string
	HTTPAddr string
	RaftAddr string
	DataDir  string
	LogPath  string
	args     []string
	cfg      *Config
	tls      *tls.Config

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// FreePort returns a loopback address with a port that was free a moment
// ago. The port lies outside the kernel's ephemeral range, so no outgoing
// connection can take it before the agent binds it (a port picked by
// listening on :0 can, and then the agent fails with "address already in
// use"), and it is never handed out twice by this process.
func FreePort() (string, error) {
	portMu.Lock()
	defer portMu.Unlock()
	lo, hi := portRange()
	for range 1000 {
		p := lo + rand.IntN(hi-lo)
		if portsGiven[p] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		portsGiven[p] = true
		return ln.Addr().String(), nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

var (
	portMu     sync.Mutex
	portsGiven = map[int]bool{}
)

// portRange is [lo, hi) below the ephemeral range (Linux's
// ip_local_port_range; 32768 elsewhere, below the BSD, macOS and Windows
// defaults too), or above it when it starts too low.
func portRange() (lo, hi int) {
	ephLo, ephHi := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			l, err1 := strconv.Atoi(f[0])
			h, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil && l <= h {
				ephLo, ephHi = l, h
			}
		}
	}
	return outside(ephLo, ephHi)
}

// outside returns [lo, hi) ports for FreePort given the ephemeral range.
func outside(ephLo, ephHi int) (lo, hi int) {
	if ephLo >= 12000 {
		return 10000, ephLo
	}
	if ephHi <= 63000 {
		return ephHi + 1, 65536
	}
	return 1024, 65536 // no room outside it: any unprivileged port
}

// Start starts cfg.Nodes agents: the first bootstraps, the others join it.
// It returns when every node is a member and a leader is elected.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	c := &Cluster{cfg: cfg}
	if cfg.TLSDir != "" {
		tc, err := setupTLS(cfg.TLSDir)
		if err != nil {
			return nil, err
		}
		c.tls = tc
	}
	for i := 0; i < cfg.Nodes; i++ {
		if _, err := c.AddNode(ctx); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// AddNode starts one more agent, joining the cluster if it has members,
// and waits until it is a member.
func (c *Cluster) AddNode(ctx context.Context) (*Node, error) {
	c.mu.Lock()
	id := fmt.Sprintf("n%d", len(c.Nodes)+1)
	var join []string
	for _, n := range c.Nodes {
		join = append(join, n.HTTPAddr)
	}
	c.mu.Unlock()
	httpAddr, raftAddr, err := c.listen(id)
	if err != nil {
		return nil, err
	}
	n := &Node{
		ID: id, HTTPAddr: httpAddr, RaftAddr: raftAddr,
		DataDir: filepath.Join(c.cfg.Dir, id), LogPath: filepath.Join(c.cfg.Dir, id+".log"), cfg: &c.cfg, tls: c.tls,
	}
	n.args = []string{"agent", "-node", id, "-data", n.DataDir, "-http", httpAddr, "-raft", raftAddr}
	if c.cfg.NoSubcommand {
		n.args = n.args[1:]
	}
	if len(join) > 0 {
		n.args = append(n.args, "-join", strings.Join(join, ","))
	} else {
		n.args = append(n.args, c.cfg.FirstArgs...)
	}
	if c.cfg.Token != "" {
		n.args = append(n.args, "-token", c.cfg.Token)
	}
	if c.tls != nil {
		tlsArgs, err := nodeTLSArgs(c.cfg.TLSDir, id)
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, tlsArgs...)
	}
	n.args = append(n.args, c.cfg.Args...)
	n.args = append(n.args, c.cfg.NodeArgs[id]...)
	if err := n.Start(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.Nodes = append(c.Nodes, n)
	c.mu.Unlock()
	if err := WaitMember(ctx, n.Client(), id, httpAddr); err != nil {
		return nil, fmt.Errorf("localcluster: %s did not join: %w (log %s)", id, err, n.LogPath)
	}
	return n, nil
}

// WaitMember waits up to 30 s until the node c talks to sees a leader,
// and node id as a member at httpAddr.
func WaitMember(ctx context.Context, c *client.Client, id, httpAddr string) error {
	return WaitFor(ctx, 30*time.Second, func() error {
		st, err := c.Cluster(ctx)
		if err != nil {
			return err
		}
		if st.Leader == "" {
			return errors.New("no leader")
		}
		for _, m := range st.Nodes {
			if m.ID == id && m.HTTPAddr == httpAddr {
				return nil
			}
		}
		return fmt.Errorf("%s not yet a member with its address", id)
	})
}

// listen returns the addresses of agent id: Config.Listen's, or free
// loopback ports.
func (c *Cluster) listen(id string) (httpAddr, raftAddr string, err error) {
	if c.cfg.Listen != nil {
		httpAddr, raftAddr = c.cfg.Listen(id)
		return httpAddr, raftAddr, nil
	}
	if httpAddr, err = FreePort(); err != nil {
		return "", "", err
	}
	raftAddr, err = FreePort()
	return httpAddr, raftAddr, err
}

// Start (re)starts the node's process with its original command line.
func (n *Node) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("localcluster: %s already running", n.ID)
	}
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	argv := append([]string{n.cfg.Binary}, n.args...)
	if n.cfg.Wrap != nil {
		argv = append(n.cfg.Wrap(n.ID), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if env := n.cfg.NodeEnv[n.ID]; len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var out io.Writer = logf
	if n.cfg.Output != nil {
		out = io.MultiWriter(logf, n.cfg.Output)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("localcluster: start %s: %w", n.ID, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(done)
	}()
	n.cmd, n.done = cmd, done
	return nil
}

// Kill stops the node with SIGKILL (a crash) and waits for it to exit.
func (n *Node) Kill() { n.signal(syscall.SIGKILL) }

// Stop stops the node with SIGTERM (graceful) and waits for it to exit.
func (n *Node) Stop() { n.signal(syscall.SIGTERM) }

func (n *Node) signal(sig syscall.Signal) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Signal sends sig to the node's process (SIGHUP: reload certificates)
// without waiting for anything.
func (n *Node) Signal(sig os.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("localcluster: %s is not running", n.ID)
	}
	return n.cmd.Process.Signal(sig)
}

// PID returns the process id of the node's process, 0 when it is not
// running.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Running reports whether the node's process is up.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// Client returns a client talking to this node only.
func (n *Node) Client() *client.Client {
	return client.New(client.Config{Addrs: []string{n.HTTPAddr}, TLS: n.tls, Token: n.cfg.Token, RetryFor: 2 * time.Second})
}

// Client returns a client that fails over across every node.
func (c *Cluster) Client() *client.Client { return client.New(c.ClientConfig()) }

// ClientConfig returns the configuration of a client of addrs (every
// node's when none is given) with the cluster's TLS and token.
func (c *Cluster) ClientConfig(addrs ...string) client.Config {
	if len(addrs) == 0 {
		addrs = c.Addrs()
	}
	return client.Config{Addrs: addrs, TLS: c.tls, Token: c.cfg.Token}
}

// Members returns the agents, in start order (Nodes, read under the
// lock AddNode takes).
func (c *Cluster) Members() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Node(nil), c.Nodes...)
}

// Addrs returns every node's HTTP address.
func (c *Cluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.HTTPAddr)
	}
	return out
}

// Leader waits until the running nodes agree on a leader and returns it.
// Follower waits (up to within) for a leader and returns a node that is
// not it, with the leader.
func (c *Cluster) Follower(ctx context.Context, within time.Duration) (follower, leader *Node, err error) {
	if leader, err = c.Leader(ctx, within); err != nil {
		return nil, nil, err
	}
	for _, n := range c.Nodes {
		if n != leader {
			follower = n
		}
	}
	return follower, leader, nil
}

func (c *Cluster) Leader(ctx context.Context, within time.Duration) (*Node, error) {
	var leader *Node
	err := WaitFor(ctx, within, func() error {
		c.mu.Lock()
		nodes := append([]*Node(nil), c.Nodes...)
		c.mu.Unlock()
		var id string
		for _, n := range nodes {
			if !n.Running() {
				continue
			}
			h, err := n.Client().Health(ctx)
			if err != nil {
				return err
			}
			if h.Leader == "" || (id != "" && h.Leader != id) {
				return fmt.Errorf("no agreed leader (%s says %q)", n.ID, h.Leader)
			}
			id = h.Leader
		}
		for _, n := range nodes {
			if n.ID == id && n.Running() {
				leader = n
				return nil
			}
		}
		return fmt.Errorf("leader %q is not a running node", id)
	})
	return leader, err
}

// Close kills every node and executor.
func (c *Cluster) Close() {
	c.mu.Lock()
	nodes := append(append([]*Node(nil), c.Nodes...), c.executors...)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.Kill() }()
	}
	wg.Wait()
}

// WaitFor polls cond until it returns nil or within passes.
func WaitFor(ctx context.Context, within time.Duration, cond func() error) error {
	deadline := time.Now().Add(within)
	var err error
	for {
		if err = cond(); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met within %s: %w", within, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// StartExecutor starts an `ax executor` process connected to every node.
// It is stopped by Close like the agents.
func (c *Cluster) StartExecutor(name string, args ...string) (*Node, error) {
	return c.StartExecutorAt(name, c.Addrs(), args...)
}

// StartExecutorAt starts an `ax executor` process that knows only addrs.
func (c *Cluster) StartExecutorAt(name string, addrs []string, args ...string) (*Node, error) {
	n := &Node{ID: name, LogPath: filepath.Join(c.cfg.Dir, name+".log"), cfg: &c.cfg, tls: c.tls}
	n.args = append([]string{"executor", "-server", strings.Join(addrs, ","), "-name", name}, args...)
	if c.cfg.Token != "" {
		n.args = append(n.args, "-token", c.cfg.Token)
	}
	if c.tls != nil {
		cert, key := ClientCert(c.cfg.TLSDir)
		n.args = append(n.args, "-ca-cert", CAFile(c.cfg.TLSDir), "-client-cert", cert, "-client-key", key)
	}
	if err := n.Start(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.executors = append(c.executors, n)
	c.mu.Unlock()
	return n, nil
}

// Build compiles the ax binary to out with the given build tags (e.g.
// "faults" for the test-only clock hook); AX_TEST_RACE=1 in the
// environment adds -race. The compiler's output is in the error.
func Build(out string, tags ...string) error {
	return BuildCommand(out, "github.com/ax-scheduler/ax/cmd/ax", tags...)
}

// BuildCommand compiles the command pkg of this module (an import path,
// github.com/ax-scheduler/ax/cmd/ax-bench say) to out, as Build does ax.
// It runs go build, so it needs the Go toolchain and, outside the module's
// tree, fails.
func BuildCommand(out, pkg string, tags ...string) error {
	if err := goBuild(out, pkg, tags); err != nil {
		return err
	}
	return statSources(pkg, tags)
}

// goBuild runs go build for BuildCommand and Install.
func goBuild(out, pkg string, tags []string) error {
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if os.Getenv("AX_TEST_RACE") != "" {
		args = append(args, "-race")
	}
	msg, err := exec.Command("go", append(args, pkg)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s %s: %v\n%s", strings.Join(args, " "), pkg, err, msg)
	}
	return nil
}

// statSources looks at every source file of this module that pkg is built
// from (sourceFiles). A test that builds ax this way runs it as a separate
// process, which go test's result cache cannot see; it does see the files
// a test stats, so a change to any of them runs the test again instead of
// answering "(cached)".
func statSources(pkg string, tags []string) error {
	files, err := sourceFiles(pkg, tags)
	for _, f := range files {
		_, _ = os.Stat(f)
	}
	return err
}

// sourceFiles lists the files of this module that pkg is built from: the
// Go files and embedded files of its packages in the module, go.mod and
// go.sum.
func sourceFiles(pkg string, tags []string) ([]string, error) {
	args := []string{"list", "-deps", "-f",
		`{{with .Module}}{{if .Main}}{{.GoMod}}{{end}}{{end}}{{"\n"}}{{if and .Module .Module.Main}}{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{end}}`}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	out, err := exec.Command("go", append(args, pkg)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", pkg, err)
	}
	var files []string
	seen := map[string]bool{}
	for _, f := range strings.Split(string(out), "\n") {
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		files = append(files, f)
		if strings.HasSuffix(f, "go.mod") {
			files = append(files, strings.TrimSuffix(f, "mod")+"sum")
		}
	}
	if len(files) < 10 {
		return files, fmt.Errorf("go list %s: only %d source files of this module", pkg, len(files))
	}
	return files, nil
}
