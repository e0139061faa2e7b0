package command

import "github.com/ax-scheduler/ax/model"

// The state machine validates every command before it writes, with the
// API's checks plus bounds on what only the leader generates: a command
// that would break an invariant, overflow a key or poison a later read is
// an error result on every replica. The checks read nothing but the
// command, so every replica decides alike.
//
// Limits are part of the log's meaning: an entry a released proposer could
// produce must stay valid, or a replica replaying it would diverge from
// one that applied it earlier. So each bound is at least what any
// proposer (the API, the scheduler, the dispatcher) can produce.
const (
	// MaxTimeMs is the latest time a command may name (Unix ms, about
	// year 10135): the state machine's due index keeps minutes in 32
	// bits.
	MaxTimeMs = 1<<32*60_000 - 1
	// MaxText bounds free text (an attempt's output or error, an alert's
	// notes): no API request may carry more than 1 MiB.
	MaxText = 1 << 20
	// MaxEntryInstances is how many instance ids one log entry can give
	// out (the state machine's ids are raft index<<20 | seq): a command
	// that may need more than are left is refused (unavailable, retry),
	// and the leader's group commit packs no more (Command.Instances).
	MaxEntryInstances = 1 << 20

	// maxReqID is the API's bound on a request id (Idempotency-Key).
	maxReqID = 128
	// maxActor bounds the acting user ("node:"/"executor:" + a name).
	maxActor = 256
	// maxNodeID bounds a node id; maxAddr one of its addresses.
	maxNodeID = 256
	maxAddr   = 512
	// maxProto bounds a recorded protocol version.
	maxProto = 255
	// maxHost bounds an executor's host name.
	maxHost = 1024
	// maxPayload bounds a submission's payload: the API's body limit.
	maxPayload = 1 << 20
	// maxFireKey bounds an idempotency key rendered from a task's
	// template; with the task name it must fit a bbolt key (32 KiB).
	maxFireKey = model.MaxFireKey
	// maxDate bounds a scheduled date (YYYY-MM-DD).
	maxDate = 32
	// maxIDs bounds the instance ids or attempts one command names.
	maxIDs = 1 << 20
)
