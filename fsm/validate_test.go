package fsm

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// raw builds a command with a body given as bytes.
func raw(typ CommandType, now int64, body string) *Command {
	return &Command{Type: typ, Now: now, Node: "n1", Actor: "tester", Body: []byte(body)}
}

func jsonCmd(t *testing.T, typ CommandType, now int64, v any) *Command {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw(typ, now, string(b))
}

// TestFSM_RejectsInvalidCommands applies an invalid command of every type
// to a state machine holding a task and a running instance: each is an
// invalid_argument (or too_large) result that changes nothing.
// entryClocks matches the dump lines of the meta keys every entry
// advances (hex of "req_clock" and "time_hwm").
var entryClocks = regexp.MustCompile(`(?m)^(7265715f636c6f636b|74696d655f68776d)=.*$`)

func TestFSM_RejectsInvalidCommands(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 10})
	id := fx.trigger()
	fx.lease(id)
	now := fx.now + 1000
	big := strings.Repeat("x", maxText+1)
	shell := `"action":{"type":"shell","command":"true"}`
	ref := func(n string) string { return `{"name":"` + n + `"}` }
	sub := func(items ...SubmitItem) *Command {
		return &Command{Type: CmdSubmit, Now: now, Node: "n1", Body: EncodeSubmit(&Submit{Task: "job", Items: items})}
	}
	report := model.CompleteRequest{Executor: "e1", Success: true}
	tests := []struct {
		name string
		c    *Command
		code string
	}{
		{"put: empty task name (the issue's entry)", raw(CmdPutTask, now, `{"task":{"name":"","trigger":{"type":"event"},`+shell+`}}`), model.CodeInvalid},
		{"put: bad cron", raw(CmdPutTask, now, `{"task":{"name":"c","trigger":{"type":"cron","expression":"61 * * * *"},`+shell+`}}`), model.CodeInvalid},
		{"put: bad timezone form", raw(CmdPutTask, now, `{"task":{"name":"c","trigger":{"type":"cron","expression":"@daily","timezone":"../etc/passwd"},`+shell+`}}`), model.CodeInvalid},
		{"put: time past year 9999", raw(CmdPutTask, now, `{"task":{"name":"c","trigger":{"type":"once","at":"9999-12-31T23:59:59-23:59"},`+shell+`}}`), model.CodeInvalid},
		{"put: no action", raw(CmdPutTask, now, `{"task":{"name":"c","trigger":{"type":"event"}}}`), model.CodeInvalid},
		{"put: null body", raw(CmdPutTask, now, `null`), model.CodeInvalid},
		{"put: bad JSON", raw(CmdPutTask, now, `{"task":`), model.CodeInvalid},
		{"delete: empty name", raw(CmdDeleteTask, now, ref("")), model.CodeInvalid},
		{"pause: bad name", raw(CmdPauseTask, now, ref("A B")), model.CodeInvalid},
		{"resume: long name", raw(CmdResumeTask, now, ref(strings.Repeat("a", 129))), model.CodeInvalid},
		{"set_node: no id", jsonCmd(t, CmdSetNode, now, NodeInfo{RaftAddr: "x:1"}), model.CodeInvalid},
		{"set_node: no raft address", jsonCmd(t, CmdSetNode, now, NodeInfo{ID: "n9"}), model.CodeInvalid},
		{"set_node: bad proto", jsonCmd(t, CmdSetNode, now, NodeInfo{ID: "n9", RaftAddr: "x:1", Proto: -1}), model.CodeInvalid},
		{"set_node: huge id", jsonCmd(t, CmdSetNode, now, NodeInfo{ID: strings.Repeat("n", 40000), RaftAddr: "x:1"}), model.CodeInvalid},
		{"remove_node: empty name", raw(CmdRemoveNode, now, ref("")), model.CodeInvalid},
		{"submit: no items", sub(), model.CodeInvalid},
		{"submit: negative delay", sub(SubmitItem{DelayMs: -1}), model.CodeInvalid},
		{"submit: delay and at", sub(SubmitItem{DelayMs: 1, AtMs: now}), model.CodeInvalid},
		{"submit: at out of range", sub(SubmitItem{AtMs: maxTimeMs + 1}), model.CodeInvalid},
		{"submit: delay overflows", sub(SubmitItem{DelayMs: 1 << 62}), model.CodeInvalid},
		{"submit: long key", sub(SubmitItem{Key: strings.Repeat("k", 257)}), model.CodeInvalid},
		{"submit: payload not JSON", sub(SubmitItem{Payload: []byte(`{"a":`)}), model.CodeInvalid},
		{"submit: payload too large", sub(SubmitItem{Payload: []byte(`"` + big + `"`)}), model.CodeTooLarge},
		{"submit: empty task", &Command{Type: CmdSubmit, Now: now, Body: EncodeSubmit(&Submit{Items: []SubmitItem{{}}})}, model.CodeInvalid},
		{"submit: truncated", raw(CmdSubmit, now, "\x03jo"), model.CodeInvalid},
		{"trigger: empty task", jsonCmd(t, CmdTrigger, now, Trigger{}), model.CodeInvalid},
		{"trigger: bad param name", jsonCmd(t, CmdTrigger, now, Trigger{Task: "job", Params: map[string]string{"1x": "", "ok": ""}}), model.CodeInvalid},
		{"trigger: long param", jsonCmd(t, CmdTrigger, now, Trigger{Task: "job", Params: map[string]string{"p": strings.Repeat("v", 4097)}}), model.CodeInvalid},
		{"trigger: unknown source", jsonCmd(t, CmdTrigger, now, Trigger{Task: "job", Source: "bogus"}), model.CodeInvalid},
		{"fire: empty task", jsonCmd(t, CmdFire, now, Fire{Tasks: []TaskFire{{Version: 1, At: now}}}), model.CodeInvalid},
		{"fire: version 0", jsonCmd(t, CmdFire, now, Fire{Tasks: []TaskFire{{Task: "job", At: now}}}), model.CodeInvalid},
		{"fire: negative time", jsonCmd(t, CmdFire, now, Fire{Tasks: []TaskFire{{Task: "job", Version: 1, At: -5}}}), model.CodeInvalid},
		{"fire: negative misses", jsonCmd(t, CmdFire, now, Fire{Tasks: []TaskFire{{Task: "job", Version: 1, Missed: -1}}}), model.CodeInvalid},
		{"fire: key too large for bbolt", jsonCmd(t, CmdFire, now, Fire{Tasks: []TaskFire{{Task: "job", Version: 1, At: now, Key: strings.Repeat("k", 40000)}}}), model.CodeInvalid},
		{"fire: instance 0", jsonCmd(t, CmdFire, now, Fire{Instances: []uint64{id, 0}}), model.CodeInvalid},
		{"lease: no executor", jsonCmd(t, CmdLease, now, Lease{IDs: []uint64{id}, LeaseMs: 1000}), model.CodeInvalid},
		{"lease: no ids", jsonCmd(t, CmdLease, now, Lease{Executor: "e1", LeaseMs: 1000}), model.CodeInvalid},
		{"lease: zero lease", jsonCmd(t, CmdLease, now, Lease{Executor: "e1", IDs: []uint64{id}}), model.CodeInvalid},
		{"lease: lease overflows", jsonCmd(t, CmdLease, now, Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 1 << 62}), model.CodeInvalid},
		{"heartbeat: no items", jsonCmd(t, CmdHeartbeat, now, Heartbeat{Executor: "e1", LeaseMs: 1000}), model.CodeInvalid},
		{"heartbeat: attempt 0", jsonCmd(t, CmdHeartbeat, now, Heartbeat{Executor: "e1", LeaseMs: 1000, Items: []AttemptRef{{ID: id}}}), model.CodeInvalid},
		{"complete: id 0", jsonCmd(t, CmdComplete, now, Complete{Attempt: 1, Report: report}), model.CodeInvalid},
		{"complete: attempt 0", jsonCmd(t, CmdComplete, now, Complete{ID: id, Report: report}), model.CodeInvalid},
		{"complete: no executor", jsonCmd(t, CmdComplete, now, Complete{ID: id, Attempt: 1}), model.CodeInvalid},
		{"complete: output too large", jsonCmd(t, CmdComplete, now, Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Output: big}}), model.CodeInvalid},
		{"complete_batch: empty", &Command{Type: CmdCompleteBatch, Now: now, Body: EncodeCompleteBatch(nil)}, model.CodeInvalid},
		{"complete_batch: two executors", &Command{Type: CmdCompleteBatch, Now: now, Body: EncodeCompleteBatch([]Complete{
			{ID: id, Attempt: 1, Report: report}, {ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e2"}}})}, model.CodeInvalid},
		{"complete_batch: garbage", raw(CmdCompleteBatch, now, "\x01\xff\xff"), model.CodeInvalid},
		{"expire: no items", jsonCmd(t, CmdExpire, now, Expire{}), model.CodeInvalid},
		{"expire: id 0", jsonCmd(t, CmdExpire, now, Expire{Items: []ExpireItem{{Attempt: 1}}}), model.CodeInvalid},
		{"decide: id 0", jsonCmd(t, CmdDecide, now, Decide{Action: DecideTerminate}), model.CodeInvalid},
		{"decide: unknown action", jsonCmd(t, CmdDecide, now, Decide{ID: id, Action: "explode"}), model.CodeInvalid},
		{"decide: terminate names an attempt", jsonCmd(t, CmdDecide, now, Decide{ID: id, Action: DecideTerminate, Attempt: 1}), model.CodeInvalid},
		{"decide: approval request without attempt", jsonCmd(t, CmdDecide, now, Decide{ID: id, Action: DecideRequestApproval}), model.CodeInvalid},
		{"decide: long comment", jsonCmd(t, CmdDecide, now, Decide{ID: id, Action: DecideTerminate, Comment: strings.Repeat("c", 4097)}), model.CodeInvalid},
		{"backfill: version 0", jsonCmd(t, CmdBackfill, now, Backfill{Task: "job", At: []int64{now}, Keys: []string{"k"}}), model.CodeInvalid},
		{"backfill: keys and times differ", jsonCmd(t, CmdBackfill, now, Backfill{Task: "job", Version: 1, At: []int64{now}}), model.CodeInvalid},
		{"backfill: negative time", jsonCmd(t, CmdBackfill, now, Backfill{Task: "job", Version: 1, At: []int64{-1}, Keys: []string{"k"}}), model.CodeInvalid},
		{"alerted: id 0", jsonCmd(t, CmdAlerted, now, Alerted{}), model.CodeInvalid},
		{"prune: id 0", jsonCmd(t, CmdPrune, now, Prune{IDs: []uint64{0}}), model.CodeInvalid},
		{"header: request id too long", &Command{Type: CmdNoop, ReqID: strings.Repeat("r", 40000), Now: now}, model.CodeInvalid},
		{"header: negative time", &Command{Type: CmdNoop, Now: -1}, model.CodeInvalid},
		{"header: actor too long", &Command{Type: CmdNoop, Now: now, Actor: strings.Repeat("a", 300)}, model.CodeInvalid},
		{"unknown ignorable type", raw(command.Ignorable|99, now, "{}"), model.CodeInvalid},
		{"acl_put_token: no token", raw(CmdACLPutToken, now, "{}"), model.CodeInvalid},
		{"acl_put_token: ttl overflows", jsonCmd(t, CmdACLPutToken, now, ACLPutToken{Token: TokenRecord{Name: "t", Role: model.RoleReader,
			Hash: strings.Repeat("ab", 32)}, TTLms: 1 << 62}), model.CodeInvalid},
		{"acl_delete_token: empty name", raw(CmdACLDeleteToken, now, ref("")), model.CodeInvalid},
		{"put_secret: bad name", jsonCmd(t, CmdPutSecret, now, PutSecret{Name: "A B"}), model.CodeInvalid},
		{"delete_secret: empty name", raw(CmdDeleteSecret, now, ref("")), model.CodeInvalid},
		{"set_member_key: short key", jsonCmd(t, CmdSetMemberKey, now, SetMemberKey{Key: []byte("short")}), model.CodeInvalid},
		{"a batch in a batch", EncodeBatch(now, "n1", []*Command{EncodeBatch(now, "n1", []*Command{{Type: CmdNoop}})}), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := dump(t, fx.f)
			if tc.code == "" { // a batch: its one command is refused
				fx.a.index++
				out := fx.f.ApplyBatch([]*raft.Log{{Index: fx.a.index, Type: raft.LogCommand, Data: tc.c.Encode()}})
				br, _ := out[0].(*BatchResult)
				if br == nil || len(br.Results) != 1 || br.Results[0].Err == nil || br.Results[0].Err.Code != model.CodeInvalid {
					t.Fatalf("got %#v, want one invalid result", out[0])
				}
			} else if r := fx.a.apply(tc.c); r.Err == nil || r.Err.Code != tc.code {
				t.Fatalf("got %+v (data %s), want %s", r.Err, r.Data, tc.code)
			} else {
				t.Log(r.Err)
			}
			// Every entry advances the entry clocks (time_hwm, req_clock),
			// refused or not; nothing else may change.
			if after := dump(t, fx.f); entryClocks.ReplaceAllString(after, "") != entryClocks.ReplaceAllString(before, "") {
				t.Fatalf("a rejected command changed the state:\n%s", diffLines(before, after))
			}
		})
	}
	// The node still applies commands, and the instance still runs.
	if got := fx.inst(id).State; got != model.StateRunning {
		t.Fatalf("instance %s, want RUNNING", got)
	}
	if r := fx.complete(id, true, false); r.Err != nil {
		t.Fatalf("complete after the rejections: %v", r.Err)
	}
}

// TestFSM_EmptyTaskNameSurvivesRestart is the attack: an entry
// with a nameless task made every node panic, again on every restart.
func TestFSM_EmptyTaskNameSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fsm.db")
	f, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	entry := raw(CmdPutTask, t0, `{"task":{"name":"","trigger":{"type":"cron","expression":"* * * * *"},"action":{"type":"shell","command":"id"}}}`).Encode()
	logs := []*raft.Log{
		{Index: 1, Type: raft.LogCommand, Data: entry},
		{Index: 2, Type: raft.LogCommand, Data: cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("ok", "@hourly")}).Encode()},
	}
	out := f.ApplyBatch(logs)
	if r := out[0].(*Result); r.Err == nil || r.Err.Code != model.CodeInvalid || r.Err.Field != "name" {
		t.Fatalf("nameless task: got %+v, want invalid_argument on name", r.Err)
	}
	if r := out[1].(*Result); r.Err != nil {
		t.Fatalf("next entry: %v", r.Err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// A replica replaying the same log (after losing its state) decides
	// the same way.
	g := newTestFSM(t)
	for _, l := range logs {
		g.ApplyBatch([]*raft.Log{l})
	}
	f = openTest(t, path, false)
	if f.AppliedIndex() != 2 || dump(t, f) != dump(t, g) {
		t.Fatalf("replay differs: applied %d\n%s", f.AppliedIndex(), diffLines(dump(t, f), dump(t, g)))
	}
}

// diffLines shows the lines of b that a lacks and the other way round.
func diffLines(a, b string) string {
	in := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		in[l]++
	}
	var out []string
	for _, l := range strings.Split(b, "\n") {
		if in[l] > 0 {
			in[l]--
			continue
		}
		out = append(out, "+ "+l)
	}
	for l, n := range in {
		for ; n > 0; n-- {
			out = append(out, "- "+l)
		}
	}
	return strings.Join(out, "\n")
}
