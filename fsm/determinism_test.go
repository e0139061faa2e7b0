package fsm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
	"github.com/ax-scheduler/ax/model/channel"
)

// logGen generates a random log that exercises every command type: tasks
// of several policies, instances created by submissions, triggers, fires
// and backfills and then leased, renewed, completed, expired, decided,
// alerted and pruned, members, tokens, secrets, the member key and the
// protocol, lone and packed into batches. The ids it refers to are guesses
// (the ids its commands may have created), so many commands are refused:
// refusals have to be deterministic too.
type logGen struct {
	rng   *rand.Rand
	now   int64
	index uint64
	ids   []uint64 // instance ids the log may have created
	// leased are the instances the log's leases named, and to whom.
	leased []leased
	seen   map[CommandType]bool
	// restoreNext is the offset of the next chunk of the latest restore
	// begun.
	restoreNext int
}

type leased struct {
	id       uint64
	executor string
}

func newLogGen(seed int64, index uint64) *logGen {
	return &logGen{rng: rand.New(rand.NewSource(seed)), now: t0, index: index, seen: map[CommandType]bool{}}
}

// genTask returns one of a few task shapes under one of a few names.
func (g *logGen) genTask() model.Task {
	name := fmt.Sprintf("task-%d", g.rng.Intn(6))
	shell := model.Action{Type: model.ActionShell, Command: "echo {{.Params.x}}"}
	t := model.Task{Name: name, Action: shell, Trigger: model.Trigger{Type: model.TriggerEvent}}
	switch g.rng.Intn(9) {
	case 0:
		t.Trigger = model.Trigger{Type: model.TriggerCron, Expression: []string{"* * * * *", "@hourly", "*/5 * * * * *"}[g.rng.Intn(3)]}
		if g.rng.Intn(2) == 0 { // protocol 8: a calendar (maybe missing), a window's label
			t.Trigger.Calendars, t.Labels = []string{fmt.Sprintf("cal-%d", g.rng.Intn(2))}, map[string]string{"team": "a"}
		}
	case 1:
		t.Policy = model.Policy{MaxRetries: 1 + g.rng.Intn(2), MaxConcurrency: 2, Notify: []string{"http://127.0.0.1:1/hook"}, OnFailure: []string{"task-0"}}
		if g.rng.Intn(2) == 0 {
			t.Policy.Notify = append(t.Policy.Notify, "ops") // a channel: refused below protocol 4
		}
	case 2:
		t.Policy = model.Policy{Approval: "before_run"}
	case 3:
		t.Policy = model.Policy{MaxConcurrency: 1, Overlap: []string{"queue", "skip", model.OverlapReplace}[g.rng.Intn(3)], KeepFailed: g.rng.Intn(3)} // replace: protocol 8
		if g.rng.Intn(2) == 0 {
			t.Policy.MaxConcurrency, t.Policy.RateLimit = 3, g.rateLimit() // protocol 8
		}
	case 4:
		t.Policy = model.Policy{DependsOn: []string{"task-1"}}
		t.Trigger = model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *"}
	case 6: // protocol 4: dependsOn (cycles too) with an upstream-failure policy
		t.Policy = model.Policy{DependsOn: []string{g.taskName()}, OnUpstreamFailure: []string{"wait", "skip", "fail"}[g.rng.Intn(3)]}
		t.Trigger = model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *"}
	case 7: // protocol 4: onSuccess chains (cycles too, and missing tasks)
		t.Policy = model.Policy{OnSuccess: []model.Chain{{Task: g.taskName(), Params: map[string]string{"b": "2", "a": "1"}}, {Task: "task-9"}}}
	case 8: // protocol 4: a short queue, no timeout; protocol 8: a pool (maybe missing)
		t.Policy = model.Policy{MaxConcurrency: 1, MaxQueued: 1 + g.rng.Intn(2), Timeout: model.NoTimeout}
		if g.rng.Intn(2) == 0 {
			t.Policy.Pool, t.Policy.MaxConcurrency = "pool-0", 1+g.rng.Intn(3)
		}
		if g.rng.Intn(2) == 0 { // protocol 8: a rate limit
			t.Policy.RateLimit, t.Policy.MaxConcurrency = g.rateLimit(), 1+g.rng.Intn(3)
		}
	case 5: // protocol 7: a window, maxRuns, jitter
		start, end := model.UnixMilli(g.now-int64(g.rng.Intn(60_000))), model.UnixMilli(g.now+int64(g.rng.Intn(600_000)))
		t.Trigger = model.Trigger{Type: model.TriggerCron, Expression: "* * * * *", StartAt: &start, EndAt: &end,
			MaxRuns: int64(g.rng.Intn(3)), Jitter: model.Duration(g.rng.Intn(50_000)) * model.Duration(time.Millisecond)}
		if g.rng.Intn(2) == 0 {
			t.Trigger = model.Trigger{Type: model.TriggerInterval, Every: model.Duration(time.Minute), StartAt: &start, MaxRuns: 2}
		}
		t.Policy = model.Policy{MaxConcurrency: 1, Overlap: []string{"queue", "skip"}[g.rng.Intn(2)]}
	}
	switch g.rng.Intn(6) { // protocol 8: sharded, or a broadcast
	case 0:
		t.Policy.Shards = 1 + g.rng.Intn(3)
		t.Policy.ShardFailure = []string{"", model.ShardFinish}[g.rng.Intn(2)]
	case 1:
		t.Policy.Broadcast = true
	}
	if g.rng.Intn(3) == 0 {
		t.Labels = map[string]string{"k": fmt.Sprint(g.rng.Intn(3)), "z": "1", "a": "2"}
	}
	if g.rng.Intn(4) == 0 {
		t.Version = uint64(1 + g.rng.Intn(3)) // a conditional put
	}
	return t
}

// rateLimit returns one of a few rate limits (protocol 8).
func (g *logGen) rateLimit() *model.RateLimit {
	return &model.RateLimit{Count: 1 + g.rng.Intn(3), Per: model.Duration(1+g.rng.Intn(60)) * model.Duration(time.Second),
		Burst: g.rng.Intn(2), OnLimit: []string{"", "wait", "skip"}[g.rng.Intn(3)]}
}

func (g *logGen) taskName() string { return fmt.Sprintf("task-%d", g.rng.Intn(6)) }

func (g *logGen) executor() string { return []string{"e1", "e2"}[g.rng.Intn(2)] }

// id picks an instance id the log may have created (or a missing one).
func (g *logGen) id() uint64 {
	if len(g.ids) == 0 || g.rng.Intn(10) == 0 {
		return 1<<40 | uint64(g.rng.Intn(4))
	}
	return g.ids[g.rng.Intn(len(g.ids))]
}

func (g *logGen) someIDs(max int) []uint64 {
	out := make([]uint64, 1+g.rng.Intn(max))
	for i := range out {
		out[i] = g.id()
	}
	return out
}

func (g *logGen) attempts(max int) []AttemptRef {
	out := make([]AttemptRef, 1+g.rng.Intn(max))
	for i := range out {
		out[i] = AttemptRef{ID: g.id(), Attempt: 1 + g.rng.Intn(2)}
	}
	return out
}

func (g *logGen) report() model.CompleteRequest {
	r := model.CompleteRequest{Executor: g.executor(), Host: "h", Output: "out"}
	switch g.rng.Intn(4) {
	case 0:
		r.Success = true
		if g.rng.Intn(2) == 0 { // protocol 8: a result
			r.Result = json.RawMessage(`{"rows":` + strconv.Itoa(g.rng.Intn(100)) + `}`)
		}
	case 1:
		r.ExitCode, r.Error, r.Retryable = 1, "failed", true
	case 2:
		r.Canceled, r.Interrupted, r.Retryable, r.Error = true, true, true, "stopped: executor shutting down"
	default:
		r.ExitCode, r.Error = 2, "boom"
	}
	return r
}

// expireItems returns up to max attempts to expire, some marked
// interrupted by the leader.
func (g *logGen) expireItems(max int) []ExpireItem {
	var out []ExpireItem
	for _, a := range g.attempts(max) {
		out = append(out, ExpireItem{ID: a.ID, Attempt: a.Attempt, Interrupted: g.rng.Intn(2) == 0, Restarted: g.rng.Intn(3) == 0})
	}
	return out
}

// created notes the ids a command at the current index may create.
func (g *logGen) created(n int) {
	for k := 0; k < n; k++ {
		g.ids = append(g.ids, g.index<<20|uint64(k))
	}
}

// command returns one random command (never a batch).
func (g *logGen) command(t *testing.T) *Command {
	t.Helper()
	reqID := ""
	if g.rng.Intn(3) == 0 {
		reqID = fmt.Sprintf("req-%d", g.rng.Intn(40))
	}
	var typ CommandType
	var body any
	switch g.rng.Intn(39) {
	case 0, 1, 2:
		tk := g.genTask()
		tk.Paused = g.rng.Intn(4) == 0 // kept or not (protocol 5) as KeepPaused says
		if g.rng.Intn(3) == 0 {        // protocol 8: a canary rollout (or its replacement)
			off := false
			tk.Rollout = &model.RolloutSpec{Percent: []int{0, 50, 100}[g.rng.Intn(3)], PromoteAfter: 1 + g.rng.Intn(3)}
			if g.rng.Intn(2) == 0 {
				tk.Rollout.AbortOnFailure, tk.Rollout.TestLabels = &off, map[string]string{"env": "test"}
			}
			tk.Action.Command = fmt.Sprintf("echo canary %d", g.rng.Intn(3))
		}
		typ, body = CmdPutTask, PutTask{Task: tk, KeepPaused: g.rng.Intn(2) == 0}
	case 3:
		typ, body = CmdDeleteTask, TaskRef{Name: g.taskName()}
	case 4:
		typ, body = CmdPauseTask, TaskRef{Name: g.taskName()}
	case 5:
		typ, body = CmdResumeTask, TaskRef{Name: g.taskName()}
	case 6:
		n := g.rng.Intn(3) + 1
		typ, body = CmdSetNode, NodeInfo{ID: fmt.Sprintf("n%d", n), RaftAddr: fmt.Sprintf("127.0.0.1:%d", 7071+g.rng.Intn(3)),
			HTTPAddr: fmt.Sprintf("127.0.0.1:%d", 7070+10*n), Proto: g.rng.Intn(ProtoVersion + 1)}
	case 7:
		typ, body = CmdRemoveNode, TaskRef{Name: fmt.Sprintf("n%d", g.rng.Intn(3)+1)}
	case 8:
		typ = CmdNoop
	case 9, 10:
		items := make([]SubmitItem, 1+g.rng.Intn(3))
		for i := range items {
			items[i] = SubmitItem{DelayMs: int64(g.rng.Intn(5000)), Payload: json.RawMessage(`{"p":1}`)}
			if g.rng.Intn(3) == 0 {
				items[i].Key = fmt.Sprintf("key-%d", g.rng.Intn(10))
			}
		}
		g.created(len(items))
		c := &Command{Type: CmdSubmit, ReqID: reqID, Actor: "tester", Body: EncodeSubmit(&Submit{Task: g.taskName(), Items: items})}
		g.seen[CmdSubmit] = true
		return c
	case 11, 12:
		tr := Trigger{Task: g.taskName(), Params: map[string]string{"x": "1"}}
		if g.rng.Intn(3) == 0 {
			tr.Key = fmt.Sprintf("key-%d", g.rng.Intn(10))
		}
		if g.rng.Intn(2) == 0 {
			tr.Date = "2026-11-30"
		}
		g.created(1)
		typ, body = CmdTrigger, tr
	case 13:
		f := Fire{Instances: g.someIDs(2)}
		if g.rng.Intn(2) == 0 {
			f.Tasks = []TaskFire{{Task: g.taskName(), Version: uint64(1 + g.rng.Intn(3)), At: g.now - int64(g.rng.Intn(60_000)),
				Key: fmt.Sprintf("fire-%d", g.rng.Intn(20)), Date: "2026-11-30", Missed: int64(g.rng.Intn(2)), Jitter: int64(g.rng.Intn(3) * 20_000)}}
			if f.Tasks[0].Missed > 0 {
				f.Tasks[0].MissedFirst, f.Tasks[0].MissedLast = g.now-120_000, g.now-60_000
			}
			g.created(1)
		}
		typ, body = CmdFire, f
	case 14, 15:
		l := Lease{Executor: g.executor(), Host: "h", IDs: g.someIDs(3), LeaseMs: 10_000}
		for _, id := range l.IDs {
			g.leased = append(g.leased, leased{id, l.Executor})
		}
		typ, body = CmdLease, l
	case 16:
		typ, body = CmdHeartbeat, Heartbeat{Executor: g.executor(), Items: g.attempts(3), LeaseMs: 10_000}
	case 17:
		c := Complete{ID: g.id(), Attempt: 1 + g.rng.Intn(2), Report: g.report()}
		if len(g.leased) > 0 && g.rng.Intn(2) == 0 {
			// Likely the current attempt: what ends instances, succeeded
			// or failed, so that their successors and dependents move.
			l := g.leased[g.rng.Intn(len(g.leased))]
			c.ID, c.Attempt, c.Report.Executor = l.id, 1, l.executor
		}
		typ, body = CmdComplete, c
		g.created(1) // onSuccess
	case 18:
		typ, body = CmdExpire, Expire{Items: g.expireItems(3)}
	case 19:
		action := []string{DecideApprove, DecideReject, DecideCancel, DecideTerminate, DecideRequestApproval}[g.rng.Intn(5)]
		attempt := 0
		if action == DecideRequestApproval {
			attempt = 1 + g.rng.Intn(2)
		}
		typ, body = CmdDecide, Decide{ID: g.id(), Action: action, Attempt: attempt, Comment: "ok"}
	case 20:
		items := make([]Complete, 1+g.rng.Intn(3))
		executor := g.executor()
		for i := range items {
			items[i] = Complete{ID: g.id(), Attempt: 1 + g.rng.Intn(2), Report: g.report()}
			items[i].Report.Executor = executor
		}
		g.seen[CmdCompleteBatch] = true
		return &Command{Type: CmdCompleteBatch, ReqID: reqID, Actor: "executor:" + executor, Body: EncodeCompleteBatch(items)}
	case 21:
		b := Backfill{Task: g.taskName(), Version: uint64(1 + g.rng.Intn(3))}
		for i := 0; i < 1+g.rng.Intn(3); i++ {
			at := g.now - int64(i+1)*3_600_000
			b.At = append(b.At, at)
			b.Keys = append(b.Keys, fmt.Sprintf("bf-%d", at/3_600_000))
			b.Dates = append(b.Dates, "2026-11-29")
		}
		g.created(len(b.At))
		typ, body = CmdBackfill, b
	case 22:
		if g.rng.Intn(2) == 0 {
			typ, body = CmdAlerted, Alerted{ID: g.id(), Message: "notified"}
		} else {
			typ, body = CmdPrune, Prune{IDs: g.someIDs(3)}
		}
	case 23:
		tok := TokenRecord{Name: fmt.Sprintf("tok-%d", g.rng.Intn(3)), Role: model.RoleOperator, Hash: strings.Repeat("2d", 32), CreatedAt: g.now}
		switch g.rng.Intn(3) {
		case 0:
			tok.Role = model.RoleAdmin
			typ, body = CmdACLBootstrap, ACLBootstrap{Token: tok}
		case 1:
			typ, body = CmdACLPutToken, ACLPutToken{Token: tok, TTLms: int64(g.rng.Intn(2)) * 60_000}
		default:
			typ, body = CmdACLDeleteToken, TaskRef{Name: tok.Name}
		}
	case 24:
		name := fmt.Sprintf("secret-%d", g.rng.Intn(3))
		if g.rng.Intn(2) == 0 {
			typ, body = CmdPutSecret, PutSecret{Name: name, Value: []byte("hunter2")}
		} else {
			typ, body = CmdDeleteSecret, TaskRef{Name: name}
		}
	case 25:
		typ, body = CmdSetMemberKey, SetMemberKey{Key: []byte(strings.Repeat("k", 32))}
	case 26:
		typ, body = CmdSetProto, SetProto{Proto: 1 + g.rng.Intn(ProtoVersion)}
	case 27:
		typ, body = CmdNote, Note{IDs: g.someIDs(3), Type: NoteNoExecutor, Message: "no executor can run it"}
	case 28:
		id := fmt.Sprintf("%s:%s", model.RuleInstanceFailed, g.taskName())
		switch g.rng.Intn(3) {
		case 0, 1:
			op := []string{AlertRaise, AlertResolve}[g.rng.Intn(2)]
			typ, body = CmdAlertUpdate, AlertUpdate{Items: []AlertChange{{Op: op, ID: id, Rule: model.RuleInstanceFailed,
				Severity: model.SeverityWarning, Subject: model.AlertSubject{Task: id[len(model.RuleInstanceFailed)+1:]},
				Summary: "failing", Key: fmt.Sprint(g.rng.Intn(3))}}}
		default:
			typ, body = CmdAlertNotified, AlertNotified{ID: id, Seq: uint64(1 + g.rng.Intn(20))}
		}
	case 29:
		sid := fmt.Sprintf("s%d", g.rng.Intn(3))
		if g.rng.Intn(2) == 0 {
			typ, body = CmdPutSilence, PutSilence{Silence: model.Silence{ID: sid, Task: g.taskName(),
				Until: model.UnixMilli(g.now + int64(g.rng.Intn(30_000))), Comment: "maintenance"}}
		} else {
			typ, body = CmdDeleteSilence, SilenceRef{ID: sid}
		}
	case 30:
		name := fmt.Sprintf("chan-%d", g.rng.Intn(3))
		switch g.rng.Intn(5) {
		case 3: // a chat robot: refused below protocol 7
			typ, body = CmdPutChannel, PutChannel{Channel: channel.Channel{Name: name, Type: channel.TypeDingTalk,
				URL: "https://oapi.dingtalk.com/(redacted)"}, Secret: []byte("SECx"), SealedURL: []byte("sealed")}
		case 0:
			typ, body = CmdPutChannel, PutChannel{Channel: channel.Channel{Name: name, Type: channel.TypeWebhook, URL: "http://127.0.0.1:1/h",
				Match: map[string]string{"k": "1", "a": "2"}}, Secret: []byte("s3cret")}
		case 1:
			typ, body = CmdPutChannel, PutChannel{Channel: channel.Channel{Name: name, Type: channel.TypeWebhook, URL: "https://x.example/h",
				MinSeverity: model.SeverityCritical}} // keeps a stored secret
		case 2:
			typ, body = CmdPutChannel, PutChannel{Channel: channel.Channel{Name: name, Type: channel.TypeEmail,
				Email: &channel.Email{To: []string{"ops@example.com"}, From: "ax@example.com", SMTP: "mail:587"}}, Password: []byte("pw")}
		default:
			typ, body = CmdDeleteChannel, TaskRef{Name: name}
		}
	case 31, 32: // protocol 7: re-runs, lone or a task's
		hold := int64(g.rng.Intn(2)) * 10_000
		if g.rng.Intn(2) == 0 {
			typ, body = CmdRerun, Rerun{IDs: []uint64{g.id()}, HoldMs: hold}
			break
		}
		ids := g.someIDs(3)
		slices.Sort(ids)
		states := []string{model.StateFailed, model.StateSuccess, model.StateSkipped, model.StateCanceled, model.StateTerminated}
		typ, body = CmdRerun, Rerun{Task: g.taskName(), IDs: slices.Compact(ids), States: states[:1+g.rng.Intn(len(states))], HoldMs: hold}
	case 33, 34: // protocol 8: calendars and blackout windows, around the log's time
		day := time.UnixMilli(g.now).UTC().Format(time.DateOnly)
		name := fmt.Sprintf("cal-%d", g.rng.Intn(2))
		switch g.rng.Intn(4) {
		case 0:
			typ, body = CmdPutCalendar, PutCalendar{Calendar: calendar.Calendar{Name: name, Timezone: "Europe/Berlin",
				Exclude: []string{day, "sat"}[:1+g.rng.Intn(2)], Include: []string{"2026-10-10"}}}
		case 1:
			typ, body = CmdDeleteCalendar, TaskRef{Name: name}
		case 2:
			from := time.UnixMilli(g.now + int64(g.rng.Intn(120_000)) - 60_000).UTC()
			w := calendar.Window{Name: fmt.Sprintf("win-%d", g.rng.Intn(2)), Ranges: []string{from.Format("2006-01-02T15:04") + "/" +
				from.Add(time.Duration(1+g.rng.Intn(5))*time.Minute).Format("2006-01-02T15:04")}}
			if g.rng.Intn(2) == 0 {
				w.Selector = map[string]string{"team": "a"}
			}
			typ, body = CmdPutWindow, PutWindow{Window: w}
		default:
			typ, body = CmdDeleteWindow, TaskRef{Name: fmt.Sprintf("win-%d", g.rng.Intn(2))}
		}
	case 35: // protocol 8: a shared pool, resized or deleted
		if g.rng.Intn(4) == 0 {
			typ, body = CmdDeletePool, TaskRef{Name: "pool-0"}
		} else {
			p := model.Pool{Name: "pool-0", Slots: 1 + g.rng.Intn(3)}
			if g.rng.Intn(2) == 0 {
				p.RateLimit = g.rateLimit()
			}
			typ, body = CmdPutPool, PutPool{Pool: p}
		}
	case 36: // protocol 8: a fan-out into shards, a broadcast's, a departed executor
		s := command.Shard{ID: g.id()}
		switch g.rng.Intn(3) {
		case 0:
			s.Total = 1 + g.rng.Intn(3)
		case 1:
			s.Executors = []string{"e2", "e1"}[:1+g.rng.Intn(2)]
		default:
			s.Left = g.executor()
		}
		g.created(s.Count())
		typ, body = command.TypeShard, s
	case 37: // protocol 8: a rollout promoted or aborted by hand
		typ = []CommandType{CmdPromoteRollout, CmdAbortRollout}[g.rng.Intn(2)]
		body = TaskRef{Name: g.taskName()}
	case 38: // protocol 9: a restore's steps, of bytes that are no state
		return g.restoreCommand(reqID)
	}
	c, err := NewCommand(typ, reqID, "tester", body)
	if err != nil {
		t.Fatal(err)
	}
	g.seen[typ] = true
	return c
}

// restoreJunk is what the generated restores stage: bytes that are no
// state, in chunks of restoreJunkChunk, so that a switch is refused
// (its staged bytes missing, their checksum or their form) after
// chunks that are taken or refused.
var restoreJunk = []byte(strings.Repeat("not a state file ", 200))

const restoreJunkChunk = 1024

// restoreCommand returns one step of a restore of restoreJunk (or of a
// restore id that is not staged): begin, a chunk at a likely offset,
// the switch, an abort.
func (g *logGen) restoreCommand(reqID string) *Command {
	id := "r1"
	if g.rng.Intn(6) == 0 {
		id = "r2" // a restore that is not the one staged
	}
	var c *Command
	switch g.rng.Intn(5) {
	case 0:
		g.restoreNext = 0
		sum := sha256.Sum256(restoreJunk)
		c = mustCommand(command.TypeRestoreBegin, reqID, command.RestoreBegin{ID: id, Size: int64(len(restoreJunk)), SHA256: hex.EncodeToString(sum[:])})
	case 1:
		off := g.restoreNext // mostly the next chunk, so that switches find every byte
		if g.rng.Intn(4) == 0 || off >= len(restoreJunk) {
			off = restoreJunkChunk * g.rng.Intn(len(restoreJunk)/restoreJunkChunk+1)
		}
		g.restoreNext = off + restoreJunkChunk
		c = &Command{Type: command.TypeRestoreChunk, ReqID: reqID, Actor: "tester", Body: command.EncodeRestoreChunk(&command.RestoreChunk{
			ID: id, Offset: int64(off), Data: restoreJunk[off:min(off+restoreJunkChunk, len(restoreJunk))]})}
	case 2:
		c = mustCommand(command.TypeRestoreSwitch, reqID, command.RestoreRef{ID: id})
	case 3:
		c = mustCommand(command.TypeRestoreAbort, reqID, command.RestoreRef{ID: []string{id, ""}[g.rng.Intn(2)]})
	default:
		return g.restoreCommand(reqID) // the chunks and the switch, more often than the rest
	}
	g.seen[c.Type] = true
	return c
}

func mustCommand(t CommandType, reqID string, body any) *Command {
	c, err := NewCommand(t, reqID, "tester", body)
	if err != nil {
		panic(err)
	}
	return c
}

// entry returns the next log entry: a lone command, or now and then a
// batch of a few (group commit).
func (g *logGen) entry(t *testing.T) *raft.Log {
	t.Helper()
	g.now += int64(g.rng.Intn(5000))
	g.index++
	var c *Command
	if g.rng.Intn(8) == 0 {
		cmds := make([]*Command, 2+g.rng.Intn(3))
		for i := range cmds {
			cmds[i] = g.command(t)
		}
		c = EncodeBatch(g.now, "n1", cmds)
		g.seen[CmdBatch] = true
	} else {
		c = g.command(t)
		c.Now, c.Node = g.now, "n1"
	}
	return &raft.Log{Index: g.index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}
}

// scripted returns entries that surely exercise the protocol 4 policies
// (an upstream failure failing its dependent, an onSuccess chain, a full
// queue), for the random log to go on from.
func (g *logGen) scripted(t *testing.T) []*raft.Log {
	t.Helper()
	var out []*raft.Log
	add := func(typ CommandType, body any) uint64 {
		t.Helper()
		c, err := NewCommand(typ, "", "tester", body)
		if err != nil {
			t.Fatal(err)
		}
		g.now += 100
		g.index++
		c.Now, c.Node = g.now, "n1"
		out = append(out, &raft.Log{Index: g.index, Term: 1, Type: raft.LogCommand, Data: c.Encode()})
		return g.index << 20
	}
	cron := model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *"}
	shell := model.Action{Type: model.ActionShell, Command: "true"}
	add(CmdSetProto, SetProto{Proto: ProtoVersion})
	add(CmdPutTask, PutTask{Task: model.Task{Name: "task-1", Trigger: cron, Action: shell}})
	add(CmdPutTask, PutTask{Task: model.Task{Name: "task-4", Trigger: cron, Action: shell,
		Policy: model.Policy{DependsOn: []string{"task-1"}, OnUpstreamFailure: "fail"}}})
	add(CmdPutTask, PutTask{Task: model.Task{Name: "task-2", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: shell,
		Policy: model.Policy{OnSuccess: []model.Chain{{Task: "task-1", Params: map[string]string{"k": "v"}}}, MaxQueued: 1}}})
	fire := func(task string) uint64 {
		return add(CmdFire, Fire{Tasks: []TaskFire{{Task: task, Version: 1, At: g.now, Key: fmt.Sprint("s-", g.now), Date: "2026-11-30"}}})
	}
	run := func(id uint64, ok bool) {
		add(CmdLease, Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 10_000})
		rep := model.CompleteRequest{Executor: "e1", Success: ok, ExitCode: 1}
		if ok {
			rep.ExitCode, rep.Result = 0, json.RawMessage(`{"rows":1}`) // kept (protocol 8)
		}
		add(CmdComplete, Complete{ID: id, Attempt: 1, Report: rep})
	}
	fire("task-4")
	run(fire("task-1"), false) // task-4 fails with it
	var chained uint64
	for i := 0; i < 3; i++ { // one runs, one queues, one is skipped
		if id := add(CmdTrigger, Trigger{Task: "task-2"}); i == 0 {
			chained = id
		}
	}
	run(chained, true) // creates a task-1 instance
	// Protocol 8: a rate limit of 1 per second; one starts, two wait, the
	// first waiter's turn comes.
	add(CmdPutTask, PutTask{Task: model.Task{Name: "task-3", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: shell,
		Policy: model.Policy{MaxConcurrency: 3, RateLimit: &model.RateLimit{Count: 1, Per: model.Duration(time.Second)}}}})
	add(CmdTrigger, Trigger{Task: "task-3"})
	waiter := add(CmdTrigger, Trigger{Task: "task-3"})
	add(CmdTrigger, Trigger{Task: "task-3"})
	g.now += 1000
	add(CmdFire, Fire{Instances: []uint64{waiter}})
	// A canary rollout whose first canary fails: a rollback and its alert.
	event := model.Trigger{Type: model.TriggerEvent}
	add(CmdPutTask, PutTask{Task: model.Task{Name: "task-5", Trigger: event, Action: shell}})
	add(CmdPutTask, PutTask{Task: model.Task{Name: "task-5", Trigger: event, Action: model.Action{Type: model.ActionShell, Command: "false"},
		Rollout: &model.RolloutSpec{Percent: 100, PromoteAfter: 2}}})
	run(add(CmdTrigger, Trigger{Task: "task-5"}), false)
	// Protocol 9: a restore of bytes that are no state, every byte staged:
	// its switch is refused and drops them.
	sum := sha256.Sum256(restoreJunk)
	add(command.TypeRestoreBegin, command.RestoreBegin{ID: "r1", Size: int64(len(restoreJunk)), SHA256: hex.EncodeToString(sum[:])})
	for off := 0; off < len(restoreJunk); off += restoreJunkChunk {
		g.now += 100
		g.index++
		c := &Command{Type: command.TypeRestoreChunk, Actor: "tester", Now: g.now, Node: "n1", Body: command.EncodeRestoreChunk(&command.RestoreChunk{
			ID: "r1", Offset: int64(off), Data: restoreJunk[off:min(off+restoreJunkChunk, len(restoreJunk))]})}
		out = append(out, &raft.Log{Index: g.index, Term: 1, Type: raft.LogCommand, Data: c.Encode()})
	}
	add(command.TypeRestoreSwitch, command.RestoreRef{ID: "r1"})
	for _, l := range out {
		g.ids = append(g.ids, l.Index<<20)
	}
	return out
}

// applyLog applies entries to f in raft batches of 1..maxBatch and returns
// each entry's result as JSON.
func applyLog(t *testing.T, f *FSM, rng *rand.Rand, entries []*raft.Log, maxBatch int) []string {
	t.Helper()
	var out []string
	for len(entries) > 0 {
		n := min(len(entries), 1+rng.Intn(maxBatch))
		for _, r := range f.ApplyBatch(entries[:n]) {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
		entries = entries[n:]
	}
	return out
}

// TestFSM_Deterministic: two replicas that apply the same log, in
// different raft batches, answer every entry the same and end in the same
// state, meta counters included; the log holds every command type.
func TestFSM_Deterministic(t *testing.T) {
	seen := map[CommandType]bool{}
	// The protocol 4 policies the logs must have exercised: events in the
	// state, refusals in the answers.
	behaviours := map[string]bool{`"type":"chained"`: false, `"type":"queue_full"`: false, `"type":"upstream_failed"`: false,
		`dependsOn cycle: `: false, `onSuccess cycle: `: false, `"type":"rerun"`: false,
		// Protocol 8's canary rollouts: their ends, and the refusal of a
		// plain put during one.
		`"type":"promoted"`: false, `"type":"rollback"`: false, `"type":"rollout_aborted"`: false, `has a rollout in progress`: false, `"rule":"rollback"`: false,
		`{"rows":`: false, // a result kept (protocol 8)
		// Protocol 9: a restore's refusals, at its switch and at a chunk.
		`the staged bytes are no ax state`: false, `bytes staged, the next chunk starts there`: false}
	for seed := int64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			g := newLogGen(seed, 0)
			entries := g.scripted(t)
			for range 800 {
				entries = append(entries, g.entry(t))
			}
			for typ := range g.seen {
				seen[typ] = true
			}
			// Without fsync: durability is not what is compared.
			a := openTest(t, filepath.Join(t.TempDir(), "fsm.db"), true)
			b := openTest(t, filepath.Join(t.TempDir(), "fsm.db"), true)
			ra := applyLog(t, a, rand.New(rand.NewSource(seed)), entries, 1)
			rb := applyLog(t, b, rand.New(rand.NewSource(seed)), entries, 64)
			for i := range ra {
				if ra[i] != rb[i] {
					t.Fatalf("entry %d answered differently:\n%s\n%s", i+1, ra[i], rb[i])
				}
			}
			if da, db := dump(t, a), dump(t, b); da != db {
				t.Fatalf("state machines diverged:\n%s", diffLines(da, db))
			}
			if a.AppliedIndex() != b.AppliedIndex() || a.Pending() != b.Pending() || a.ActiveCount() != b.ActiveCount() {
				t.Fatalf("applied %d/%d pending %d/%d active %d/%d", a.AppliedIndex(), b.AppliedIndex(),
					a.Pending(), b.Pending(), a.ActiveCount(), b.ActiveCount())
			}
			if a.Pending()+a.ActiveCount() == 0 {
				t.Fatal("the log created no instances: the generator is off")
			}
			da, answers := dump(t, a), strings.Join(ra, "\n")
			for b := range behaviours {
				behaviours[b] = behaviours[b] || strings.Contains(da, hex.EncodeToString([]byte(b))) || strings.Contains(answers, b)
			}
		})
	}
	for b, ok := range behaviours {
		if !ok {
			t.Errorf("the generated logs never produced %s: extend logGen", b)
		}
	}
	for typ := range cmdNames {
		if !seen[typ] {
			t.Errorf("no %s command in the generated logs: extend logGen with every new command type", typ)
		}
	}
}
