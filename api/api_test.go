package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ax-scheduler/ax/action"
	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
	"github.com/ax-scheduler/ax/model/live"
	"github.com/ax-scheduler/ax/model/member"
)

// call is one recorded Backend call.
type call struct {
	Method    string
	Caller    api.Caller
	Name      string
	Task      *model.Task
	Filter    model.TaskFilter
	Join      member.JoinRequest
	Cmd       string
	Forwarded bool
	Submit    []model.SubmitRequest
	Trigger   model.TriggerRequest
	Instances model.InstanceFilter
	Live      live.Filter
	Upcoming  live.UpcomingQuery
	Offset    int64
	N         int              // days, fires or runs of a console read
	Counts    live.CountFilter // TaskCounts
	Put       api.PutOptions   // PutTask, PlanTask
	Cursor    live.FireCursor  // TaskFires
	Rerun     model.RerunRequest
}

// fakeBackend records every call and answers with its configured values.
// Err, when set, is returned by every method that returns an error except
// ReadBarrier, which returns BarrierErr and is counted, not recorded.
type fakeBackend struct {
	mu       sync.Mutex
	calls    []call
	barriers int

	Err        error
	BarrierErr error

	Write   *model.WriteResult
	Task    *model.Task
	List    *model.TaskList
	History *model.TaskHistory
	Status  *model.ClusterStatus
	HealthV *member.Health
	Applied []byte
	ReadIdx uint64

	Events    *model.TaskEvents
	Submitted *model.SubmitResult
	Triggered *model.Submitted
	Instance  *model.Instance
	Instances *model.InstanceList

	// Live backend (live_test.go). Stop nil: Stopping is closed, so
	// streams end at once (the role matrix needs them to end).
	Stop      chan struct{}
	SubErr    error
	subs      []*fakeSub
	subAdded  chan struct{}
	ACL       bool
	Node      string
	UpcomingV *live.Upcoming
	// LogFn, when set, answers InstanceLog.
	LogFn     func(offset int64) (*model.InstanceLog, error)
	OverviewV *live.Overview
	Summaries *live.TaskSummaryList
	Calendar  *live.TaskCalendar
	Fires     *live.TaskFires
	Graph     *live.TaskGraph
	CountsV   *live.InstanceCounts
	ChannelsV *channel.List
}

// The fakes of the roles: each is a small type with its role's methods
// alone, over one fakeBackend that holds the answers and records the
// calls.
type (
	fakeBarrier   struct{ *fakeBackend }
	fakeTasks     struct{ *fakeBackend }
	fakeInstances struct{ *fakeBackend }
	fakeExecutors struct{ *fakeBackend }
	fakeCluster   struct{ *fakeBackend }
	fakeACL       struct{ *fakeBackend }
	fakeSecrets   struct{ *fakeBackend }
	fakeChannels  struct{ *fakeBackend }
	fakeLive      struct{ *fakeBackend }
	fakeConsole   struct{ *fakeBackend }
	fakeAlerts    struct{ *fakeBackend }
	fakeInternal  struct{ *fakeBackend }
)

var (
	_ api.BarrierBackend  = fakeBarrier{}
	_ api.TaskBackend     = fakeTasks{}
	_ api.InstanceBackend = fakeInstances{}
	_ api.ExecutorBackend = fakeExecutors{}
	_ api.ClusterBackend  = fakeCluster{}
	_ api.ACLBackend      = fakeACL{}
	_ api.SecretBackend   = fakeSecrets{}
	_ api.ChannelBackend  = fakeChannels{}
	_ api.LiveBackend     = fakeLive{}
	_ api.ConsoleBackend  = fakeConsole{}
	_ api.AlertsBackend   = fakeAlerts{}
	_ api.InternalBackend = fakeInternal{}
)

// configure gives cfg a role fake over f for every role, and f's node id
// and stop channel.
func (f *fakeBackend) configure(cfg *api.Config) {
	cfg.Barrier, cfg.Tasks, cfg.Instances, cfg.Executors = fakeBarrier{f}, fakeTasks{f}, fakeInstances{f}, fakeExecutors{f}
	cfg.Cluster, cfg.ACL, cfg.Secrets, cfg.Channels = fakeCluster{f}, fakeACL{f}, fakeSecrets{f}, fakeChannels{f}
	cfg.Live, cfg.Console, cfg.Alerts, cfg.Shared = fakeLive{f}, fakeConsole{f}, fakeAlerts{f}, fakeCalendars{f}
	cfg.NodeID, cfg.Stopping, cfg.Pages = f.nodeID(), f.stopping(), fakePages{f}
}

// withFakes is cfg with the role fakes over f.
func withFakes(f *fakeBackend, cfg api.Config) api.Config {
	f.configure(&cfg)
	return cfg
}

func (f *fakeBackend) record(ctx context.Context, c call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.Forwarded = api.IsForwarded(ctx)
	f.calls = append(f.calls, c)
}

// Calls returns a copy of the recorded calls.
func (f *fakeBackend) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// Methods returns the names of the recorded calls in order.
func (f *fakeBackend) Methods() []string {
	var out []string
	for _, c := range f.Calls() {
		out = append(out, c.Method)
	}
	return out
}

func (f *fakeBackend) write(name string) (*model.WriteResult, error) {
	if f.Err != nil {
		return nil, f.Err
	}
	if f.Write != nil {
		return f.Write, nil
	}
	return &model.WriteResult{Name: name, Version: 1, Changed: true}, nil
}

func (f fakeTasks) PutTask(ctx context.Context, c api.Caller, t *model.Task, o api.PutOptions) (*model.WriteResult, error) {
	f.record(ctx, call{Method: "PutTask", Caller: c, Name: t.Name, Task: t, Put: o})
	return f.write(t.Name)
}

func (f fakeTasks) PlanTask(ctx context.Context, t *model.Task, o api.PutOptions) (*model.TaskPlan, error) {
	f.record(ctx, call{Method: "PlanTask", Name: t.Name, Task: t, Put: o})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.TaskPlan{Name: t.Name, Op: model.PlanCreate, Task: t}, nil
}

func (f fakeTasks) DeleteTask(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	f.record(ctx, call{Method: "DeleteTask", Caller: c, Name: name})
	return f.write(name)
}

func (f fakeTasks) PauseTask(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	f.record(ctx, call{Method: "PauseTask", Caller: c, Name: name})
	return f.write(name)
}

func (f fakeTasks) ResumeTask(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	f.record(ctx, call{Method: "ResumeTask", Caller: c, Name: name})
	return f.write(name)
}

func (f fakeTasks) GetTask(ctx context.Context, name string) (*model.Task, error) {
	f.record(ctx, call{Method: "GetTask", Name: name})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.Task != nil {
		return f.Task, nil
	}
	return &model.Task{Name: name}, nil
}

func (f fakeTasks) ListTasks(ctx context.Context, flt model.TaskFilter) (*model.TaskList, error) {
	f.record(ctx, call{Method: "ListTasks", Filter: flt})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.List != nil {
		return f.List, nil
	}
	return &model.TaskList{Tasks: []model.Task{}}, nil
}

func (f fakeTasks) TaskHistory(ctx context.Context, name string) (*model.TaskHistory, error) {
	f.record(ctx, call{Method: "TaskHistory", Name: name})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.History != nil {
		return f.History, nil
	}
	return &model.TaskHistory{Name: name}, nil
}

func (f fakeTasks) PromoteRollout(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	f.record(ctx, call{Method: "PromoteRollout", Caller: c, Name: name})
	return f.write(name)
}

func (f fakeTasks) AbortRollout(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	f.record(ctx, call{Method: "AbortRollout", Caller: c, Name: name})
	return f.write(name)
}

func (f fakeTasks) Rollout(ctx context.Context, name string) (*model.Rollout, error) {
	f.record(ctx, call{Method: "Rollout", Name: name})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.Rollout{Task: name, Phase: model.RolloutProgressing}, nil
}

func (f fakeTasks) TaskEvents(ctx context.Context, name string) (*model.TaskEvents, error) {
	f.record(ctx, call{Method: "TaskEvents", Name: name})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.Events != nil {
		return f.Events, nil
	}
	return &model.TaskEvents{Task: name, Events: []model.Event{}}, nil
}

func (f fakeInstances) Submit(ctx context.Context, c api.Caller, task string, reqs []model.SubmitRequest) (*model.SubmitResult, error) {
	f.record(ctx, call{Method: "Submit", Caller: c, Name: task, Submit: reqs})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.Submitted != nil {
		return f.Submitted, nil
	}
	res := &model.SubmitResult{Instances: []model.Submitted{}}
	for i := range reqs {
		res.Instances = append(res.Instances, model.Submitted{ID: model.FormatID(uint64(i + 1)), State: model.StateScheduled})
	}
	return res, nil
}

func (f fakeInstances) Trigger(ctx context.Context, c api.Caller, task string, req model.TriggerRequest) (*model.Submitted, error) {
	f.record(ctx, call{Method: "Trigger", Caller: c, Name: task, Trigger: req})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.Triggered != nil {
		return f.Triggered, nil
	}
	return &model.Submitted{ID: model.FormatID(1), State: model.StateReady}, nil
}

func (f fakeInstances) GetInstance(ctx context.Context, id string) (*model.Instance, error) {
	f.record(ctx, call{Method: "GetInstance", Name: id})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.Instance != nil {
		return f.Instance, nil
	}
	return &model.Instance{ID: id}, nil
}

func (f fakeInstances) ListInstances(ctx context.Context, flt model.InstanceFilter) (*model.InstanceList, error) {
	f.record(ctx, call{Method: "ListInstances", Instances: flt})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.Instances != nil {
		return f.Instances, nil
	}
	return &model.InstanceList{Instances: []model.Instance{}}, nil
}

func (f fakeInstances) Shards(ctx context.Context, id string) (*model.ShardList, error) {
	f.record(ctx, call{Method: "Shards", Name: id})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.ShardList{Instance: id, Shards: []model.Instance{}}, nil
}

func (f fakeInstances) InstanceResult(ctx context.Context, id string) (*model.InstanceResult, error) {
	f.record(ctx, call{Method: "InstanceResult", Name: id})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.InstanceResult{InstanceID: id, Task: "t", Attempt: 1, Result: []byte(`{"rows":1}`)}, nil
}

func (f fakeInstances) InstanceLog(ctx context.Context, id string, offset int64) (*model.InstanceLog, error) {
	f.record(ctx, call{Method: "InstanceLog", Name: id, Offset: offset})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.LogFn != nil {
		return f.LogFn(offset)
	}
	return &model.InstanceLog{InstanceID: id, Offset: offset}, nil
}

func (f fakeInstances) Decide(ctx context.Context, c api.Caller, id, action string, attempt int, comment string) (string, error) {
	f.record(ctx, call{Method: "Decide", Caller: c, Name: id, Cmd: action})
	if f.Err != nil {
		return "", f.Err
	}
	return model.StateCanceled, nil
}

func (f fakeExecutors) Poll(ctx context.Context, req model.PollRequest) (*model.PollResponse, error) {
	f.record(ctx, call{Method: "Poll", Name: req.Executor})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.PollResponse{Jobs: []model.Job{}}, nil
}

func (f fakeExecutors) Heartbeat(ctx context.Context, req model.HeartbeatRequest) (*model.HeartbeatResponse, error) {
	f.record(ctx, call{Method: "Heartbeat", Name: req.Executor})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.HeartbeatResponse{Stop: []model.StopAttempt{}}, nil
}

func (f fakeExecutors) Complete(ctx context.Context, c api.Caller, executionID string, req model.CompleteRequest) (string, error) {
	f.record(ctx, call{Method: "Complete", Caller: c, Name: executionID})
	if f.Err != nil {
		return "", f.Err
	}
	return model.StateSuccess, nil
}

func (f fakeExecutors) CompleteBatch(ctx context.Context, c api.Caller, items []model.CompleteItem) ([]model.CompleteOutcome, error) {
	f.record(ctx, call{Method: "CompleteBatch", Caller: c})
	if f.Err != nil {
		return nil, f.Err
	}
	return make([]model.CompleteOutcome, len(items)), nil
}

func (f fakeInstances) Rerun(ctx context.Context, c api.Caller, id string) (*model.Submitted, error) {
	f.record(ctx, call{Method: "Rerun", Caller: c, Name: id})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.Submitted{ID: id, State: model.StateReady}, nil
}

func (f fakeInstances) RerunTask(ctx context.Context, c api.Caller, task string, req model.RerunRequest) (*model.RerunResult, error) {
	f.record(ctx, call{Method: "RerunTask", Caller: c, Name: task, Rerun: req})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.RerunResult{Instances: []model.Submitted{}}, nil
}

func (f fakeInstances) Backfill(ctx context.Context, c api.Caller, task string, req model.BackfillRequest) (*model.BackfillResult, error) {
	f.record(ctx, call{Method: "Backfill", Caller: c, Name: task})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.BackfillResult{Created: []string{}}, nil
}

// ReadBarrier counts barriers apart from the calls (Barriers): every
// read makes one by default.
func (f fakeBarrier) ReadBarrier(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.barriers++
	return f.BarrierErr
}

// Barriers returns how many read barriers were asked for.
func (f *fakeBackend) Barriers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.barriers
}

func (f fakeCluster) Join(ctx context.Context, req member.JoinRequest) error {
	f.record(ctx, call{Method: "Join", Join: req})
	return f.Err
}

func (f fakeCluster) MemberKey(ctx context.Context) (*member.MemberKey, error) {
	f.record(ctx, call{Method: "MemberKey"})
	return &member.MemberKey{Key: []byte("key"), Required: true}, f.Err
}

func (f fakeCluster) Cluster(ctx context.Context) (*model.ClusterStatus, error) {
	f.record(ctx, call{Method: "Cluster"})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.Status != nil {
		return f.Status, nil
	}
	return &model.ClusterStatus{}, nil
}

func (f fakeCluster) RemoveNode(ctx context.Context, id string) error {
	f.record(ctx, call{Method: "RemoveNode", Name: id})
	return f.Err
}

func (f fakeCluster) Transfer(ctx context.Context, id string) error {
	f.record(ctx, call{Method: "Transfer", Name: id})
	return f.Err
}

func (f fakeCluster) Health(ctx context.Context) *member.Health {
	f.record(ctx, call{Method: "Health"})
	if f.HealthV != nil {
		return f.HealthV
	}
	return &member.Health{Node: "n1", Role: member.RoleLeader}
}

func (f fakeCluster) Snapshot(ctx context.Context, w io.Writer, started func(uint64)) error {
	f.record(ctx, call{Method: "Snapshot"})
	if f.Err != nil {
		return f.Err
	}
	started(42)
	_, err := io.WriteString(w, "state")
	return err
}

func (f fakeCluster) Restore(ctx context.Context, body io.Reader, sum string) (*member.StateInfo, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	f.record(ctx, call{Method: "Restore", Name: string(data) + " " + sum})
	if f.Err != nil {
		return nil, f.Err
	}
	return &member.StateInfo{Index: 42, Tasks: 1, Size: int64(len(data))}, nil
}

func (f fakeInternal) ApplyForwarded(ctx context.Context, cmd []byte) ([]byte, error) {
	f.record(ctx, call{Method: "ApplyForwarded", Cmd: string(cmd)})
	if f.Err != nil {
		return nil, f.Err
	}
	return f.Applied, nil
}

func (f fakeInternal) WaitApplied(ctx context.Context, index uint64) error {
	f.record(ctx, call{Method: "WaitApplied"})
	return f.Err
}

func (f fakeInternal) ReadIndex(ctx context.Context, known uint64) (uint64, error) {
	f.record(ctx, call{Method: "ReadIndex"})
	if f.Err != nil {
		return 0, f.Err
	}
	return f.ReadIdx, nil
}

func (f fakeExecutors) Executors(ctx context.Context) (*model.ExecutorList, error) {
	f.record(ctx, call{Method: "Executors"})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.ExecutorList{Executors: []model.ExecutorStatus{}}, nil
}

func (f fakeACL) ACLBootstrap(ctx context.Context, c api.Caller) (*model.ACLToken, error) {
	f.record(ctx, call{Method: "ACLBootstrap", Caller: c})
	return f.token("bootstrap")
}

func (f fakeACL) CreateToken(ctx context.Context, c api.Caller, req model.ACLTokenRequest) (*model.ACLToken, error) {
	f.record(ctx, call{Method: "CreateToken", Caller: c, Name: req.Name})
	return f.token(req.Name)
}

func (f fakeACL) ListTokens(ctx context.Context) (*model.ACLTokenList, error) {
	f.record(ctx, call{Method: "ListTokens"})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.ACLTokenList{Tokens: []model.ACLToken{}}, nil
}

func (f fakeACL) RevokeToken(ctx context.Context, c api.Caller, name string) (*model.ACLToken, error) {
	f.record(ctx, call{Method: "RevokeToken", Caller: c, Name: name})
	return f.token(name)
}

func (f *fakeBackend) token(name string) (*model.ACLToken, error) {
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.ACLToken{Name: name, Role: model.RoleAdmin}, nil
}

func (f fakeSecrets) PutSecret(ctx context.Context, c api.Caller, name, value string) (*model.Secret, error) {
	f.record(ctx, call{Method: "PutSecret", Caller: c, Name: name})
	return f.secret(name)
}

func (f fakeSecrets) ListSecrets(ctx context.Context) (*model.SecretList, error) {
	f.record(ctx, call{Method: "ListSecrets"})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.SecretList{Secrets: []model.Secret{}}, nil
}

func (f fakeSecrets) DeleteSecret(ctx context.Context, c api.Caller, name string) (*model.Secret, error) {
	f.record(ctx, call{Method: "DeleteSecret", Caller: c, Name: name})
	return f.secret(name)
}

func (f *fakeBackend) secret(name string) (*model.Secret, error) {
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.Secret{Name: name, Version: 1}, nil
}

func (f fakeChannels) PutChannel(ctx context.Context, c api.Caller, name string, ch *channel.Channel) (*channel.Channel, error) {
	f.record(ctx, call{Method: "PutChannel", Caller: c, Name: name})
	if f.Err != nil {
		return nil, f.Err
	}
	out := *ch
	out.SecretSet, out.Secret, out.Version = ch.Secret != "", "", 1
	return &out, nil
}

func (f fakeChannels) ListChannels(ctx context.Context) (*channel.List, error) {
	f.record(ctx, call{Method: "ListChannels"})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.ChannelsV != nil {
		return f.ChannelsV, nil
	}
	return &channel.List{Channels: []channel.Channel{}}, nil
}

func (f fakeChannels) GetChannel(ctx context.Context, name string) (*channel.Channel, error) {
	f.record(ctx, call{Method: "GetChannel", Name: name})
	if f.Err != nil {
		return nil, f.Err
	}
	if f.ChannelsV != nil && len(f.ChannelsV.Channels) > 0 {
		return &f.ChannelsV.Channels[0], nil
	}
	return &channel.Channel{Name: name, Type: channel.TypeWebhook, URL: "https://h/x"}, nil
}

func (f fakeChannels) DeleteChannel(ctx context.Context, c api.Caller, name string) (*channel.Channel, error) {
	f.record(ctx, call{Method: "DeleteChannel", Caller: c, Name: name})
	if f.Err != nil {
		return nil, f.Err
	}
	return &channel.Channel{Name: name}, nil
}

// request describes one HTTP request in a table case.
type request struct {
	method string
	path   string
	body   string
	header map[string]string
}

// serve sends req to a server built from cfg with fb as its backend.
func serve(t *testing.T, cfg api.Config, fb *fakeBackend, req request) *httptest.ResponseRecorder {
	t.Helper()
	fb.configure(&cfg)
	s := api.New(cfg)
	var r *http.Request
	if req.body == "" {
		r = httptest.NewRequest(req.method, req.path, nil)
	} else {
		r = httptest.NewRequest(req.method, req.path, strings.NewReader(req.body))
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, r)
	return rec
}

// errorOf decodes a {"error": {...}} response body, failing the test when
// the body is not exactly that shape.
func errorOf(t *testing.T, rec *httptest.ResponseRecorder) model.Error {
	t.Helper()
	if got, want := rec.Header().Get("Content-Type"), "application/json"; got != want {
		t.Errorf("Content-Type: got %q, want %q", got, want)
	}
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	var body struct {
		Error *model.Error `json:"error"`
	}
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("error body does not decode: %v", err)
	}
	if body.Error == nil {
		t.Fatalf("response has no error object")
	}
	if body.Error.Code == "" || body.Error.Message == "" {
		t.Errorf("error: got code %q message %q, want both set", body.Error.Code, body.Error.Message)
	}
	return *body.Error
}

// decodeBody decodes a successful JSON response into v.
func decodeBody(t *testing.T, rec *httptest.ResponseRecorder, v any) {
	t.Helper()
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("response %q does not decode: %v", rec.Body.String(), err)
	}
}

// taskBody returns a task definition with the given trigger, action and
// policy JSON objects; empty arguments take a valid default.
func taskBody(name, trigger, action, policy string) string {
	if trigger == "" {
		trigger = `{"type":"cron","expression":"0 2 * * *","timezone":"Asia/Shanghai"}`
	}
	if action == "" {
		action = `{"type":"shell","command":"echo hi"}`
	}
	if policy == "" {
		policy = `{}`
	}
	n := ""
	if name != "" {
		n = fmt.Sprintf(`"name":%q,`, name)
	}
	return fmt.Sprintf(`{%s"trigger":%s,"action":%s,"policy":%s}`, n, trigger, action, policy)
}

func TestServer_BadInputWritesNothing(t *testing.T) {
	put := func(body string) request {
		return request{method: http.MethodPut, path: "/v1/tasks/daily", body: body}
	}
	cron := func(expr, tz string) string {
		return taskBody("", fmt.Sprintf(`{"type":"cron","expression":%q,"timezone":%q}`, expr, tz), "", "")
	}
	withTrigger := func(tr string) string { return taskBody("", tr, "", "") }
	withAction := func(a string) string { return taskBody("", "", a, "") }
	withPolicy := func(p string) string { return taskBody("", "", "", p) }
	big := `{"action":{"type":"shell","command":"` + strings.Repeat("a", api.DefaultMaxBody) + `"}}`

	tests := []struct {
		name       string
		req        request
		wantStatus int
		wantCode   string
		wantField  string
	}{
		{"unknown top-level field", put(`{"trigger":{"type":"event"},"action":{"type":"sdk","handler":"h"},"bogus":1}`), 400, model.CodeInvalid, "bogus"},
		{"unknown nested field", put(withTrigger(`{"type":"event","bogus":1}`)), 400, model.CodeInvalid, "trigger.bogus"},
		{"unknown deeply nested field", put(withPolicy(`{"maxRetries":1,"retryIntervall":"5m"}`)), 400, model.CodeInvalid, "policy.retryIntervall"},
		{"unknown field under case-folded keys", put(`{"Trigger":{"Type":"event","bogus":1},"action":{"type":"sdk","handler":"h"}}`), 400, model.CodeInvalid, "Trigger.bogus"},
		{"unknown field after a map", put(taskBody("", "", `{"type":"shell","command":"x","env":{"bogus":"1"},"bogus":1}`, "")), 400, model.CodeInvalid, "action.bogus"},
		{"wrong JSON type", put(withPolicy(`{"maxRetries":"3"}`)), 400, model.CodeInvalid, "policy.maxRetries"},
		{"uppercase name in URL", request{method: http.MethodPut, path: "/v1/tasks/Daily", body: taskBody("", "", "", "")}, 400, model.CodeInvalid, "name"},
		{"name longer than 128", request{method: http.MethodPut, path: "/v1/tasks/" + strings.Repeat("a", 129), body: taskBody("", "", "", "")}, 400, model.CodeInvalid, "name"},
		{"name starting with dash", request{method: http.MethodPut, path: "/v1/tasks/-daily", body: taskBody("", "", "", "")}, 400, model.CodeInvalid, "name"},
		{"body name differs from URL", put(taskBody("weekly", "", "", "")), 400, model.CodeInvalid, "name"},
		{"missing trigger type", put(withTrigger(`{"expression":"0 2 * * *"}`)), 400, model.CodeInvalid, "trigger.type"},
		{"missing trigger", put(`{"action":{"type":"shell","command":"echo"}}`), 400, model.CodeInvalid, "trigger.type"},
		{"unknown trigger type", put(withTrigger(`{"type":"sometimes"}`)), 400, model.CodeInvalid, "trigger.type"},
		{"cron minute 61", put(cron("61 2 * * *", "UTC")), 400, model.CodeInvalid, "trigger.expression"},
		{"cron hour 24", put(cron("0 24 * * *", "UTC")), 400, model.CodeInvalid, "trigger.expression"},
		{"cron four fields", put(cron("0 2 * *", "UTC")), 400, model.CodeInvalid, "trigger.expression"},
		{"cron seven fields", put(cron("0 0 2 * * * *", "UTC")), 400, model.CodeInvalid, "trigger.expression"},
		{"cron unknown timezone", put(cron("0 2 * * *", "Mars/Base")), 400, model.CodeInvalid, "trigger.timezone"},
		{"cron CRON_TZ prefix", put(cron("CRON_TZ=Asia/Shanghai 0 2 * * *", "")), 400, model.CodeInvalid, "trigger.expression"},
		{"cron never fires", put(cron("0 0 30 2 *", "UTC")), 400, model.CodeInvalid, "trigger.expression"},
		{"cron with every", put(withTrigger(`{"type":"cron","expression":"0 2 * * *","every":"1m"}`)), 400, model.CodeInvalid, "trigger.every"},
		{"interval 500ms", put(withTrigger(`{"type":"interval","every":"500ms"}`)), 400, model.CodeInvalid, "trigger.every"},
		{"endAt before startAt", put(withTrigger(`{"type":"cron","expression":"0 2 * * *","startAt":"2030-02-01T00:00:00Z","endAt":"2030-01-01T00:00:00Z"}`)), 400, model.CodeInvalid, "trigger.endAt"},
		{"negative maxRuns", put(withTrigger(`{"type":"interval","every":"1m","maxRuns":-1}`)), 400, model.CodeInvalid, "trigger.maxRuns"},
		{"jitter not below the period", put(withTrigger(`{"type":"interval","every":"1m","jitter":"1m"}`)), 400, model.CodeInvalid, "trigger.jitter"},
		{"jitter on an event trigger", put(withTrigger(`{"type":"event","jitter":"1s"}`)), 400, model.CodeInvalid, "trigger.jitter"},
		{"bad RFC 3339 endAt", put(withTrigger(`{"type":"cron","expression":"0 2 * * *","endAt":"tomorrow"}`)), 400, model.CodeInvalid, "trigger.endAt"},
		{"interval without every", put(withTrigger(`{"type":"interval"}`)), 400, model.CodeInvalid, "trigger.every"},
		{"once with at and delay", put(withTrigger(`{"type":"once","at":"2030-01-02T03:04:05Z","delay":"5m"}`)), 400, model.CodeInvalid, "trigger.delay"},
		{"once with neither", put(withTrigger(`{"type":"once"}`)), 400, model.CodeInvalid, "trigger.at"},
		{"once negative delay", put(withTrigger(`{"type":"once","delay":"-5m"}`)), 400, model.CodeInvalid, "trigger.delay"},
		{"bad RFC 3339 at", put(withTrigger(`{"type":"once","at":"2030-01-02 03:04"}`)), 400, model.CodeInvalid, "trigger.at"},
		{"bad duration policy.timeout", put(withPolicy(`{"timeout":"5x"}`)), 400, model.CodeInvalid, "policy.timeout"},
		{"bad duration policy.retryInterval", put(withPolicy(`{"retryInterval":"5x"}`)), 400, model.CodeInvalid, "policy.retryInterval"},
		{"numeric duration", put(withPolicy(`{"timeout":30}`)), 400, model.CodeInvalid, "policy.timeout"},
		{"shell without command", put(withAction(`{"type":"shell"}`)), 400, model.CodeInvalid, "action.command"},
		{"http relative URL", put(withAction(`{"type":"http","url":"/hook"}`)), 400, model.CodeInvalid, "action.url"},
		{"unknown action type", put(withAction(`{"type":"carrier-pigeon"}`)), 400, model.CodeInvalid, "action.type"},
		{"policy.maxRetries -1", put(withPolicy(`{"maxRetries":-1}`)), 400, model.CodeInvalid, "policy.maxRetries"},
		{"policy.overlap bogus", put(withPolicy(`{"overlap":"bogus"}`)), 400, model.CodeInvalid, "policy.overlap"},
		{"policy.catchup bogus", put(withPolicy(`{"catchup":"bogus"}`)), 400, model.CodeInvalid, "policy.catchup"},
		{"policy.notify not a URL", put(withPolicy(`{"notify":["hooks.internal/ax"]}`)), 400, model.CodeInvalid, "policy.notify"},
		{"bad template in command", put(withAction(`{"type":"shell","command":"echo {{.Foo"}`)), 400, model.CodeInvalid, "action.command"},
		{"unknown template field in command", put(withAction(`{"type":"shell","command":"echo {{.Nope}}"}`)), 400, model.CodeInvalid, "action.command"},
		{"unquotable value in command", put(withAction(`{"type":"shell","command":"cat <<EOF\n{{.Params.x}}\nEOF"}`)), 400, model.CodeInvalid, "action.command"},
		{"bad url template", put(withAction(`{"type":"http","url":"https://example.com/{{.Date \"x\"}}"}`)), 400, model.CodeInvalid, "action.url"},
		{"bad body template", put(withAction(`{"type":"http","url":"https://example.com/hook","body":"{\"x\":\"{{.Params.x.y}}\"}"}`)), 400, model.CodeInvalid, "action.body"},
		{"malformed JSON", put(`{"trigger": {`), 400, model.CodeInvalid, ""},
		{"syntax error", put(`{"trigger": nope}`), 400, model.CodeInvalid, ""},
		{"empty body", put(""), 400, model.CodeInvalid, ""},
		{"two JSON values", put(taskBody("", "", "", "") + taskBody("", "", "", "")), 400, model.CodeInvalid, ""},
		{"JSON array", put(`[]`), 400, model.CodeInvalid, ""},
		{"body over 1 MiB", put(big), 413, model.CodeTooLarge, ""},
		{"idempotency key over 128", request{method: http.MethodPut, path: "/v1/tasks/daily", body: taskBody("", "", "", ""),
			header: map[string]string{"Idempotency-Key": strings.Repeat("k", 129)}}, 400, model.CodeInvalid, "Idempotency-Key"},
		{"actor over 128", request{method: http.MethodPost, path: "/v1/tasks/daily/pause",
			header: map[string]string{"X-AX-Actor": strings.Repeat("a", 129)}}, 400, model.CodeInvalid, "X-AX-Actor"},
		{"bad name on delete", request{method: http.MethodDelete, path: "/v1/tasks/Daily"}, 400, model.CodeInvalid, "name"},
		{"bad name on pause", request{method: http.MethodPost, path: "/v1/tasks/-x/pause"}, 400, model.CodeInvalid, "name"},
		{"bad name on get", request{method: http.MethodGet, path: "/v1/tasks/A"}, 400, model.CodeInvalid, "name"},
		{"bad name on history", request{method: http.MethodGet, path: "/v1/tasks/_x/history"}, 400, model.CodeInvalid, "name"},
		{"list limit=0", request{method: http.MethodGet, path: "/v1/tasks?limit=0"}, 400, model.CodeInvalid, "limit"},
		{"list limit=abc", request{method: http.MethodGet, path: "/v1/tasks?limit=abc"}, 400, model.CodeInvalid, "limit"},
		{"list limit=1001", request{method: http.MethodGet, path: "/v1/tasks?limit=1001"}, 400, model.CodeInvalid, "limit"},
		{"list label without =", request{method: http.MethodGet, path: "/v1/tasks?label=env"}, 400, model.CodeInvalid, "label"},
		{"list label with empty key", request{method: http.MethodGet, path: "/v1/tasks?label==prod"}, 400, model.CodeInvalid, "label"},
		{"list paused=maybe", request{method: http.MethodGet, path: "/v1/tasks?paused=maybe"}, 400, model.CodeInvalid, "paused"},
		{"list consistent=maybe", request{method: http.MethodGet, path: "/v1/tasks?consistent=maybe"}, 400, model.CodeInvalid, "consistent"},
		{"get consistent=maybe", request{method: http.MethodGet, path: "/v1/tasks/daily?consistent=maybe"}, 400, model.CodeInvalid, "consistent"},
		{"bad name with consistent=true", request{method: http.MethodGet, path: "/v1/tasks/A?consistent=true"}, 400, model.CodeInvalid, "name"},
		{"bad history name with consistent=true", request{method: http.MethodGet, path: "/v1/tasks/-a/history?consistent=true"}, 400, model.CodeInvalid, "name"},
		{"bad limit with consistent=true", request{method: http.MethodGet, path: "/v1/tasks?consistent=true&limit=0"}, 400, model.CodeInvalid, "limit"},
		{"join bad id", request{method: http.MethodPost, path: "/v1/cluster/join", body: `{"id":"N2","raftAddr":"10.0.0.2:7071","httpAddr":"10.0.0.2:7070"}`}, 400, model.CodeInvalid, "id"},
		{"join bad raftAddr", request{method: http.MethodPost, path: "/v1/cluster/join", body: `{"id":"n2","raftAddr":"10.0.0.2","httpAddr":"10.0.0.2:7070"}`}, 400, model.CodeInvalid, "raftAddr"},
		{"join bad httpAddr port", request{method: http.MethodPost, path: "/v1/cluster/join", body: `{"id":"n2","raftAddr":"10.0.0.2:7071","httpAddr":"10.0.0.2:99999"}`}, 400, model.CodeInvalid, "httpAddr"},
		{"join unknown field", request{method: http.MethodPost, path: "/v1/cluster/join", body: `{"id":"n2","raft":"x"}`}, 400, model.CodeInvalid, "raft"},
		{"remove bad node", request{method: http.MethodDelete, path: "/v1/cluster/N2"}, 400, model.CodeInvalid, "node"},
		{"transfer bad id", request{method: http.MethodPost, path: "/v1/cluster/transfer", body: `{"id":"-n2"}`}, 400, model.CodeInvalid, "id"},
		{"resultFrom not a pointer", put(withAction(`{"type":"http","url":"https://example.com/hook","resultFrom":"data/rows"}`)), 400, model.CodeInvalid, "action.resultFrom"},
		{"resultFrom on a shell action", put(withAction(`{"type":"shell","command":"true","resultFrom":"/x"}`)), 400, model.CodeInvalid, "action.resultFrom"},
		{"result of a failed attempt", request{method: http.MethodPost, path: "/v1/attempts/0000000000100000-1/complete",
			body: `{"executor":"w1","success":false,"result":{"rows":1}}`}, 400, model.CodeInvalid, "result"},
		{"result over 64 KiB", request{method: http.MethodPost, path: "/v1/attempts/complete",
			body: `[{"executionId":"0000000000100000-1","report":{"executor":"w1","success":true,"result":"` + strings.Repeat("x", model.MaxResult) + `"}}]`}, 400, model.CodeInvalid, "[0].report.result"},
		{"result of a bad id", request{method: http.MethodGet, path: "/v1/instances/xyz/result"}, 400, model.CodeInvalid, "id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{CheckAction: action.Check}, fb, tt.req)
			if got := fb.Methods(); len(got) != 0 {
				t.Errorf("backend calls: got %v, want none", got)
			}
			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			e := errorOf(t, rec)
			if e.Code != tt.wantCode {
				t.Errorf("code: got %q, want %q", e.Code, tt.wantCode)
			}
			if e.Field != tt.wantField {
				t.Errorf("field: got %q, want %q (message %q)", e.Field, tt.wantField, e.Message)
			}
		})
	}
}

func TestServer_PutTask(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		body     string
		wantTask model.Task
	}{
		{
			name: "name defaults from URL",
			path: "/v1/tasks/daily_report",
			body: taskBody("", "", "", `{"maxRetries":2,"retryInterval":"5m","timeout":"20m","notify":["http://hooks.internal/ax"]}`),
			wantTask: model.Task{
				Name:    "daily_report",
				Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *", Timezone: "Asia/Shanghai"},
				Action:  model.Action{Type: model.ActionShell, Command: "echo hi"},
				Policy: model.Policy{MaxRetries: 2, RetryInterval: model.Duration(5 * 60e9), Timeout: model.Timeout(20 * 60e9),
					Notify: []string{"http://hooks.internal/ax"}},
			},
		},
		{
			name: "body name equal to URL",
			path: "/v1/tasks/hook.v2",
			body: `{"name":"hook.v2","trigger":{"type":"interval","every":"1m"},"action":{"type":"http","url":"https://example.com/x","method":"post"},"labels":{"env":"prod"}}`,
			wantTask: model.Task{
				Name:    "hook.v2",
				Trigger: model.Trigger{Type: model.TriggerInterval, Every: model.Duration(60e9)},
				Action:  model.Action{Type: model.ActionHTTP, URL: "https://example.com/x", Method: "post"},
				Labels:  map[string]string{"env": "prod"},
			},
		},
		{
			name: "templates that expand",
			path: "/v1/tasks/nightly",
			body: taskBody("", "", `{"type":"shell","command":"run --date {{.Yesterday}} {{with .Params.x}}-x {{.}}{{end}}"}`, ""),
			wantTask: model.Task{
				Name:    "nightly",
				Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *", Timezone: "Asia/Shanghai"},
				Action:  model.Action{Type: model.ActionShell, Command: "run --date {{.Yesterday}} {{with .Params.x}}-x {{.}}{{end}}"},
			},
		},
		{
			name: "128 character name",
			path: "/v1/tasks/" + strings.Repeat("a", 128),
			body: `{"trigger":{"type":"event"},"action":{"type":"sdk","handler":"h"}}`,
			wantTask: model.Task{
				Name:    strings.Repeat("a", 128),
				Trigger: model.Trigger{Type: model.TriggerEvent},
				Action:  model.Action{Type: model.ActionSDK, Handler: "h"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{Write: &model.WriteResult{Name: tt.wantTask.Name, Version: 7, Changed: true}}
			rec := serve(t, api.Config{CheckAction: action.Check}, fb, request{method: http.MethodPut, path: tt.path, body: tt.body})
			if rec.Code != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", rec.Code, rec.Body)
			}
			calls := fb.Calls()
			if len(calls) != 1 || calls[0].Method != "PutTask" {
				t.Fatalf("backend calls: got %v, want [PutTask]", fb.Methods())
			}
			if got := *calls[0].Task; !reflect.DeepEqual(got, tt.wantTask) {
				t.Errorf("task:\ngot  %+v\nwant %+v", got, tt.wantTask)
			}
			var res model.WriteResult
			decodeBody(t, rec, &res)
			if want := *fb.Write; res != want {
				t.Errorf("result: got %+v, want %+v", res, want)
			}
		})
	}
}

func TestServer_Endpoints(t *testing.T) {
	paused := true
	task := &model.Task{Name: "daily", Trigger: model.Trigger{Type: model.TriggerEvent}, Version: 3}
	tests := []struct {
		name       string
		backend    *fakeBackend
		req        request
		wantCalls  []call
		wantStatus int
		// wantBody, when set, is compared with the decoded response.
		wantBody any
	}{
		{
			name:       "get task",
			backend:    &fakeBackend{Task: task},
			req:        request{method: http.MethodGet, path: "/v1/tasks/daily"},
			wantCalls:  []call{{Method: "GetTask", Name: "daily"}},
			wantStatus: 200,
			wantBody:   task,
		},
		{
			name:       "list without filters",
			backend:    &fakeBackend{List: &model.TaskList{Tasks: []model.Task{*task}, NextCursor: "daily"}},
			req:        request{method: http.MethodGet, path: "/v1/tasks"},
			wantCalls:  []call{{Method: "ListTasks"}},
			wantStatus: 200,
			wantBody:   &model.TaskList{Tasks: []model.Task{*task}, NextCursor: "daily"},
		},
		{
			name:    "list with labels, paused, cursor and limit",
			backend: &fakeBackend{},
			req:     request{method: http.MethodGet, path: "/v1/tasks?label=env%3Dprod&label=team=core&label=empty=&paused=true&cursor=abc&limit=10"},
			wantCalls: []call{{Method: "ListTasks", Filter: model.TaskFilter{
				Labels: map[string]string{"env": "prod", "team": "core", "empty": ""},
				Paused: &paused, Cursor: "abc", Limit: 10,
			}}},
			wantStatus: 200,
		},
		{
			name:       "pause",
			backend:    &fakeBackend{},
			req:        request{method: http.MethodPost, path: "/v1/tasks/daily/pause"},
			wantCalls:  []call{{Method: "PauseTask", Name: "daily", Caller: api.Caller{Actor: "anonymous"}}},
			wantStatus: 200,
			wantBody:   &model.WriteResult{Name: "daily", Version: 1, Changed: true},
		},
		{
			name:       "resume",
			backend:    &fakeBackend{Write: &model.WriteResult{Name: "daily", Version: 4}},
			req:        request{method: http.MethodPost, path: "/v1/tasks/daily/resume"},
			wantCalls:  []call{{Method: "ResumeTask", Name: "daily", Caller: api.Caller{Actor: "anonymous"}}},
			wantStatus: 200,
			wantBody:   &model.WriteResult{Name: "daily", Version: 4},
		},
		{
			name:       "promote",
			backend:    &fakeBackend{Write: &model.WriteResult{Name: "daily", Version: 5, Changed: true}},
			req:        request{method: http.MethodPost, path: "/v1/tasks/daily/promote"},
			wantCalls:  []call{{Method: "PromoteRollout", Name: "daily", Caller: api.Caller{Actor: "anonymous"}}},
			wantStatus: 200,
			wantBody:   &model.WriteResult{Name: "daily", Version: 5, Changed: true},
		},
		{
			name:       "abort",
			backend:    &fakeBackend{Write: &model.WriteResult{Name: "daily", Version: 4}},
			req:        request{method: http.MethodPost, path: "/v1/tasks/daily/abort"},
			wantCalls:  []call{{Method: "AbortRollout", Name: "daily", Caller: api.Caller{Actor: "anonymous"}}},
			wantStatus: 200,
			wantBody:   &model.WriteResult{Name: "daily", Version: 4},
		},
		{
			name:       "rollout",
			backend:    &fakeBackend{},
			req:        request{method: http.MethodGet, path: "/v1/tasks/daily/rollout"},
			wantCalls:  []call{{Method: "Rollout", Name: "daily"}},
			wantStatus: 200,
			wantBody:   &model.Rollout{Task: "daily", Phase: model.RolloutProgressing},
		},
		{
			name:       "delete",
			backend:    &fakeBackend{},
			req:        request{method: http.MethodDelete, path: "/v1/tasks/daily"},
			wantCalls:  []call{{Method: "DeleteTask", Name: "daily", Caller: api.Caller{Actor: "anonymous"}}},
			wantStatus: 200,
			wantBody:   &model.WriteResult{Name: "daily", Version: 1, Changed: true},
		},
		{
			name: "history",
			backend: &fakeBackend{History: &model.TaskHistory{Name: "daily", Versions: []model.TaskVersion{
				{Version: 1, Op: "create", Actor: "alice", Time: model.UnixMilli(1_700_000_000_123), Task: task},
			}}},
			req:        request{method: http.MethodGet, path: "/v1/tasks/daily/history"},
			wantCalls:  []call{{Method: "TaskHistory", Name: "daily"}},
			wantStatus: 200,
			wantBody: &model.TaskHistory{Name: "daily", Versions: []model.TaskVersion{
				{Version: 1, Op: "create", Actor: "alice", Time: model.UnixMilli(1_700_000_000_123), Task: task},
			}},
		},
		{
			name: "cluster status",
			backend: &fakeBackend{Status: &model.ClusterStatus{Leader: "n1", Term: 2, Nodes: []model.Node{
				{ID: "n1", RaftAddr: "127.0.0.1:7071", Suffrage: "voter", Leader: true},
			}}},
			req:        request{method: http.MethodGet, path: "/v1/cluster"},
			wantCalls:  []call{{Method: "Cluster"}},
			wantStatus: 200,
			wantBody: &model.ClusterStatus{Leader: "n1", Term: 2, Nodes: []model.Node{
				{ID: "n1", RaftAddr: "127.0.0.1:7071", Suffrage: "voter", Leader: true},
			}},
		},
		{
			name:       "join",
			backend:    &fakeBackend{},
			req:        request{method: http.MethodPost, path: "/v1/cluster/join", body: `{"id":"n2","raftAddr":"10.0.0.2:7071","httpAddr":"10.0.0.2:7070"}`},
			wantCalls:  []call{{Method: "Join", Join: member.JoinRequest{ID: "n2", RaftAddr: "10.0.0.2:7071", HTTPAddr: "10.0.0.2:7070"}}},
			wantStatus: 200,
		},
		{
			name:       "remove node",
			backend:    &fakeBackend{},
			req:        request{method: http.MethodDelete, path: "/v1/cluster/n2"},
			wantCalls:  []call{{Method: "RemoveNode", Name: "n2"}},
			wantStatus: 200,
		},
		{
			name:       "transfer to a node",
			backend:    &fakeBackend{},
			req:        request{method: http.MethodPost, path: "/v1/cluster/transfer", body: `{"id":"n3"}`},
			wantCalls:  []call{{Method: "Transfer", Name: "n3"}},
			wantStatus: 200,
		},
		{
			name:       "transfer without body",
			backend:    &fakeBackend{},
			req:        request{method: http.MethodPost, path: "/v1/cluster/transfer"},
			wantCalls:  []call{{Method: "Transfer"}},
			wantStatus: 200,
		},
		{
			name:       "healthz",
			backend:    &fakeBackend{HealthV: &member.Health{Node: "n1", Role: member.RoleFollower, Leader: "n2", AppliedIndex: 9}},
			req:        request{method: http.MethodGet, path: "/healthz"},
			wantCalls:  []call{{Method: "Health"}},
			wantStatus: 200,
			wantBody:   &member.Health{Node: "n1", Role: member.RoleFollower, Leader: "n2", AppliedIndex: 9},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, api.Config{}, tt.backend, tt.req)
			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if got := tt.backend.Calls(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("backend calls:\ngot  %+v\nwant %+v", got, tt.wantCalls)
			}
			if got, want := rec.Header().Get("Content-Type"), "application/json"; got != want {
				t.Errorf("Content-Type: got %q, want %q", got, want)
			}
			if tt.wantBody == nil {
				return
			}
			got := reflect.New(reflect.TypeOf(tt.wantBody).Elem()).Interface()
			decodeBody(t, rec, got)
			if !reflect.DeepEqual(got, tt.wantBody) {
				t.Errorf("body:\ngot  %+v\nwant %+v", got, tt.wantBody)
			}
		})
	}
}

func TestServer_UnknownRoutes(t *testing.T) {
	tests := []struct {
		name       string
		req        request
		wantStatus int
		wantAllow  string
	}{
		{"unknown path", request{method: http.MethodGet, path: "/v1/nothing"}, http.StatusNotFound, ""},
		{"unknown root path", request{method: http.MethodGet, path: "/"}, http.StatusNotFound, ""},
		{"task sub-resource", request{method: http.MethodGet, path: "/v1/tasks/daily/nothing"}, http.StatusNotFound, ""},
		{"POST on a task", request{method: http.MethodPost, path: "/v1/tasks/daily", body: "{}"}, http.StatusMethodNotAllowed, "GET, HEAD, PUT, DELETE"},
		{"GET on pause", request{method: http.MethodGet, path: "/v1/tasks/daily/pause"}, http.StatusMethodNotAllowed, "POST"},
		{"DELETE on the task list", request{method: http.MethodDelete, path: "/v1/tasks"}, http.StatusMethodNotAllowed, "GET, HEAD"},
		{"POST on healthz", request{method: http.MethodPost, path: "/healthz"}, http.StatusMethodNotAllowed, "GET, HEAD"},
		{"unknown decision", request{method: http.MethodPost, path: "/v1/instances/0000000000100000/approved", body: "{}"}, http.StatusBadRequest, ""},
		{"POST on an instance's log", request{method: http.MethodPost, path: "/v1/instances/0000000000100000/log", body: "{}"}, http.StatusMethodNotAllowed, "GET, HEAD"},
		{"GET of an unknown decision", request{method: http.MethodGet, path: "/v1/instances/0000000000100000/approved"}, http.StatusNotFound, ""},
		{"instance sub-sub-resource", request{method: http.MethodPost, path: "/v1/instances/0000000000100000/approve/x", body: "{}"}, http.StatusNotFound, ""},
		{"node-to-node path", request{method: http.MethodPost, path: "/v1/internal/apply", body: "x"}, http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{}, fb, tt.req)
			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			wantCode, wantField := model.CodeNotFound, ""
			switch tt.wantStatus {
			case http.StatusMethodNotAllowed:
				wantCode = "method_not_allowed"
			case http.StatusBadRequest:
				wantCode, wantField = model.CodeInvalid, "action"
			}
			if e := errorOf(t, rec); e.Code != wantCode || e.Field != wantField {
				t.Errorf("code, field: got %q, %q, want %q, %q", e.Code, e.Field, wantCode, wantField)
			}
			if got := fb.Methods(); len(got) != 0 {
				t.Errorf("backend calls: got %v, want none", got)
			}
			if got := rec.Header().Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow: got %q, want %q", got, tt.wantAllow)
			}
		})
	}
}

func TestServer_ErrorMapping(t *testing.T) {
	tests := []struct {
		name           string
		err            error
		wantStatus     int
		wantCode       string
		wantField      string
		wantRetryAfter bool
	}{
		{"not found *Error", model.Errorf(model.CodeNotFound, "no task daily"), 404, model.CodeNotFound, "", false},
		{"not found sentinel wrapped", fmt.Errorf("get daily: %w", model.ErrNotFound), 404, model.CodeNotFound, "", false},
		{"conflict", model.Errorf(model.CodeConflict, "version 3 is not current"), 409, model.CodeConflict, "", false},
		{"conflict sentinel wrapped", fmt.Errorf("apply: %w", model.ErrConflict), 409, model.CodeConflict, "", false},
		{"failed precondition", model.ErrPrecondition, 409, model.CodePrecondition, "", false},
		{"unavailable *Error", model.Errorf(model.CodeUnavailable, "no leader"), 503, model.CodeUnavailable, "", true},
		{"unavailable sentinel wrapped", fmt.Errorf("forward: %w", model.ErrUnavailable), 503, model.CodeUnavailable, "", true},
		{"invalid keeps field", model.FieldErrorf("policy.onFailure", "no task %q", "x"), 400, model.CodeInvalid, "policy.onFailure", false},
		{"wrapped *Error keeps field", fmt.Errorf("put: %w", model.FieldErrorf("policy.dependsOn", "cycle")), 400, model.CodeInvalid, "policy.dependsOn", false},
		{"too large", model.ErrTooLarge, 413, model.CodeTooLarge, "", false},
		{"forbidden", model.ErrForbidden, 403, model.CodeForbidden, "", false},
		{"plain error", errors.New("disk on fire"), 500, model.CodeInternal, "", false},
		{"unknown code", &model.Error{Code: "weird", Message: "?"}, 500, "weird", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{Err: tt.err}
			rec := serve(t, api.Config{}, fb, request{method: http.MethodPut, path: "/v1/tasks/daily", body: taskBody("", "", "", "")})
			if got := fb.Methods(); !reflect.DeepEqual(got, []string{"PutTask"}) {
				t.Errorf("backend calls: got %v, want [PutTask]", got)
			}
			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d", rec.Code, tt.wantStatus)
			}
			e := errorOf(t, rec)
			if e.Code != tt.wantCode {
				t.Errorf("code: got %q, want %q", e.Code, tt.wantCode)
			}
			if e.Field != tt.wantField {
				t.Errorf("field: got %q, want %q", e.Field, tt.wantField)
			}
			if got := rec.Header().Get("Retry-After"); (got != "") != tt.wantRetryAfter {
				t.Errorf("Retry-After: got %q, want set=%v", got, tt.wantRetryAfter)
			}
		})
	}
}

// TestServer_ErrorMappingEveryEndpoint checks that each backend-calling
// endpoint maps a backend error rather than answering 200.
func TestServer_ErrorMappingEveryEndpoint(t *testing.T) {
	reqs := map[string]request{
		"delete":    {method: http.MethodDelete, path: "/v1/tasks/daily"},
		"pause":     {method: http.MethodPost, path: "/v1/tasks/daily/pause"},
		"resume":    {method: http.MethodPost, path: "/v1/tasks/daily/resume"},
		"get":       {method: http.MethodGet, path: "/v1/tasks/daily"},
		"list":      {method: http.MethodGet, path: "/v1/tasks"},
		"history":   {method: http.MethodGet, path: "/v1/tasks/daily/history"},
		"join":      {method: http.MethodPost, path: "/v1/cluster/join", body: `{"id":"n2","raftAddr":"h:1","httpAddr":"h:2"}`},
		"cluster":   {method: http.MethodGet, path: "/v1/cluster"},
		"remove":    {method: http.MethodDelete, path: "/v1/cluster/n2"},
		"transfer":  {method: http.MethodPost, path: "/v1/cluster/transfer"},
		"events":    {method: http.MethodGet, path: "/v1/tasks/daily/events"},
		"trigger":   {method: http.MethodPost, path: "/v1/tasks/daily/trigger"},
		"submit":    {method: http.MethodPost, path: "/v1/tasks/daily/submit", body: `{}`},
		"submit[]":  {method: http.MethodPost, path: "/v1/tasks/daily/submit", body: `[{},{}]`},
		"instances": {method: http.MethodGet, path: "/v1/instances"},
		"instance":  {method: http.MethodGet, path: "/v1/instances/00000000000000ff"},
		"result":    {method: http.MethodGet, path: "/v1/instances/00000000000000ff/result"},
		"overview":  {method: http.MethodGet, path: "/v1/overview"},
		"summaries": {method: http.MethodGet, path: "/v1/tasks?summary=true"},
		"calendar":  {method: http.MethodGet, path: "/v1/tasks/daily/calendar"},
		"fires":     {method: http.MethodGet, path: "/v1/tasks/daily/fires"},
		"counts":    {method: http.MethodGet, path: "/v1/tasks/daily/counts"},
		"rerun":     {method: http.MethodPost, path: "/v1/instances/00000000000000ff/rerun"},
		"rerun[]":   {method: http.MethodPost, path: "/v1/tasks/daily/rerun", body: `{"from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z"}`},
	}
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			fb := &fakeBackend{Err: fmt.Errorf("wrapped: %w", model.ErrNotFound)}
			rec := serve(t, api.Config{}, fb, req)
			if rec.Code != http.StatusNotFound {
				t.Errorf("status: got %d, want 404 (body %s)", rec.Code, rec.Body)
			}
			if e := errorOf(t, rec); e.Code != model.CodeNotFound {
				t.Errorf("code: got %q, want %q", e.Code, model.CodeNotFound)
			}
			if got := len(fb.Calls()); got != 1 {
				t.Errorf("backend calls: got %d, want 1", got)
			}
		})
	}
}

func TestServer_Metrics(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ax_up 1")
	})
	tests := []struct {
		name       string
		cfg        api.Config
		wantStatus int
	}{
		{"served when configured", api.Config{Metrics: metrics}, 200},
		{"absent when not configured", api.Config{}, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, tt.cfg, &fakeBackend{}, request{method: http.MethodGet, path: "/metrics"})
			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d", rec.Code, tt.wantStatus)
			}
		})
	}
}

func TestServer_Caller(t *testing.T) {
	tests := []struct {
		name   string
		req    request
		header map[string]string
		want   api.Caller
	}{
		{"defaults", request{method: http.MethodPost, path: "/v1/tasks/daily/pause"}, nil, api.Caller{Actor: "anonymous"}},
		{"actor and key on pause", request{method: http.MethodPost, path: "/v1/tasks/daily/pause"},
			map[string]string{"X-AX-Actor": "alice", "Idempotency-Key": "req-1"}, api.Caller{Actor: "anonymous (for alice)", RequestID: "req-1"}},
		{"key of 128 bytes on delete", request{method: http.MethodDelete, path: "/v1/tasks/daily"},
			map[string]string{"Idempotency-Key": strings.Repeat("k", 128)}, api.Caller{Actor: "anonymous", RequestID: strings.Repeat("k", 128)}},
		{"actor and key on put", request{method: http.MethodPut, path: "/v1/tasks/daily", body: taskBody("", "", "", "")},
			map[string]string{"X-AX-Actor": "ci-bot", "Idempotency-Key": "abc"}, api.Caller{Actor: "anonymous (for ci-bot)", RequestID: "abc"}},
		{"actor on resume", request{method: http.MethodPost, path: "/v1/tasks/daily/resume"},
			map[string]string{"X-AX-Actor": "bob"}, api.Caller{Actor: "anonymous (for bob)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			req := tt.req
			req.header = tt.header
			rec := serve(t, api.Config{}, fb, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", rec.Code, rec.Body)
			}
			calls := fb.Calls()
			if len(calls) != 1 {
				t.Fatalf("backend calls: got %v, want one", fb.Methods())
			}
			if got := calls[0].Caller; got != tt.want {
				t.Errorf("caller: got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestServer_MaxBody(t *testing.T) {
	body := taskBody("", "", `{"type":"shell","command":"`+strings.Repeat("a", 200)+`"}`, "")
	tests := []struct {
		name       string
		maxBody    int64
		wantStatus int
	}{
		{"default limit", 0, 200},
		{"configured limit exceeded", 100, 413},
		{"configured limit met", int64(len(body)), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{MaxBody: tt.maxBody}, fb, request{method: http.MethodPut, path: "/v1/tasks/daily", body: body})
			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			wantCalls := 1
			if tt.wantStatus != http.StatusOK {
				wantCalls = 0
				if e := errorOf(t, rec); e.Code != model.CodeTooLarge {
					t.Errorf("code: got %q, want %q", e.Code, model.CodeTooLarge)
				}
			}
			if got := len(fb.Calls()); got != wantCalls {
				t.Errorf("backend calls: got %d, want %d", got, wantCalls)
			}
		})
	}
}

func (f fakeAlerts) ListAlerts(ctx context.Context, q model.AlertQuery) (*model.AlertList, error) {
	f.record(ctx, call{Method: "ListAlerts", Name: q.State + "|" + q.Task + "|" + q.Rule + "|" + q.Cursor, N: q.Limit})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.AlertList{Alerts: []model.Alert{}}, nil
}

func (f fakeAlerts) PutSilence(ctx context.Context, c api.Caller, req model.SilenceRequest) (*model.Silence, error) {
	f.record(ctx, call{Method: "PutSilence", Caller: c, Name: req.Task})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.Silence{ID: "s1", Task: req.Task, Rule: req.Rule, Labels: req.Labels, Comment: req.Comment}, nil
}

func (f fakeAlerts) ListSilences(ctx context.Context) (*model.SilenceList, error) {
	f.record(ctx, call{Method: "ListSilences"})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.SilenceList{Silences: []model.Silence{}}, nil
}

func (f fakeAlerts) DeleteSilence(ctx context.Context, c api.Caller, id string) error {
	f.record(ctx, call{Method: "DeleteSilence", Caller: c, Name: id})
	return f.Err
}

// TestServer_PutTaskPausedAndDryRun checks that a body without "paused"
// (or with null) asks the backend to keep the task's paused state, one
// with it does not, and that ?dryRun=true asks for the plan instead of
// the write, after the same validation and with consistent=true's barrier.
func TestServer_PutTaskPausedAndDryRun(t *testing.T) {
	const event = `"trigger":{"type":"event"},"action":{"type":"shell","command":"x"}`
	tests := []struct {
		name, query, body string
		wantMethods       []string
		wantKeep          bool
		wantPaused        bool
		wantStatus        int
		wantField         string
	}{
		{"no paused key", "", `{` + event + `}`, []string{"PutTask"}, true, false, 200, ""},
		{"paused null", "", `{"paused":null,` + event + `}`, []string{"PutTask"}, true, false, 200, ""},
		{"paused false", "", `{"paused":false,` + event + `}`, []string{"PutTask"}, false, false, 200, ""},
		{"paused true", "", `{"paused":true,` + event + `}`, []string{"PutTask"}, false, true, 200, ""},
		{"a nested paused is not the task's", "", `{"labels":{"paused":"true"},` + event + `}`, []string{"PutTask"}, true, false, 200, ""},
		{"dry run", "?dryRun=true", `{` + event + `}`, []string{"PlanTask"}, true, false, 200, ""},
		{"dry run with paused", "?dryRun=1", `{"paused":true,` + event + `}`, []string{"PlanTask"}, false, true, 200, ""},
		{"consistent dry run", "?dryRun=true&consistent=true", `{` + event + `}`, []string{"PlanTask"}, true, false, 200, ""},
		{"dryRun=false writes", "?dryRun=false", `{` + event + `}`, []string{"PutTask"}, true, false, 200, ""},
		{"bad dryRun", "?dryRun=maybe", `{` + event + `}`, nil, false, false, 400, "dryRun"},
		{"invalid task in a dry run", "?dryRun=true", `{"trigger":{"type":"cron","expression":"61 * * * *"},"action":{"type":"shell","command":"x"}}`, nil, false, false, 400, "trigger.expression"},
		{"unknown field in a dry run", "?dryRun=true", `{"bogus":1,` + event + `}`, nil, false, false, 400, "bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{}, fb, request{method: http.MethodPut, path: "/v1/tasks/job" + tt.query, body: tt.body})
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if got := fb.Methods(); !reflect.DeepEqual(got, tt.wantMethods) {
				t.Fatalf("backend calls: got %v, want %v", got, tt.wantMethods)
			}
			if tt.wantStatus != 200 {
				var eb model.ErrorBody
				decodeBody(t, rec, &eb)
				if eb.Error == nil || eb.Error.Field != tt.wantField {
					t.Fatalf("error: got %+v, want field %q", eb.Error, tt.wantField)
				}
				return
			}
			c := fb.Calls()[len(tt.wantMethods)-1]
			if c.Put.KeepPaused != tt.wantKeep || c.Task.Paused != tt.wantPaused {
				t.Errorf("got keepPaused %v paused %v, want %v %v", c.Put.KeepPaused, c.Task.Paused, tt.wantKeep, tt.wantPaused)
			}
			if c.Method == "PlanTask" {
				var p model.TaskPlan
				decodeBody(t, rec, &p)
				if p.Op != model.PlanCreate || p.Name != "job" {
					t.Errorf("plan: got %+v", p)
				}
			}
		})
	}
}
