package fsm

// The writes of a command, one type per domain. writer (fsm.go) is the
// command's transaction state: the transaction, the command and what
// every write of it needs (the entry's shared state, the observer notes,
// the task states it changed, the protocol it began at, the first
// error), with the primitives over them (put, del, the task-state cache,
// protoAt). What the command does belongs to the type of its domain, a
// struct over the same *writer:
//
//   - taskWrites: task definitions (put, delete, pause, resume), their
//     history and events, and the definitions apply reads (tasks.go);
//   - instanceWrites: instances: their creation (submit, trigger, fire,
//     backfill), records, indexes, events, state transitions and
//     pruning (instances.go, exec.go, retention.go);
//   - attemptWrites: attempts and their leases: lease, heartbeat,
//     complete, expire and decisions (exec.go, slots.go);
//   - slotWrites: admission and the concurrency slots: the overlap
//     queue, maxQueued, the protocol 6 recount (slots.go);
//   - depWrites: dependencies between tasks: dependsOn,
//     onUpstreamFailure, onSuccess (deps.go);
//   - alertWrites: alert records, silences, channels and the failures
//     whose alerts wait (alerts.go, channels.go);
//   - calendarWrites: exclusion calendars and blackout windows
//     (calendars.go);
//   - statWrites: the console's aggregates (stats.go);
//   - noteWrites: the dispatcher's notes on instances (note.go);
//   - accessWrites: ACL tokens and secrets (acl.go, secrets.go);
//   - clusterWrites: the cluster's own records: nodes, the member key,
//     the protocol (nodes.go, acl.go, proto.go).
//
// The command table (handlers.go) hands each type's handlers the
// domain's value; a write that reaches into another domain goes through
// writer's accessor of that domain (w.instances().setState(...)). A
// value is the one pointer: making one costs nothing.

type (
	taskWrites     struct{ *writer }
	instanceWrites struct{ *writer }
	attemptWrites  struct{ *writer }
	slotWrites     struct{ *writer }
	depWrites      struct{ *writer }
	alertWrites    struct{ *writer }
	calendarWrites struct{ *writer }
	statWrites     struct{ *writer }
	noteWrites     struct{ *writer }
	accessWrites   struct{ *writer }
	clusterWrites  struct{ *writer }
)

// writes is every domain's type: a struct holding the command's writer.
type writes interface {
	~struct{ *writer }
}

func (w *writer) tasks() taskWrites         { return taskWrites{w} }
func (w *writer) instances() instanceWrites { return instanceWrites{w} }
func (w *writer) attempts() attemptWrites   { return attemptWrites{w} }
func (w *writer) slots() slotWrites         { return slotWrites{w} }
func (w *writer) deps() depWrites           { return depWrites{w} }
func (w *writer) alerts() alertWrites       { return alertWrites{w} }
func (w *writer) stats() statWrites         { return statWrites{w} }
