package fsm

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

func TestCompleteBatchCodec(t *testing.T) {
	cs := []Complete{
		{ID: 1, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: true}},
		{ID: 1 << 40, Attempt: 3, Report: model.CompleteRequest{Executor: "e2", Host: "h", PID: 4242, Retryable: true, TimedOut: true,
			Canceled: true, ExitCode: -1, HTTPStatus: 503, Error: "boom", Output: strings.Repeat("out\n", 100)}},
		{ID: 7, Attempt: 2, Report: model.CompleteRequest{Executor: "e1", ExitCode: 3, Error: "exit status 3"}},
		{ID: 8, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: true, Output: "x", Result: json.RawMessage(`{"rows":42}`)}},
	}
	got, err := decodeCompleteBatch(EncodeCompleteBatch(cs))
	if err != nil || !reflect.DeepEqual(got, cs) {
		t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, got, cs)
	}
	// Bodies written as JSON by earlier versions still decode on replay.
	legacy, _ := json.Marshal(cs)
	if got, err := decodeCompleteBatch(legacy); err != nil || !reflect.DeepEqual(got, cs) {
		t.Fatalf("legacy JSON: %v, %+v", err, got)
	}
	enc := EncodeCompleteBatch(cs)
	for _, bad := range [][]byte{nil, {completeVersion}, {9, 0}, enc[:len(enc)-1], append(append([]byte{}, enc...), 0), {completeVersion, 0xff, 0xff, 0xff, 0xff, 0x0f}} {
		if _, err := decodeCompleteBatch(bad); err == nil {
			t.Errorf("decodeCompleteBatch(%q) accepted a corrupt body", bad)
		}
	}
}

// TestFSM_CompleteBatch: one entry ends several attempts; each report is
// checked on its own (a stale one is refused without failing the rest).
func TestFSM_CompleteBatch(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 10, MaxRetries: 1})
	a, b, c := fx.trigger(), fx.trigger(), fx.trigger()
	for _, id := range []uint64{a, b, c} {
		fx.lease(id)
	}
	fx.now += 10
	r := fx.a.apply(&Command{Type: CmdCompleteBatch, Now: fx.now, Node: "n1", Body: EncodeCompleteBatch([]Complete{
		{ID: a, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: true}},
		{ID: b, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", ExitCode: 3, Retryable: true, Error: "x"}},
		{ID: c, Attempt: 2, Report: model.CompleteRequest{Executor: "e1", Success: true}}, // stale: c is on attempt 1
	})})
	var out []model.CompleteOutcome
	if err := r.Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || out[0].State != model.StateSuccess || out[1].State != model.StateRetrying || out[2].Code != model.CodeConflict {
		t.Fatalf("outcomes %+v", out)
	}
	if s := fx.inst(c).State; s != model.StateRunning {
		t.Fatalf("c after a stale report: %s, want RUNNING", s)
	}
	bad := fx.a.apply(&Command{Type: CmdCompleteBatch, Now: fx.now + 10, Node: "n1", Body: []byte{9, 9}})
	if bad.Err == nil || bad.Err.Code != model.CodeInvalid {
		t.Fatalf("corrupt body: %v, want invalid", bad.Err)
	}
}
