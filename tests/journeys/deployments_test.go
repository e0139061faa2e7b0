package journeys

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/tlsutil"
	"github.com/ax-scheduler/ax/worker"
)

// The deployments of the journey matrix (journeymatrix_test.go): every
// user journey must work in each of them (DESIGN: "every user journey
// works in every deployment"). A deployment is started once and shared
// by its journeys, each of which uses task and executor names of its own.

// deploymentKind is one implementation of the deployment type: its name
// in the matrix and how it starts.
type deploymentKind struct {
	name  string
	start func(t *testing.T) *deployment
}

// deploymentKinds are the matrix's columns.
var deploymentKinds = []deploymentKind{
	{"one-node", startOneNode},
	{"three-via-follower", startThreeViaFollower},
	{"tls-acl", startTLSACL},
}

// deployment is a running ax as a user meets it: the node the user
// addresses, the user's credentials, the executors that run the
// journeys' work, and how to start more executors and workers.
type deployment struct {
	name string
	c    *localcluster.Cluster
	// entry is the node the user, the CLI and the deployment's ax
	// executors address: a follower when there are several nodes.
	entry *localcluster.Node
	// leaderID is the node that leads while the deployment is whole
	// (heal puts leadership back there).
	leaderID string
	// clientTLS is what a user's client trusts: the CA only (a token is
	// the credential), nil without TLS; caFile is that CA's file.
	clientTLS *tls.Config
	caFile    string
	// admin, user and operator are tokens ("" without ACLs): admin makes
	// tokens, the user (a writer) does what a journey does but decide,
	// which the operator (an operator, the on-call) does.
	admin, user, operator string
	// runners run the journeys' work; runners[0] unless a journey
	// tries each.
	runners []runner

	mu       sync.Mutex
	execToks map[string]string // executor tokens made, by executor name
}

// runner is an executor that runs a deployment's work.
type runner struct {
	// executor is its name (an embedded executor's is its node's id).
	executor string
	// labels are its labels: tasks that carry them as
	// policy.executorLabels run on it and on nothing else.
	labels map[string]string
	// host is the agent an embedded executor runs in; nil for an ax
	// executor process.
	host *localcluster.Node
}

// route returns task with policy.executorLabels set to the runner's.
func (r runner) route(task *model.Task) *model.Task {
	task.Policy.ExecutorLabels = r.labels
	return task
}

// labelFlag is labels as ax's -labels flag takes them.
func labelFlag(labels map[string]string) string {
	var kv []string
	for k, v := range labels {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// startOneNode is the try-it-out deployment: one agent with the embedded
// executor it has by default (-executor auto), addressed directly.
func startOneNode(t *testing.T) *deployment {
	c := startCluster(t, 1, withArgs("-executor", "auto", "-executor-labels", "runner=embedded", "-executor-shutdown-grace", "2s"))
	n1 := c.Nodes[0]
	return &deployment{name: "one-node", c: c, entry: n1, leaderID: n1.ID,
		runners: []runner{{executor: n1.ID, labels: map[string]string{"runner": "embedded"}, host: n1}}}
}

// startThreeViaFollower is three nodes without an embedded executor: the
// user and an ax executor address a follower only, so every write, read
// and executor call is forwarded.
func startThreeViaFollower(t *testing.T) *deployment {
	c := startCluster(t, 3)
	d := &deployment{name: "three-via-follower", c: c}
	d.settle(t)
	d.runners = []runner{d.startRunner(t, "w1")}
	return d
}

// startTLSACL is three nodes with TLS and ACLs bootstrapped through a
// follower: the user holds a writer token, the ax executor w1 an executor
// token bound to its name and labels (it knows the follower only), and
// n3, a follower, runs an embedded executor with its own credential.
func startTLSACL(t *testing.T) *deployment {
	dir := t.TempDir()
	c := startCluster(t, 3, withTLS(dir), withArgs("-executor-shutdown-grace", "2s"), func(cfg *localcluster.Config) {
		cfg.NodeArgs = map[string][]string{"n3": {"-executor", "true", "-executor-labels", "runner=embedded"}}
	})
	ca, err := tlsutil.NewClientConfig(localcluster.CAFile(dir), "", "")
	if err != nil {
		t.Fatal(err)
	}
	d := &deployment{name: "tls-acl", c: c, entry: c.Nodes[1], clientTLS: ca, caFile: localcluster.CAFile(dir)}
	ctx := ctxT(t, time.Minute)
	// Before the bootstrap the cluster's client certificate admits.
	boot, err := tokenClient(c, "", d.entry.HTTPAddr).ACLBootstrap(ctx)
	if err != nil {
		t.Fatalf("bootstrap through %s: %v", d.entry.ID, err)
	}
	d.admin = boot.Secret
	d.user = createToken(t, ctx, d.Admin(), model.ACLTokenRequest{Name: "deployer", Role: model.RoleWriter})
	d.operator = createToken(t, ctx, d.Admin(), model.ACLTokenRequest{Name: "oncall", Role: model.RoleOperator})
	d.settle(t)
	d.runners = []runner{d.startRunner(t, "w1"),
		{executor: "n3", labels: map[string]string{"runner": "embedded"}, host: c.Nodes[2]}}
	return d
}

// settle makes n1 the leader and n2 the entry of a three-node deployment.
func (d *deployment) settle(t *testing.T) {
	t.Helper()
	d.leaderID, d.entry = "n1", d.c.Nodes[1]
	d.heal(t)
}

// startRunner starts the ax executor name, labeled runner=name, that
// addresses the entry only.
func (d *deployment) startRunner(t *testing.T, name string) runner {
	t.Helper()
	labels := map[string]string{"runner": name}
	d.StartExecutor(t, name, labels)
	return runner{executor: name, labels: labels}
}

// heal waits until every node runs, answers and agrees on a leader, and
// moves leadership back to leaderID (a journey may have stopped nodes).
func (d *deployment) heal(t *testing.T) {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	for _, n := range d.c.Nodes {
		if !n.Running() {
			if err := n.Start(); err != nil {
				t.Fatal(err)
			}
		}
	}
	leads := func() error {
		leader, err := d.c.Leader(ctx, 10*time.Second)
		if err == nil && leader.ID != d.leaderID {
			err = fmt.Errorf("%s leads, not %s", leader.ID, d.leaderID)
		}
		return err
	}
	testkit.Eventually(t, 45*time.Second, func() error {
		if leads() == nil {
			return nil
		}
		if err := d.Admin().Transfer(ctx, d.leaderID); err != nil {
			return fmt.Errorf("moving leadership to %s: %w", d.leaderID, err)
		}
		return localcluster.WaitFor(ctx, 10*time.Second, leads)
	})
	// Every member has caught up with the leader before the user goes on.
	testkit.Eventually(t, 30*time.Second, func() error {
		for _, n := range d.c.Nodes {
			if h, err := d.nodeClient(n, d.admin).Health(ctx); err != nil || h.Problem != "" {
				return fmt.Errorf("%s: %v %+v", n.ID, err, h)
			}
		}
		return nil
	})
}

// nodeClient is a client of node n alone with token, trusting the CA.
func (d *deployment) nodeClient(n *localcluster.Node, token string) *client.Client {
	return client.New(client.Config{Addrs: []string{n.HTTPAddr}, Token: token, TLS: d.clientTLS,
		Actor: "alice@laptop", RetryFor: 15 * time.Second})
}

// User is the user's client: the entry node, the user's token.
func (d *deployment) User() *client.Client { return d.nodeClient(d.entry, d.user) }

// Admin is a client of the entry with the admin token.
func (d *deployment) Admin() *client.Client { return d.nodeClient(d.entry, d.admin) }

// Operator is the operator's client: the entry, the operator's token.
func (d *deployment) Operator() *client.Client { return d.nodeClient(d.entry, d.operator) }

// CLIEnv is the environment of the user's ax commands: the entry, the
// user's token, the CA.
func (d *deployment) CLIEnv() []string { return d.cliEnv(d.user) }

func (d *deployment) cliEnv(token string) []string {
	env := []string{"AX_ADDR=" + d.entry.HTTPAddr}
	if token != "" {
		env = append(env, "AX_TOKEN="+token)
	}
	if d.caFile != "" {
		env = append(env, "AX_CACERT="+d.caFile)
	}
	return env
}

// ax runs the user's ax command and fails t unless it exits with code.
func (d *deployment) ax(t *testing.T, code int, args ...string) cliRun {
	t.Helper()
	return axExec(t, d.CLIEnv(), args...).want(t, code, args...)
}

// axOperator runs the operator's ax command, like ax.
func (d *deployment) axOperator(t *testing.T, code int, args ...string) cliRun {
	t.Helper()
	return axExec(t, d.cliEnv(d.operator), args...).want(t, code, args...)
}

// get is the user's curl: GET path on the entry with the user's token.
func (d *deployment) get(ctx context.Context, t *testing.T, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, client.BaseURL(d.entryURL())+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.user != "" {
		req.Header.Set("Authorization", "Bearer "+d.user)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: d.clientTLS}, Timeout: 15 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (d *deployment) entryURL() string {
	if d.clientTLS != nil {
		return "https://" + d.entry.HTTPAddr
	}
	return "http://" + d.entry.HTTPAddr
}

// executorToken returns the executor token bound to name and labels,
// made once with the admin token; "" without ACLs.
func (d *deployment) executorToken(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	if d.admin == "" {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if tok, ok := d.execToks[name]; ok {
		return tok
	}
	tok := createToken(t, ctxT(t, 30*time.Second), d.Admin(), model.ACLTokenRequest{Name: name, Role: model.RoleExecutor, Executor: name, Labels: labels})
	if d.execToks == nil {
		d.execToks = map[string]string{}
	}
	d.execToks[name] = tok
	return tok
}

// StartExecutor starts an ax executor process named name with labels,
// addressing the entry, with an executor token bound to it under ACLs.
// It is killed with the deployment.
func (d *deployment) StartExecutor(t *testing.T, name string, labels map[string]string, args ...string) *localcluster.Node {
	t.Helper()
	args = append([]string{"-labels", labelFlag(labels)}, args...)
	if tok := d.executorToken(t, name, labels); tok != "" {
		args = append(args, "-token", tok)
	}
	e, err := d.c.StartExecutorAt(name, []string{d.entry.HTTPAddr}, args...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// StartWorker runs an SDK worker named name in the test's process, as a
// user's program would (the entry, an executor token, the CA), until the
// returned stop is called.
func (d *deployment) StartWorker(t *testing.T, name string, labels map[string]string, handlers map[string]worker.Handler) (stop func()) {
	t.Helper()
	w, err := worker.New(worker.Config{Servers: []string{d.entry.HTTPAddr}, Name: name, Labels: labels,
		Token: d.executorToken(t, name, labels), TLS: d.clientTLS, Handlers: handlers, PollWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	return func() { cancel(); <-done }
}
