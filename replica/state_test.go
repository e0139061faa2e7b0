package replica

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// testState is a replica whose state machine a test drives directly (no
// Raft): what the replica decides from its state alone.
type testState struct {
	t     testing.TB
	r     *Replica
	index uint64
}

func openState(t testing.TB, now func() time.Time) *testState {
	t.Helper()
	r, err := Open(Config{NodeID: "n1", DataDir: t.TempDir(), Logger: testkit.Logger(t, ""), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.fsm.Close() })
	return &testState{t: t, r: r}
}

// apply applies one command at leader time ms.
func (s *testState) apply(ms int64, typ command.Type, body any) *fsm.Result {
	s.t.Helper()
	c, err := command.New(typ, "", "test", body)
	if err != nil {
		s.t.Fatal(err)
	}
	c.Now, c.Node = ms, "n1"
	s.index++
	res := s.r.fsm.Apply(&raft.Log{Index: s.index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}).(*fsm.Result)
	if err := res.Decode(nil); err != nil {
		s.t.Fatalf("%s: %v", typ, err)
	}
	return res
}

// TestAwaitMemberKey: a 403 from the leader to a request sent before this
// node applied the member key waits for the key and asks for a retry; any
// other answer, and a key that does not come by the deadline, are left
// alone.
func TestAwaitMemberKey(t *testing.T) {
	forbidden := &model.Error{Code: model.CodeForbidden, Message: "/v1/internal/apply is for cluster members only"}
	s := openState(t, nil)
	r := s.r
	ctx := context.Background()
	if r.awaitMemberKey(ctx, forbidden, time.Now().Add(50*time.Millisecond)) {
		t.Fatal("no key came, but awaitMemberKey asked for a retry")
	}
	for _, other := range []error{
		&model.Error{Code: model.CodeInvalid, Message: "bad"},
		&model.Error{Code: model.CodeForbidden, Message: "token w1 (role executor) may not POST /v1/x: it needs role admin"},
	} {
		if r.awaitMemberKey(ctx, other, time.Now().Add(time.Second)) {
			t.Fatalf("%v is the leader's answer, not a missing key", other)
		}
	}
	done := make(chan bool)
	go func() { done <- r.awaitMemberKey(ctx, forbidden, time.Now().Add(30*time.Second)) }()
	s.apply(clockT0.UnixMilli(), command.TypeSetMemberKey, command.SetMemberKey{Key: []byte(strings.Repeat("k", 32))})
	select {
	case retry := <-done:
		if !retry {
			t.Fatal("the key applied, but awaitMemberKey did not ask for a retry")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("awaitMemberKey did not see the key apply")
	}
}

// TestReplica_StampsTriggerDate: a manual trigger's business date is
// the leader's (from its clock and task), whatever the node that received
// it put there; triggers of other sources keep theirs.
func TestReplica_StampsTriggerDate(t *testing.T) {
	s := openState(t, time.Now)
	task := &model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *", Timezone: "Asia/Shanghai"},
		Action: model.Action{Type: model.ActionShell, Command: "true"}}
	s.apply(time.Now().UnixMilli(), command.TypePutTask, command.PutTask{Task: *task})
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip("no tz database:", err)
	}
	for _, tt := range []struct {
		source, want string
	}{
		{"", time.Now().In(loc).Format("2006-01-02")},
		{model.SourceAPI, time.Now().In(loc).Format("2006-01-02")},
		{model.SourceOnFailure, "1999-01-01"},
	} {
		c, err := command.New(command.TypeTrigger, "", "tester", command.Trigger{Task: "job", Source: tt.source, Date: "1999-01-01"})
		if err != nil {
			t.Fatal(err)
		}
		s.r.stamp(c)
		var got command.Trigger
		if err := json.Unmarshal(c.Body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Date != tt.want {
			t.Errorf("source %q: date %q, want %q", tt.source, got.Date, tt.want)
		}
	}
}
