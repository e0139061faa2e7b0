package api

import (
	"context"
	"io"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// Caller identifies a write: who makes it (recorded in history) and the
// request id that makes retries of it idempotent.
type Caller struct {
	Actor     string
	RequestID string
	// Traceparent is the request's W3C traceparent header: the instances
	// a submit or trigger creates link to that trace (when tracing).
	Traceparent string
}

// The backend is split by role (Config takes each): each handler file
// calls only the role it serves. The node-to-node endpoints have their
// own handler and InternalBackend (internal.go). Implementations return
// errors that match the model sentinels (model.ErrNotFound, ...) with
// errors.Is; *model.Error values keep their field and message.

// PutOptions qualify a task write.
type PutOptions struct {
	// KeepPaused leaves the task's paused state as it is (not paused for
	// a new task), whatever t.Paused says: the request body had no
	// "paused" key. Paused is operational state, changed by pause and
	// resume or by a body that sets it.
	KeepPaused bool
}

// BarrierBackend makes reads linearizable, the default of every read
// endpoint but the node-local ones (unless ?stale=true): the handlers of
// every role call it first.
type BarrierBackend interface {
	// ReadBarrier returns once this node's state reflects every write
	// acknowledged before the call.
	ReadBarrier(ctx context.Context) error
}

// TaskBackend defines tasks and reads their definitions.
type TaskBackend interface {
	PutTask(ctx context.Context, c Caller, t *model.Task, o PutOptions) (*model.WriteResult, error)
	// PlanTask is the dry run of PutTask: what it would do, judged as it
	// would be, with nothing written.
	PlanTask(ctx context.Context, t *model.Task, o PutOptions) (*model.TaskPlan, error)
	DeleteTask(ctx context.Context, c Caller, name string) (*model.WriteResult, error)
	PauseTask(ctx context.Context, c Caller, name string) (*model.WriteResult, error)
	ResumeTask(ctx context.Context, c Caller, name string) (*model.WriteResult, error)
	GetTask(ctx context.Context, name string) (*model.Task, error)
	ListTasks(ctx context.Context, f model.TaskFilter) (*model.TaskList, error)
	TaskHistory(ctx context.Context, name string) (*model.TaskHistory, error)
	TaskEvents(ctx context.Context, name string) (*model.TaskEvents, error)
	// Rollout returns the task's latest canary rollout; PromoteRollout
	// makes its canary the task, AbortRollout keeps the stable version.
	Rollout(ctx context.Context, name string) (*model.Rollout, error)
	PromoteRollout(ctx context.Context, c Caller, name string) (*model.WriteResult, error)
	AbortRollout(ctx context.Context, c Caller, name string) (*model.WriteResult, error)
}

// InstanceBackend creates instances, reads them and applies decisions to
// them.
type InstanceBackend interface {
	// Submit creates delayed instances of a task.
	Submit(ctx context.Context, c Caller, task string, reqs []model.SubmitRequest) (*model.SubmitResult, error)
	// Backfill creates one instance per fire time of the task in
	// [From, To] that has none yet.
	Backfill(ctx context.Context, c Caller, task string, req model.BackfillRequest) (*model.BackfillResult, error)
	// Trigger creates an instance of a task that is due now.
	Trigger(ctx context.Context, c Caller, task string, req model.TriggerRequest) (*model.Submitted, error)
	GetInstance(ctx context.Context, id string) (*model.Instance, error)
	ListInstances(ctx context.Context, f model.InstanceFilter) (*model.InstanceList, error)
	// InstanceLog returns the latest attempt's output from offset on:
	// live while it runs, the committed tail once it ended.
	InstanceLog(ctx context.Context, id string, offset int64) (*model.InstanceLog, error)
	// Shards lists a sharded instance's shards (policy.shards, broadcast).
	Shards(ctx context.Context, id string) (*model.ShardList, error)
	// InstanceResult returns the result the instance's successful attempt
	// published (not found when there is none).
	InstanceResult(ctx context.Context, id string) (*model.InstanceResult, error)
	// Decide applies an operator decision (approve, reject, cancel,
	// terminate) or a running attempt's approval request.
	Decide(ctx context.Context, c Caller, id, action string, attempt int, comment string) (string, error)
	// Rerun runs a finished instance again: the same instance, a new
	// attempt chain. RerunTask re-runs a task's finished instances whose
	// fire time is in [From, To] and whose state is one of States.
	Rerun(ctx context.Context, c Caller, id string) (*model.Submitted, error)
	RerunTask(ctx context.Context, c Caller, task string, req model.RerunRequest) (*model.RerunResult, error)
}

// ExecutorBackend is the executor protocol (long-poll, heartbeats,
// reports) and the list of executors.
type ExecutorBackend interface {
	Poll(ctx context.Context, req model.PollRequest) (*model.PollResponse, error)
	Heartbeat(ctx context.Context, req model.HeartbeatRequest) (*model.HeartbeatResponse, error)
	Complete(ctx context.Context, c Caller, executionID string, req model.CompleteRequest) (string, error)
	CompleteBatch(ctx context.Context, c Caller, reports []model.CompleteItem) ([]model.CompleteOutcome, error)
	// Executors lists the executors the leader heard from recently.
	Executors(ctx context.Context) (*model.ExecutorList, error)
}

// ClusterBackend is membership and health.
type ClusterBackend interface {
	Join(ctx context.Context, req member.JoinRequest) error
	// MemberKey is the key a node without TLS proves membership with on
	// Raft connections, for a node about to join.
	MemberKey(ctx context.Context) (*member.MemberKey, error)
	Cluster(ctx context.Context) (*model.ClusterStatus, error)
	RemoveNode(ctx context.Context, id string) error
	Transfer(ctx context.Context, id string) error
	Health(ctx context.Context) *member.Health
	// Snapshot writes the node's whole state (a state file, as ax agent
	// -restore takes it) to w, calling started with its applied index
	// before the first byte.
	Snapshot(ctx context.Context, w io.Writer, started func(index uint64)) error
	// Restore makes the state file read from body the cluster's state
	// (checking its SHA-256 against sum when given) and says what it
	// holds.
	Restore(ctx context.Context, body io.Reader, sum string) (*member.StateInfo, error)
}

// ACLBackend manages ACL tokens. Token secrets are returned only by the
// calls that create them.
type ACLBackend interface {
	// ACLBootstrap creates the first admin token; it fails with a conflict
	// once ACLs are bootstrapped.
	ACLBootstrap(ctx context.Context, c Caller) (*model.ACLToken, error)
	CreateToken(ctx context.Context, c Caller, req model.ACLTokenRequest) (*model.ACLToken, error)
	ListTokens(ctx context.Context) (*model.ACLTokenList, error)
	RevokeToken(ctx context.Context, c Caller, name string) (*model.ACLToken, error)
	// ACLEnabled reports whether the node asks for credentials (ACLs
	// bootstrapped or a management token set).
	ACLEnabled() bool
}

// SecretBackend stores secrets. Values go in and never come out.
type SecretBackend interface {
	PutSecret(ctx context.Context, c Caller, name, value string) (*model.Secret, error)
	ListSecrets(ctx context.Context) (*model.SecretList, error)
	DeleteSecret(ctx context.Context, c Caller, name string) (*model.Secret, error)
}
