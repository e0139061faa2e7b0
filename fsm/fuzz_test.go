package fsm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// fuzzState is the state machine every FuzzApply input is applied to: a
// few tasks, instances in several states, a node and a remembered request.
type fuzzState struct {
	path    string // the state file
	work    string // where open copies it
	applied uint64
	dump    string   // Dump of the state, without request bookkeeping
	digest  [32]byte // stateDigest of the state
	ready   uint64   // instance ids by state
	running uint64
	waiting uint64
	failed  uint64
	sched   uint64
}

// buildFuzzState writes the fuzz state machine into dir.
func buildFuzzState(t testing.TB, dir string) *fuzzState {
	t.Helper()
	st := &fuzzState{path: filepath.Join(dir, "fsm.db")}
	f, err := Open(Config{Path: st.path, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	index := uint64(0)
	now := t0
	apply := func(typ CommandType, reqID string, body any) *Result {
		t.Helper()
		c, err := NewCommand(typ, reqID, "fuzz", body)
		if err != nil {
			t.Fatal(err)
		}
		if typ == CmdSubmit {
			c.Body = EncodeSubmit(body.(*Submit))
		}
		index++
		now += 1000
		c.Now, c.Node = now, "n1"
		r := f.ApplyBatch([]*raft.Log{{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}})[0].(*Result)
		if r.Err != nil {
			t.Fatalf("fuzz state: %s: %v", typ, r.Err)
		}
		return r
	}
	id := func(r *Result) uint64 {
		var s model.Submitted
		if err := r.Decode(&s); err != nil {
			t.Fatal(err)
		}
		n, _ := model.ParseID(s.ID)
		return n
	}
	shell := model.Action{Type: model.ActionShell, Command: "echo {{.Params.x}}"}
	apply(CmdPutTask, "", PutTask{Task: cronTask("a", "*/5 * * * *")})
	apply(CmdPutTask, "", PutTask{Task: model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: shell,
		Policy: model.Policy{MaxConcurrency: 3, MaxRetries: 1, Notify: []string{"http://127.0.0.1:1/hook"}}}})
	apply(CmdPutTask, "", PutTask{Task: model.Task{Name: "gate", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: shell,
		Policy: model.Policy{Approval: "before_run", DependsOn: []string{"a"}}}})
	apply(CmdSetNode, "", NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:7071", HTTPAddr: "127.0.0.1:7070", Proto: ProtoVersion})
	apply(CmdSetProto, "", SetProto{Proto: ProtoVersion})
	apply(CmdACLPutToken, "", ACLPutToken{Token: TokenRecord{Name: "ops", Role: model.RoleOperator, Hash: strings.Repeat("2d", 32)}})
	apply(CmdPutSecret, "", PutSecret{Name: "db", Value: []byte("hunter2")})
	st.ready = id(apply(CmdTrigger, "", Trigger{Task: "job", Params: map[string]string{"x": "1"}}))
	st.running = id(apply(CmdTrigger, "", Trigger{Task: "job", Key: "k1"}))
	st.failed = id(apply(CmdTrigger, "", Trigger{Task: "job"}))
	apply(CmdLease, "", Lease{Executor: "e1", Host: "h", IDs: []uint64{st.running, st.failed}, LeaseMs: 10_000})
	apply(CmdComplete, "", Complete{ID: st.failed, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", ExitCode: 2, Error: "boom", Output: "out"}})
	st.waiting = id(apply(CmdTrigger, "", Trigger{Task: "gate", Date: "2026-11-30"}))
	sr, err := DecodeSubmitResult(apply(CmdSubmit, "req-1", &Submit{Task: "job", Items: []SubmitItem{{DelayMs: 3_600_000, Key: "s1", Payload: []byte(`{"p":1}`)}}}))
	if err != nil {
		t.Fatal(err)
	}
	st.sched, _ = model.ParseID(sr.Instances[0].ID)
	st.applied = index
	st.dump = stateDump(t, f)
	st.digest = stateDigest(t, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return st
}

// stateDump is Dump without the request-id bookkeeping, which a rejected
// command may change (it remembers its answer, and prunes old ones).
func stateDump(t testing.TB, f *FSM) string {
	t.Helper()
	var b bytes.Buffer
	if err := f.Dump(&b); err != nil {
		t.Fatal(err)
	}
	var out []string
	skip := false
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "[") {
			skip = l == "["+string(bktRequests)+"]" || l == "["+string(bktRequestTime)+"]" || l == "["+string(bktRequestClock)+"]"
		}
		if !skip {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// scratchDir returns a directory for files rewritten for every fuzz input:
// in memory (/dev/shm) where there is one.
func scratchDir(f *testing.F) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "ax-fuzz-"); err == nil {
			f.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return f.TempDir()
}

// stateDigest is a hash of what stateDump shows: cheaper, for the fuzz
// loop.
func stateDigest(t testing.TB, f *FSM) [32]byte {
	t.Helper()
	h := sha256.New()
	put := func(b []byte) {
		h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		h.Write(b)
	}
	err := f.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if bytes.Equal(name, bktMeta) || bytes.Equal(name, bktRequests) || bytes.Equal(name, bktRequestTime) || bytes.Equal(name, bktRequestClock) {
				return nil
			}
			put(name)
			return b.ForEach(func(k, v []byte) error {
				put(k)
				put(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// open opens a fresh copy of the fuzz state (at the same path each time:
// the inputs of a fuzz worker run one after the other).
func (st *fuzzState) open(t *testing.T) *FSM {
	t.Helper()
	path := st.work
	if path == "" {
		path = filepath.Join(t.TempDir(), "fsm.db")
	}
	src, err := os.Open(st.path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+cleanMarker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if f.AppliedIndex() != st.applied {
		t.Fatalf("copy applied %d, want %d", f.AppliedIndex(), st.applied)
	}
	return f
}

// FuzzApply applies arbitrary bytes as a log entry's data, or as the body
// of a CmdBatch entry (inBatch), to a state machine holding tasks and
// instances. The apply must never panic, but to stop the node on a
// command type it does not know (and may not skip), which commits nothing
// of the entry; an answer that is only errors must leave the state as it
// was (but for the applied index and request bookkeeping); after a change
// every query must still answer and its answer encode.
func FuzzApply(f *testing.F) {
	st := buildFuzzState(f, f.TempDir())
	st.work = filepath.Join(scratchDir(f), "fsm.db")
	f.Fuzz(func(t *testing.T, data []byte, inBatch bool) {
		entry := data
		if inBatch {
			entry = (&Command{Type: CmdBatch, Now: t0 + 1e6, Node: "n1", Body: data}).Encode()
		}
		fm := st.open(t)
		defer fm.Close()
		out, stop := raftApply(fm, []*raft.Log{{Index: st.applied + 1, Term: 2, Type: raft.LogCommand, Data: entry}})
		if stop != "" {
			switch {
			case !strings.Contains(stop, errUnknownType.Error()) || !holdsUnknownType(entry):
				t.Fatalf("apply panicked: %s", stop)
			case fm.AppliedIndex() != st.applied || stateDigest(t, fm) != st.digest:
				t.Fatalf("a stopped apply committed: applied %d, want %d", fm.AppliedIndex(), st.applied)
			}
			return
		}
		if fm.AppliedIndex() != st.applied+1 {
			t.Fatalf("applied %d, want %d", fm.AppliedIndex(), st.applied+1)
		}
		rejected := false
		switch r := out[0].(type) {
		case *Result:
			rejected = r.Err != nil
		case *BatchResult:
			rejected = true
			for _, sub := range r.Results {
				rejected = rejected && sub.Err != nil
			}
		default:
			t.Fatalf("answer %T", out[0])
		}
		changed := stateDigest(t, fm) != st.digest
		if rejected && changed {
			t.Fatalf("a rejected entry changed the state:\n%s", diffLines(st.dump, stateDump(t, fm)))
		}
		if changed {
			queryAll(t, fm)
		}
	})
}

// queryAll runs every query the API and the leader make and encodes each
// answer as the API would.
func queryAll(t *testing.T, f *FSM) {
	t.Helper()
	enc := func(what string, v any, err error) {
		t.Helper()
		if err != nil && !isModelError(err) {
			t.Fatalf("%s: %v", what, err)
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("%s: encode: %v", what, err)
		}
	}
	tasks, err := f.ListTasks(model.TaskFilter{Limit: 1000})
	enc("list tasks", tasks, err)
	scheds, err := f.TaskSchedules()
	enc("task schedules", scheds, err)
	for _, tk := range tasks.Tasks {
		h, err := f.TaskHistory(tk.Name)
		enc("history", h, err)
		ev, err := f.TaskEvents(tk.Name)
		enc("task events", ev, err)
	}
	list, err := f.ListInstances(model.InstanceFilter{Limit: 1000})
	enc("list instances", list, err)
	var refs []AttemptRef
	for _, in := range list.Instances {
		id, _ := model.ParseID(in.ID)
		refs = append(refs, AttemptRef{ID: id, Attempt: in.Attempts})
		got, err := f.GetInstance(id)
		enc("get instance", got, err)
		l, err := f.Log(id)
		enc("log", l, err)
	}
	jobs, err := f.Jobs(refs)
	enc("jobs", jobs, err)
	nodes, err := f.Nodes()
	enc("nodes", nodes, err)
	tokens, err := f.Tokens()
	enc("tokens", tokens, err)
	secrets, err := f.Secrets()
	enc("secrets", secrets, err)
	err = f.ActiveInstances(func(Active) {})
	enc("active", nil, err)
	_, err = f.PendingAlerts()
	enc("alerts", nil, err)
	err = f.ScanDue(0, maxTimeMs, func(uint64, int64) {})
	enc("due", nil, err)
}

func isModelError(err error) bool {
	_, ok := err.(*model.Error)
	return ok
}

// fuzzSeeds returns the seed inputs of FuzzApply: a real encoded command
// of every type against the fuzz state, a batch of them, and mutations (a
// nameless task, a key too large for bbolt, bad JSON, truncated varints).
func fuzzSeeds(t testing.TB, st *fuzzState) map[string][]byte {
	t.Helper()
	now := t0 + 1e6
	enc := func(typ CommandType, reqID string, body any) []byte {
		c, err := NewCommand(typ, reqID, "fuzz", body)
		if err != nil {
			t.Fatal(err)
		}
		c.Now, c.Node = now, "n1"
		return c.Encode()
	}
	binCmd := func(typ CommandType, body []byte) []byte {
		return (&Command{Type: typ, ReqID: "r", Now: now, Node: "n1", Actor: "fuzz", Body: body}).Encode()
	}
	report := model.CompleteRequest{Executor: "e1", Success: true, Output: "done"}
	task := cronTask("new", "0 3 * * *")
	task.Trigger.Timezone = "Europe/Berlin"
	task.Policy.IdempotencyKey = "{{.Task}}-{{.Date}}"
	seeds := map[string][]byte{
		"put_task":               enc(CmdPutTask, "r1", PutTask{Task: task}),
		"delete_task":            enc(CmdDeleteTask, "", TaskRef{Name: "job"}),
		"pause_task":             enc(CmdPauseTask, "", TaskRef{Name: "a"}),
		"resume_task":            enc(CmdResumeTask, "", TaskRef{Name: "a"}),
		"set_node":               enc(CmdSetNode, "", NodeInfo{ID: "n2", RaftAddr: "h:1", HTTPAddr: "h:2", Proto: 2}),
		"remove_node":            enc(CmdRemoveNode, "", TaskRef{Name: "n1"}),
		"noop":                   enc(CmdNoop, "", nil),
		"submit":                 binCmd(CmdSubmit, EncodeSubmit(&Submit{Task: "job", Items: []SubmitItem{{DelayMs: 1000, Payload: []byte(`[1,{"a":"b"}]`)}, {AtMs: now - 1, Key: "s1"}}})),
		"trigger":                enc(CmdTrigger, "req-1", Trigger{Task: "job", Params: map[string]string{"x": "y"}, Key: "k2", Source: model.SourceOnFailure}),
		"fire":                   enc(CmdFire, "", Fire{Tasks: []TaskFire{{Task: "a", Version: 1, At: now, Key: "a@x", Date: "2026-11-30", Missed: 2, MissedFirst: now - 2000, MissedLast: now - 1000}}, Instances: []uint64{st.sched}}),
		"lease":                  enc(CmdLease, "", Lease{Executor: "e2", Host: "h2", IDs: []uint64{st.ready, st.running}, LeaseMs: 5000}),
		"heartbeat":              enc(CmdHeartbeat, "", Heartbeat{Executor: "e1", Items: []AttemptRef{{ID: st.running, Attempt: 1}, {ID: st.ready, Attempt: 1}}, LeaseMs: 5000}),
		"complete":               enc(CmdComplete, "", Complete{ID: st.running, Attempt: 1, Report: report}),
		"expire":                 enc(CmdExpire, "", Expire{Items: []ExpireItem{{ID: st.running, Attempt: 1}}}),
		"decide":                 enc(CmdDecide, "", Decide{ID: st.waiting, Action: DecideApprove, Comment: "ok"}),
		"complete_batch":         binCmd(CmdCompleteBatch, EncodeCompleteBatch([]Complete{{ID: st.running, Attempt: 1, Report: report}, {ID: st.ready, Attempt: 1, Report: report}})),
		"backfill":               enc(CmdBackfill, "", Backfill{Task: "a", Version: 1, At: []int64{t0, t0 + 300_000}, Keys: []string{"a@1", "a@2"}, Dates: []string{"2026-11-30", "2026-11-30"}}),
		"alerted":                enc(CmdAlerted, "", Alerted{ID: st.failed, Message: "notified"}),
		"prune":                  enc(CmdPrune, "", Prune{IDs: []uint64{st.failed, st.ready}}),
		"acl_put_token":          enc(CmdACLPutToken, "", ACLPutToken{Token: TokenRecord{Name: "worker", Role: model.RoleExecutor, Executor: "e1", Labels: map[string]string{"pool": "a"}, Hash: strings.Repeat("0f", 32)}, TTLms: 60_000}),
		"acl_bootstrap":          enc(CmdACLBootstrap, "", ACLBootstrap{Token: TokenRecord{Name: "root", Role: model.RoleAdmin, Hash: strings.Repeat("1e", 32)}}),
		"acl_delete":             enc(CmdACLDeleteToken, "", TaskRef{Name: "ops"}),
		"put_secret":             enc(CmdPutSecret, "", PutSecret{Name: "db", Value: []byte("hunter2")}),
		"delete_secret":          enc(CmdDeleteSecret, "", TaskRef{Name: "db"}),
		"set_member_key":         enc(CmdSetMemberKey, "", SetMemberKey{Key: make([]byte, 32)}),
		"note":                   enc(CmdNote, "", Note{IDs: []uint64{st.ready, st.running}, Type: NoteNoExecutor, Message: "no executor"}),
		"unknown_type":           enc(CommandType(99), "", nil),
		"unknown_ignorable_type": enc(command.Ignorable|99, "r9", nil),

		"put_task_empty_name":    enc(CmdPutTask, "", json.RawMessage(`{"task":{"name":"","trigger":{"type":"cron","expression":"* * * * *"},"action":{"type":"shell","command":"id"}}}`)),
		"put_task_year_10000":    enc(CmdPutTask, "", json.RawMessage(`{"task":{"name":"late","trigger":{"type":"once","at":"9999-12-31T23:59:59-23:59"},"action":{"type":"shell","command":"id"}}}`)),
		"fire_huge_key":          enc(CmdFire, "", Fire{Tasks: []TaskFire{{Task: "a", Version: 1, At: now, Key: strings.Repeat("k", 40000)}}}),
		"set_node_huge_id":       enc(CmdSetNode, "", NodeInfo{ID: strings.Repeat("n", 40000), RaftAddr: "h:1"}),
		"decide_bad_json":        enc(CmdDecide, "", json.RawMessage(`{"i":`+fmt.Sprint(st.waiting)+`}`))[:30],
		"submit_bad_payload":     binCmd(CmdSubmit, EncodeSubmit(&Submit{Task: "job", Items: []SubmitItem{{Payload: []byte(`{"a":`)}}})),
		"submit_huge_count":      binCmd(CmdSubmit, append(binary.AppendUvarint([]byte{3, 'j', 'o', 'b'}, 1<<20), 0, 0, 0, 0)),
		"complete_batch_garbage": binCmd(CmdCompleteBatch, []byte{1, 0xff, 0xff, 0xff, 0x7f, 0}),
		"truncated_varint":       {byte(CmdNoop), 0x80, 0x80},
		"huge_reqid_length":      append([]byte{byte(CmdNoop)}, binary.AppendUvarint(nil, 1<<62)...),
		"empty":                  {},
	}
	var batch []byte
	for _, name := range []string{"trigger", "lease", "complete", "put_task_empty_name", "submit"} {
		batch = binary.AppendUvarint(batch, uint64(len(seeds[name])))
		batch = append(batch, seeds[name]...)
	}
	seeds["batch"] = binCmd(CmdBatch, batch)
	seeds["batch_truncated"] = binCmd(CmdBatch, batch[:len(batch)-7])
	seeds["batch_in_batch"] = binCmd(CmdBatch, append(binary.AppendUvarint(nil, uint64(len(seeds["batch"]))), seeds["batch"]...))
	seeds["batch_body"] = batch // with inBatch
	var unknown []byte
	for _, name := range []string{"trigger", "unknown_type"} {
		unknown = binary.AppendUvarint(unknown, uint64(len(seeds[name])))
		unknown = append(unknown, seeds[name]...)
	}
	seeds["batch_unknown_type"] = binCmd(CmdBatch, unknown)
	return seeds
}

// TestFuzzApplySeeds checks that the committed corpus of FuzzApply holds
// every seed fuzzSeeds makes; AX_WRITE_SEEDS=1 writes them.
func TestFuzzApplySeeds(t *testing.T) {
	st := buildFuzzState(t, t.TempDir())
	seeds := map[string][]any{}
	for name, b := range fuzzSeeds(t, st) {
		seeds[name] = []any{b, name == "batch_body"}
	}
	checkSeeds(t, "FuzzApply", seeds)
}

// checkSeeds checks (or with AX_WRITE_SEEDS=1 writes) the corpus files
// testdata/fuzz/<target>/<name> holding each seed's arguments ([]byte or
// bool values).
func checkSeeds(t *testing.T, target string, seeds map[string][]any) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	write := os.Getenv("AX_WRITE_SEEDS") == "1"
	if write {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, args := range seeds {
		want := "go test fuzz v1\n"
		for _, a := range args {
			switch v := a.(type) {
			case []byte:
				want += fmt.Sprintf("[]byte(%q)\n", v)
			case bool:
				want += fmt.Sprintf("bool(%v)\n", v)
			default:
				t.Fatalf("seed %s: argument %T", name, a)
			}
		}
		path := filepath.Join(dir, name)
		if write {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("seed %s is missing or stale in %s; run AX_WRITE_SEEDS=1 go test -run %s", name, dir, t.Name())
		}
	}
}
