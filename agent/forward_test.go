package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/ax-scheduler/ax/replica"
)

// bearerOf is the Authorization header of a token.
func bearerOf(secret string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + secret}
}

// waitMemberKey waits until every node has applied the member key (the
// first leader sets it once every member runs this version; it retries
// every 10 s): until then a node that has it refuses a peer that does not
// as a non-member.
func (tc *testCluster) waitMemberKey(t *testing.T) {
	t.Helper()
	testkit.Until(t, 30*time.Second, "the member key on every node", func() bool {
		for _, a := range tc.agents {
			if a.fsm.MemberKey() == nil {
				return false
			}
		}
		return true
	})
}

// TestAgent_ForwardsToTheLeader sends requests to a follower's HTTP API,
// with ACLs on, and checks what only the leader could have answered: writes
// applied once under their request id, the principal the follower verified
// enforced by the leader, reads of the leader's own state (its executors,
// a running attempt's live output), the one-hop rule, and the node-to-node
// endpoints refusing everyone but members.
func TestAgent_ForwardsToTheLeader(t *testing.T) {
	tc := startCluster(t, 3, nil)
	ctx := context.Background()
	tc.waitMemberKey(t)
	l := tc.leader()
	f, f2 := tc.follower(l), tc.follower2(l, tc.follower(l))
	boot, err := l.acc.ACLBootstrap(ctx, api.Caller{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	admin := bearerOf(boot.Secret)
	tokens := map[string]map[string]string{}
	for _, req := range []model.ACLTokenRequest{
		{Name: "ci", Role: model.RoleWriter},
		{Name: "exec-w1", Role: model.RoleExecutor, Executor: "w1"},
		{Name: "exec-w2", Role: model.RoleExecutor, Executor: "w2"},
	} {
		tok, err := l.acc.CreateToken(ctx, api.Caller{Actor: "tester"}, req)
		if err != nil {
			t.Fatal(err)
		}
		tokens[req.Name] = bearerOf(tok.Secret)
	}

	t.Run("a write is applied by the leader", func(t *testing.T) {
		if code := apiCallHeader(t, f, "PUT", "/v1/tasks/job", `{"trigger":{"type":"event"},"action":{"type":"shell","command":"true"}}`, tokens["ci"], nil); code != 200 {
			t.Fatalf("PUT through the follower: %d", code)
		}
		h, err := l.tasks.TaskHistory(ctx, "job")
		if err != nil || len(h.Versions) != 1 || h.Versions[0].Actor != "ci" {
			t.Fatalf("the leader's history: %+v, %v; want one version by ci", h, err)
		}
	})

	var first model.Submitted
	t.Run("the request id goes with it", func(t *testing.T) {
		hdr := map[string]string{"Authorization": tokens["ci"]["Authorization"], client.HeaderIdempotencyKey: "trig-1"}
		var again model.Submitted
		if code := apiCallHeader(t, f, "POST", "/v1/tasks/job/trigger", "", hdr, &first); code != 200 {
			t.Fatalf("trigger: %d", code)
		}
		if code := apiCallHeader(t, f, "POST", "/v1/tasks/job/trigger", "", hdr, &again); code != 200 || again.ID != first.ID {
			t.Fatalf("the same request again: %d %+v, want %s", code, again, first.ID)
		}
		if n := countInstances(t, l, "job"); n != 1 {
			t.Fatalf("the leader holds %d instances, want 1", n)
		}
	})

	t.Run("the leader enforces the principal the follower verified", func(t *testing.T) {
		resp, err := l.exec.Poll(ctx, model.PollRequest{Executor: "w2", Free: 1, WaitMs: 5_000})
		if err != nil || len(resp.Jobs) != 1 || resp.Jobs[0].InstanceID != first.ID {
			t.Fatalf("poll as w2: %+v, %v; want the job of %s", resp, err, first.ID)
		}
		path := "/v1/attempts/" + resp.Jobs[0].ExecutionID + "/complete"
		var refused model.ErrorBody
		// The follower lets w1's token report as w1; only the leader
		// knows the attempt is w2's, and only from the forwarded
		// principal that the reporter is w1.
		if code := apiCallHeader(t, f, "POST", path, `{"executor":"w1","success":true}`, tokens["exec-w1"], &refused); code != 403 || refused.Error.Field != "executionId" {
			t.Fatalf("w1 reporting w2's attempt: %d %+v, want 403 on executionId", code, refused.Error)
		}
		var done map[string]string
		if code := apiCallHeader(t, f, "POST", path, `{"executor":"w2","success":true}`, tokens["exec-w2"], &done); code != 200 || done["state"] != model.StateSuccess {
			t.Fatalf("w2 reporting its attempt: %d %v, want 200 SUCCESS", code, done)
		}
	})

	t.Run("reads of the leader's own state", func(t *testing.T) {
		var in model.Submitted
		if code := apiCallHeader(t, f, "POST", "/v1/tasks/job/trigger", "", tokens["ci"], &in); code != 200 {
			t.Fatalf("trigger: %d", code)
		}
		resp, err := l.exec.Poll(ctx, model.PollRequest{Executor: "w2", Free: 1, WaitMs: 5_000})
		if err != nil || len(resp.Jobs) != 1 {
			t.Fatalf("poll: %+v, %v", resp, err)
		}
		// The output streams to the leader only.
		if _, err := l.exec.Heartbeat(ctx, model.HeartbeatRequest{Executor: "w2",
			Running: []model.RunningAttempt{{InstanceID: in.ID, Attempt: 1, Output: "hello from w2\n"}}}); err != nil {
			t.Fatal(err)
		}
		var lg model.InstanceLog
		testkit.Until(t, 5*time.Second, "the follower to apply the lease", func() bool {
			i, err := f.tasks.GetInstance(ctx, in.ID)
			return err == nil && i.State == model.StateRunning
		})
		if code := apiCallHeader(t, f, "GET", "/v1/instances/"+in.ID+"/log", "", admin, &lg); code != 200 || !lg.Live || lg.Output != "hello from w2\n" {
			t.Fatalf("live log through the follower: %d %+v, want the leader's live output", code, lg)
		}
		var execs model.ExecutorList
		if code := apiCallHeader(t, f, "GET", "/v1/executors", "", admin, &execs); code != 200 || len(execs.Executors) != 1 || execs.Executors[0].Name != "w2" {
			t.Fatalf("executors through the follower: %d %+v, want the leader's w2", code, execs)
		}
		if code := apiCallHeader(t, f2, "GET", "/v1/instances/"+in.ID+"?consistent=true", "", admin, nil); code != 200 {
			t.Fatalf("a consistent read on the other follower: %d", code)
		}
	})

	t.Run("one hop: a forwarded request is not forwarded again", func(t *testing.T) {
		hdr := map[string]string{"Authorization": admin["Authorization"], api.HeaderForwarded: "1"}
		var refused model.ErrorBody
		if code := apiCallHeader(t, f2, "POST", "/v1/tasks/job/pause", "", hdr, &refused); code != 503 || !strings.Contains(refused.Error.Message, "not the leader") {
			t.Fatalf("a forwarded write on a follower: %d %+v, want 503 not the leader", code, refused.Error)
		}
		if task, err := l.tasks.GetTask(ctx, "job"); err != nil || task.Paused {
			t.Fatalf("the task: %+v, %v; want it unpaused", task, err)
		}
	})

	t.Run("node-to-node endpoints answer members only", func(t *testing.T) {
		member := map[string]string{api.HeaderMember: base64.RawURLEncoding.EncodeToString(l.fsm.MemberKey())}
		for _, tt := range []struct {
			name   string
			a      *Agent
			method string
			path   string
			hdr    map[string]string
			want   int
		}{
			{"no credentials", l, "GET", "/v1/internal/readindex", nil, 401},
			{"an admin token", l, "GET", "/v1/internal/readindex", admin, 403},
			{"a writer's forged apply", l, "POST", "/v1/internal/apply", tokens["ci"], 403},
			{"an admin asking the time", f, "GET", "/v1/internal/time", admin, 403},
			{"an admin on a path that does not exist", l, "GET", "/v1/internal/nothing", admin, 403},
			{"a wrong member key", l, "GET", "/v1/internal/readindex", map[string]string{api.HeaderMember: "x"}, 401},
			{"a member on the leader", l, "GET", "/v1/internal/readindex", member, 200},
			{"a member on a follower", f, "GET", "/v1/internal/readindex", member, 503},
			{"a member asking the time", f, "GET", "/v1/internal/time", member, 200},
			{"a member on a path that does not exist", l, "GET", "/v1/internal/nothing", member, 404},
		} {
			if code := apiCallHeader(t, tt.a, tt.method, tt.path, "x", tt.hdr, nil); code != tt.want {
				t.Errorf("%s: %s %s answered %d, want %d", tt.name, tt.method, tt.path, code, tt.want)
			}
		}
	})
}

// TestOnLeader_RetryPolicy: what onLeader tries again on the leader, and
// what it answers at once, by the error of the local call.
func TestOnLeader_RetryPolicy(t *testing.T) {
	a := startAgent(t)
	notFound := &model.Error{Code: model.CodeNotFound, Message: "no task x"}
	for _, tt := range []struct {
		name      string
		errs      []error // the local call's errors, in turn; then "ok"
		always    error   // else the local call fails with this every time
		once      bool
		wantCalls int // 0: more than one
		wantErr   error
		wantMsg   []string
	}{
		{name: "lost leadership before proposing: tried again", errs: []error{raftnode.ErrNotLeader}, wantCalls: 2},
		{name: "lost leadership mid-commit: tried again", errs: []error{raftnode.ErrLeadershipLost}, wantCalls: 2},
		{name: "lost leadership mid-commit, once: not repeated", errs: []error{raftnode.ErrLeadershipLost}, once: true, wantCalls: 1,
			wantErr: model.ErrUnavailable, wantMsg: []string{"outcome unknown", "req-x"}},
		{name: "a raft timeout: outcome unknown", errs: []error{raftnode.ErrTimeout}, wantCalls: 1,
			wantErr: model.ErrUnavailable, wantMsg: []string{"outcome unknown", "req-x"}},
		{name: "shutting down", errs: []error{raftnode.ErrShutdown}, wantCalls: 1, wantErr: model.ErrUnavailable},
		{name: "the leader's own answer", errs: []error{notFound}, wantCalls: 1, wantErr: model.ErrNotFound},
		{name: "never the leader by the deadline", always: raftnode.ErrNotLeader,
			wantErr: model.ErrUnavailable, wantMsg: []string{"no leader reachable", "request req-x was not applied"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			start := time.Now()
			v, err := replica.Ask[string](context.Background(), a.rep, replica.Call{ReqID: "req-x", Once: tt.once, Deadline: time.Now().Add(500 * time.Millisecond)},
				func(context.Context, *replica.Term) (string, error) {
					n := int(calls.Add(1))
					if tt.always != nil {
						return "", tt.always
					}
					if n <= len(tt.errs) {
						return "", tt.errs[n-1]
					}
					return "ok", nil
				},
				func(context.Context, *client.Client) (string, error) {
					t.Error("a one-node cluster's leader called remote")
					return "", nil
				})
			switch n := int(calls.Load()); {
			case tt.wantCalls == 0 && n < 2, tt.wantCalls > 0 && n != tt.wantCalls:
				t.Errorf("local calls: %d, want %d (0: several)", n, tt.wantCalls)
			}
			if tt.wantErr == nil {
				if err != nil || v != "ok" {
					t.Fatalf("got %q, %v; want ok", v, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || v != "" {
				t.Fatalf("got %q, %v; want %v", v, err, tt.wantErr)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("answered after %s, want within the deadline (500ms) and a pause", took)
			}
		})
	}
}

// TestOnLeader_FollowsLeadership: when leadership moves during a call,
// onLeader asks the new leader, one hop, with the same request: from the
// former leader whose own try found it no longer leads, and from a
// follower whose forwarded try hung on the former leader (cut as soon as
// the follower sees the leader change, not at the deadline).
func TestOnLeader_FollowsLeadership(t *testing.T) {
	tc := startCluster(t, 3, func(cfg *Config) { cfg.LeaderWait = 20 * time.Second })
	tc.waitMemberKey(t)
	ctx := context.Background()

	t.Run("the leader hands over before proposing", func(t *testing.T) {
		l := tc.leader()
		next := tc.follower(l)
		var locals, remotes atomic.Int32
		got, err := replica.Ask[string](ctx, l.rep, replica.Call{},
			func(ctx context.Context, _ *replica.Term) (string, error) {
				if locals.Add(1) == 1 {
					if err := l.node.TransferLeadership(ctx, next.cfg.NodeID); err != nil {
						return "", err
					}
				}
				return "", raftnode.ErrNotLeader // until Raft says so too
			},
			func(ctx context.Context, c *client.Client) (string, error) {
				remotes.Add(1)
				h, err := c.Health(ctx)
				if h != nil && h.Node != "" {
					return h.Node, nil
				}
				return "", err
			})
		if err != nil || got != next.cfg.NodeID {
			t.Fatalf("answered by %q, %v; want the new leader %s", got, err, next.cfg.NodeID)
		}
		if locals.Load() < 1 || remotes.Load() < 1 {
			t.Fatalf("%d local and %d remote calls, want both", locals.Load(), remotes.Load())
		}
		tc.waitLeader(t, l)
	})

	t.Run("a forwarded try hangs on the former leader", func(t *testing.T) {
		l := tc.waitLeader(t, nil)
		f := tc.follower(l)
		next := tc.follower2(l, f)
		tc.proxyOf(l).set(proxyBlackhole)
		defer tc.proxyOf(l).set(proxyPass)
		type answer struct {
			res *model.WriteResult
			err error
		}
		done := make(chan answer, 1)
		start := time.Now()
		go func() {
			res, err := f.tasks.PutTask(ctx, api.Caller{Actor: "tester", RequestID: "put-moved"}, eventTask("moved"), api.PutOptions{})
			done <- answer{res, err}
		}()
		testkit.Until(t, 5*time.Second, "the forwarded write to hang on the former leader", func() bool {
			return tc.proxyOf(l).heard("POST " + api.InternalPrefix + "apply")
		})
		if err := l.node.TransferLeadership(ctx, next.cfg.NodeID); err != nil {
			t.Fatal(err)
		}
		var got answer
		select {
		case got = <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("the write did not follow the leader")
		}
		if got.err != nil || got.res.Version != 1 || !got.res.Changed {
			t.Fatalf("the write: %+v, %v; want version 1 created", got.res, got.err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("took %s: the hung try was not cut when the leader changed", took)
		}
		if task, err := next.tasks.GetTask(ctx, "moved"); err != nil || task.Version != 1 {
			t.Fatalf("on the new leader: %+v, %v", task, err)
		}
	})
}

// TestAgent_ReadBarrierAfterLeaderChange: right after a leader change with
// no write since, the commit index is the new leader's no-op or barrier,
// which the state machine never applies; a consistent read on any node
// must not wait for the next write.
func TestAgent_ReadBarrierAfterLeaderChange(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.waitMemberKey(t)
	ctx := context.Background()
	for round := 0; round < 2; round++ {
		l := tc.leader()
		next := tc.follower(l)
		if err := l.node.TransferLeadership(ctx, next.cfg.NodeID); err != nil {
			t.Fatal(err)
		}
		tc.waitLeader(t, l)
		for _, a := range tc.agents {
			rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			start := time.Now()
			err := a.rep.ReadBarrier(rctx)
			cancel()
			if err != nil {
				t.Fatalf("round %d: %s: read barrier after %s: %v (applied %d, commit %d)",
					round, a.cfg.NodeID, time.Since(start), err, a.fsm.AppliedIndex(), a.node.CommitIndex())
			}
		}
		// Nor does any node show as lagging (cluster status LAG).
		var lags []uint64
		testkit.Until(t, 5*time.Second, "no member lagging", func() bool {
			st, err := tc.agents[0].cl.Cluster(ctx)
			if err != nil {
				return false
			}
			lags = lags[:0]
			for _, n := range st.Nodes {
				if n.Lag == nil {
					return false
				}
				lags = append(lags, *n.Lag)
			}
			return len(lags) == len(tc.agents) && slices.Max(lags) == 0
		})
	}
}
