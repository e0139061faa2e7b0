package clustertest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// EventTask is a task fired by triggers only, running `echo name`,
// labelled suite=tests.
func EventTask(name string) *model.Task {
	return &model.Task{
		Name:    name,
		Trigger: model.Trigger{Type: model.TriggerEvent},
		Action:  model.Action{Type: model.ActionShell, Command: "echo " + name},
		Labels:  map[string]string{"suite": "tests"},
	}
}

// Clienter is a node (a Node, a *localcluster.Node): what gives a client
// of it.
type Clienter interface{ Client() *client.Client }

// WaitHealth polls n's /healthz (200, or 503 with the same JSON) until
// cond holds, failing the test after within.
func WaitHealth(ctx context.Context, t testing.TB, n Clienter, within time.Duration, cond func(*member.Health) error) {
	t.Helper()
	c := n.Client()
	testkit.Eventually(t, within, func() error {
		h, err := c.Health(ctx)
		if h == nil {
			return err
		}
		// An unhealthy node answers 503 with its health: cond judges it.
		return cond(h)
	})
}

// CountTasks lists every task a node holds locally, with its version.
func CountTasks(ctx context.Context, c *client.Client, opts ...client.ReadOption) (map[string]uint64, error) {
	out := map[string]uint64{}
	f := model.TaskFilter{Limit: 1000}
	for {
		page, err := c.ListTasks(ctx, f, opts...)
		if err != nil {
			return nil, err
		}
		for _, t := range page.Tasks {
			out[t.Name] = t.Version
		}
		if page.NextCursor == "" {
			return out, nil
		}
		f.Cursor = page.NextCursor
	}
}

// HasAll checks that the node c talks to holds every task named in want.
func HasAll(ctx context.Context, c *client.Client, want map[string]bool) error {
	got, err := CountTasks(ctx, c)
	if err != nil {
		return err
	}
	missing := 0
	for n := range want {
		if _, ok := got[n]; !ok {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("%d of %d acknowledged tasks missing", missing, len(want))
	}
	return nil
}

// ShellTask is a task fired by triggers only that runs command.
func ShellTask(name, command string, p model.Policy) *model.Task {
	return &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: command}, Policy: p}
}

// DailyTask is a task due at midnight every day that runs command.
func DailyTask(name, command string, p model.Policy) *model.Task {
	return &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 0 * * *"},
		Action: model.Action{Type: model.ActionShell, Command: command}, Policy: p}
}

// PerSecondTask is a task due every second, with the given catchup.
func PerSecondTask(name, catchup string) *model.Task {
	return &model.Task{
		Name:    name,
		Trigger: model.Trigger{Type: model.TriggerCron, Expression: "* * * * * *"},
		Action:  model.Action{Type: model.ActionShell, Command: "true"},
		Policy:  model.Policy{Catchup: catchup},
	}
}

// Trigger triggers task through cl and returns the instance id, failing
// the test otherwise.
func Trigger(t testing.TB, cl *client.Client, task string) string {
	t.Helper()
	s, err := cl.Trigger(context.Background(), task, model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// InstancesOf returns the task's instances (up to 1,000), oldest first,
// read linearizably; an error fails t.
func InstancesOf(t testing.TB, cl *client.Client, task string) []model.Instance {
	t.Helper()
	l, err := cl.ListInstances(context.Background(), model.InstanceFilter{Task: task, Limit: 1000}, client.Consistent())
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(l.Instances, func(i, j int) bool { return l.Instances[i].ID < l.Instances[j].ID })
	return l.Instances
}

// AllInstances lists every instance of a task (linearizable).
func AllInstances(ctx context.Context, c *client.Client, task string) ([]model.Instance, error) {
	var out []model.Instance
	f := model.InstanceFilter{Task: task, Limit: 1000}
	for {
		page, err := c.ListInstances(ctx, f, client.Consistent())
		if err != nil {
			return nil, err
		}
		out = append(out, page.Instances...)
		if page.NextCursor == "" {
			return out, nil
		}
		f.Cursor = page.NextCursor
	}
}

// FireTimes returns the instances' sorted scheduled times, and fails the
// test on two instances of one time or an early fire.
func FireTimes(t testing.TB, insts []model.Instance) []time.Time {
	t.Helper()
	seen := map[int64]string{}
	var times []time.Time
	for _, in := range insts {
		ms := in.ScheduledAt.Millis()
		if prev, dup := seen[ms]; dup {
			t.Fatalf("two instances (%s, %s) for fire time %s", prev, in.ID, in.ScheduledAt.Format(model.TimeLayout))
		}
		seen[ms] = in.ID
		if in.FiredAt.Before(in.ScheduledAt.Time) {
			t.Fatalf("instance %s fired early: scheduled %s fired %s", in.ID, in.ScheduledAt.Format(model.TimeLayout), in.FiredAt.Format(model.TimeLayout))
		}
		times = append(times, in.ScheduledAt.Time)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times
}

// HasEvent reports whether the instance has an event of type typ whose
// message holds text.
func HasEvent(in *model.Instance, typ, text string) bool {
	for _, e := range in.Events {
		if e.Type == typ && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// TokenClient is a client of the whole cluster (or of addrs) with token,
// as alice@laptop.
func TokenClient(c *localcluster.Cluster, token string, addrs ...string) *client.Client {
	if len(addrs) == 0 {
		addrs = c.Addrs()
	}
	return client.New(client.Config{Addrs: addrs, Token: token, Actor: "alice@laptop", RetryFor: 5 * time.Second, TLS: c.TLS()})
}

// CreateToken creates a token through cl and returns its secret, failing
// the test otherwise.
func CreateToken(t testing.TB, ctx context.Context, cl *client.Client, req model.ACLTokenRequest) string {
	t.Helper()
	tok, err := cl.CreateToken(ctx, req)
	if err != nil {
		t.Fatalf("create token %s: %v", req.Name, err)
	}
	if !strings.HasPrefix(tok.Secret, "axt_") {
		t.Fatalf("token %s: secret %q", req.Name, tok.Secret)
	}
	return tok.Secret
}

// WantCode fails the test unless err is an API error with code.
func WantCode(t testing.TB, what string, err error, code string) {
	t.Helper()
	var me *model.Error
	if !errors.As(err, &me) || me.Code != code {
		t.Fatalf("%s: got %v, want %s", what, err, code)
	}
}

// AxOutput runs the ax binary bin with args and returns its stdout,
// trimmed; an error names the command and holds its stderr.
func AxOutput(t testing.TB, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("ax %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(out.String()), err
}
