package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Instance records are a compact binary encoding rather than JSON: they
// are the high-volume values (millions of pending delayed instances), and
// DESIGN §10 measured the state machine's bbolt writes as the bottleneck,
// so small values matter.

var stateNames = []string{"", model.StateScheduled, model.StateReady, model.StateRunning, model.StateSuccess,
	model.StateRetrying, model.StateFailed, model.StateWaitingApproval, model.StateTerminated,
	model.StateBlocked, model.StateSkipped, model.StateCanceled}

// sourceNames are the instance sources by stored code (0: none).
var sourceNames = append([]string{""}, command.Sources()...)

func code(names []string, s string) uint8 {
	for i, n := range names {
		if n == s {
			return uint8(i)
		}
	}
	return 0
}

func name(names []string, c uint8) string {
	if int(c) < len(names) {
		return names[c]
	}
	return "UNKNOWN"
}

// record is an instance as stored.
type record struct {
	ID          uint64
	State       uint8
	Source      uint8
	Attempts    uint32
	CreatedAt   int64
	ScheduledAt int64
	FiredAt     int64
	StartedAt   int64
	FinishedAt  int64
	TaskVersion uint64
	Task        string
	IdemKey     string
	Node        string // the leader that created or fired it
	Params      []byte // JSON object or empty
	Payload     []byte // raw JSON or empty

	// Execution state (zero until the instance first runs).
	Executor   string // executor of the current attempt
	LastError  string // why the last attempt failed
	LeaseUntil int64  // RUNNING: lease deadline (Unix ms)
	RetryAt    int64  // RETRYING: when it becomes READY again
	ExitCode   int64  // last attempt's exit code or HTTP status
	Flags      uint8  // flagApproved, flagMidRunApproval
	// The current attempt's start and host; its attempt record is written
	// once, when it ends.
	AttemptStart int64
	Host         string
	// Date is the scheduled date (YYYY-MM-DD in the task's timezone) of a
	// fire, for dependsOn; stamped by the node that built the command.
	Date string
	// Free counts the attempts that ended interrupted: they do not count
	// against maxRetries (protocol 6).
	Free uint32
	// Base counts the attempts of the runs before the latest re-run
	// (protocol 7): they do not count against maxRetries either.
	Base uint32
	// Jitter is how much later than ScheduledAt a task fire was fired
	// (ms, trigger.jitter; protocol 7).
	Jitter int64
	// Moved is the fire time the trigger's calendars moved the fire from
	// (Unix ms), Held the blackout window that held it back (protocol 8).
	Moved int64
	Held  string
	// Pool is the pool it holds a slot of while it holds its task's slot
	// (protocol 8; fsm/pools.go).
	Pool string
	// Canary marks an instance its task's rollout picked to run the
	// canary version (TaskVersion; protocol 8; fsm/rollout.go).
	Canary bool
	// Shards (protocol 8; shards.go). A shard: Parent is the sharded
	// instance, ShardIndex its place of Shards, Pin the executor a
	// broadcast shard runs on. A sharded instance once fanned out:
	// Shards, FirstShard (the shards' ids are FirstShard..+Shards-1),
	// and how many shards have ended (ShardsDone), of them not
	// successfully (ShardsFailed).
	Parent       uint64
	ShardIndex   uint32
	Shards       uint32
	FirstShard   uint64
	Pin          string
	ShardsDone   uint32
	ShardsFailed uint32
	// Link is the trace context of the request that created the
	// instance (a submit's or trigger's traceparent, packed: trace id,
	// span id, flags; protocol 8), which its trace links to. The
	// record's last field, written only when set.
	Link []byte
}

// sharded reports whether r holds any shard field.
func (r *record) sharded() bool {
	return r.Parent != 0 || r.Shards != 0 || r.FirstShard != 0 || r.Pin != ""
}

// Record flags.
const (
	flagApproved       = 1 << 0 // before-run approval granted
	flagMidRunApproval = 1 << 1 // WAITING_APPROVAL was entered from RUNNING
	flagDepsMet        = 1 << 2 // dependsOn satisfied for its date
	flagWaitingDeps    = 1 << 3 // BLOCKED on dependsOn (not on concurrency)
	// flagConfirmed: the current attempt's executor has confirmed it (a
	// heartbeat for it was applied), so it started (protocol 6).
	flagConfirmed = 1 << 4
	// flagRerun: the instance was re-run (protocol 7); its latest rerun
	// event says by whom and what it had ended as.
	flagRerun = 1 << 5
	// flagWaitingPool: BLOCKED for a slot of its task's pool (protocol 8;
	// pools.go), not in its task's overlap queue.
	flagWaitingPool = 1 << 6
	// flagWaitingRate: BLOCKED for its turn under a rate limit (protocol
	// 8; ratelimit.go), holding its slots, in the due index at RetryAt.
	flagWaitingRate = 1 << 7
)

const recordVersion = 1

func (r *record) encode() []byte {
	b := make([]byte, 0, 48+len(r.Task)+len(r.IdemKey)+len(r.Node)+len(r.Params)+len(r.Payload))
	b = append(b, recordVersion, r.State, r.Source)
	b = binary.AppendUvarint(b, uint64(r.Attempts))
	for _, t := range []int64{r.CreatedAt, r.ScheduledAt, r.FiredAt, r.StartedAt, r.FinishedAt} {
		b = binary.AppendVarint(b, t)
	}
	b = binary.AppendUvarint(b, r.TaskVersion)
	for _, s := range [][]byte{[]byte(r.Task), []byte(r.IdemKey), []byte(r.Node), r.Params, r.Payload} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if r.Executor == "" && r.LastError == "" && r.LeaseUntil == 0 && r.RetryAt == 0 && r.ExitCode == 0 && r.Flags == 0 &&
		r.AttemptStart == 0 && r.Host == "" && r.Date == "" && r.Jitter == 0 && r.Moved == 0 && r.Held == "" && r.Pool == "" && !r.Canary && !r.sharded() && len(r.Link) == 0 {
		return b // never ran: keep pending records small
	}
	for _, s := range []string{r.Executor, r.LastError} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, t := range []int64{r.LeaseUntil, r.RetryAt, r.ExitCode, r.AttemptStart} {
		b = binary.AppendVarint(b, t)
	}
	b = append(b, r.Flags)
	b = binary.AppendUvarint(b, uint64(len(r.Host)))
	b = append(b, r.Host...)
	b = binary.AppendUvarint(b, uint64(len(r.Date)))
	b = append(b, r.Date...)
	linked := len(r.Link) > 0
	later := r.Moved != 0 || r.Held != "" || r.Pool != "" || r.Canary || r.sharded() || linked
	if r.Free == 0 && r.Base == 0 && r.Jitter == 0 && !later {
		return b // as before protocol 6
	}
	b = binary.AppendUvarint(b, uint64(r.Free))
	if r.Base == 0 && r.Jitter == 0 && !later {
		return b // as before protocol 7
	}
	b = binary.AppendUvarint(b, uint64(r.Base))
	if r.Jitter == 0 && !later {
		return b
	}
	b = binary.AppendUvarint(b, uint64(r.Jitter))
	if !later {
		return b // as before protocol 8
	}
	b = binary.AppendVarint(b, r.Moved)
	b = binary.AppendUvarint(b, uint64(len(r.Held)))
	b = append(b, r.Held...)
	if r.Pool == "" && !r.Canary && !r.sharded() && !linked {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(r.Pool)))
	b = append(b, r.Pool...)
	if !r.Canary && !r.sharded() && !linked {
		return b
	}
	// The canary flag: one byte (0 or 1), then the shard fields if any.
	if r.Canary {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	if !r.sharded() && !linked {
		return b
	}
	for _, v := range []uint64{r.Parent, uint64(r.ShardIndex), uint64(r.Shards), r.FirstShard} {
		b = binary.AppendUvarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Pin)))
	b = append(b, r.Pin...)
	b = binary.AppendUvarint(b, uint64(r.ShardsDone))
	b = binary.AppendUvarint(b, uint64(r.ShardsFailed))
	if !linked {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(r.Link)))
	return append(b, r.Link...)
}

var errRecord = errors.New("fsm: corrupt instance record")

// errField is a length-prefixed field longer than what holds it.
var errField = errors.New("fsm: truncated field")

// readBytes reads a uvarint-prefixed byte string: a field of the stored
// records (instances, attempts, recent failures).
func readBytes(b []byte) ([]byte, []byte, error) {
	l, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < l {
		return nil, nil, errField
	}
	return b[n : n+int(l)], b[n+int(l):], nil
}

func decodeRecord(id uint64, b []byte) (*record, error) {
	r := &record{}
	if err := r.decode(id, b, nil); err != nil {
		return nil, err
	}
	return r, nil
}

// scanDecoder decodes records for a scan that reads only what dates and
// places an instance (ActiveInstances): the parameters, the payload, the
// idempotency key and the other free texts are left out (a scan of a
// large backlog copied every payload and threw it away), and the task
// names are shared.
type scanDecoder struct {
	tasks map[string]string
}

// decode decodes b into r (reset first); r holds nothing of b's memory.
func (d *scanDecoder) decode(r *record, id uint64, b []byte) error {
	*r = record{}
	return r.decode(id, b, d)
}

// task returns the task name in b, one string per name.
func (d *scanDecoder) task(b []byte) string {
	if s, ok := d.tasks[string(b)]; ok {
		return s
	}
	if d.tasks == nil {
		d.tasks = map[string]string{}
	}
	s := string(b)
	d.tasks[s] = s
	return s
}

// decode decodes b into r, every field, or with scan set only those a
// scanDecoder keeps.
func (r *record) decode(id uint64, b []byte, scan *scanDecoder) error {
	if len(b) < 3 || b[0] != recordVersion {
		return errRecord
	}
	r.ID, r.State, r.Source = id, b[1], b[2]
	b = b[3:]
	u, n := binary.Uvarint(b)
	if n <= 0 {
		return errRecord
	}
	r.Attempts = uint32(u)
	b = b[n:]
	for _, t := range []*int64{&r.CreatedAt, &r.ScheduledAt, &r.FiredAt, &r.StartedAt, &r.FinishedAt} {
		v, n := binary.Varint(b)
		if n <= 0 {
			return errRecord
		}
		*t = v
		b = b[n:]
	}
	if r.TaskVersion, n = binary.Uvarint(b); n <= 0 {
		return errRecord
	}
	b = b[n:]
	var fields [5][]byte
	for i := range fields {
		s, rest, err := readBytes(b)
		if err != nil {
			return errRecord
		}
		fields[i] = s // in bbolt's memory: copied out below
		b = rest
	}
	if scan != nil {
		r.Task = scan.task(fields[0])
	} else {
		r.Task, r.IdemKey, r.Node = string(fields[0]), string(fields[1]), string(fields[2])
		if len(fields[3]) > 0 {
			r.Params = bytes.Clone(fields[3])
		}
		if len(fields[4]) > 0 {
			r.Payload = bytes.Clone(fields[4])
		}
	}
	if len(b) == 0 {
		return nil
	}
	var ex [2][]byte
	for i := range ex {
		s, rest, err := readBytes(b)
		if err != nil {
			return errRecord
		}
		ex[i] = s
		b = rest
	}
	r.Executor = string(ex[0])
	if scan == nil {
		r.LastError = string(ex[1])
	}
	for _, t := range []*int64{&r.LeaseUntil, &r.RetryAt, &r.ExitCode, &r.AttemptStart} {
		v, n := binary.Varint(b)
		if n <= 0 {
			return errRecord
		}
		*t = v
		b = b[n:]
	}
	if len(b) < 1 {
		return errRecord
	}
	r.Flags = b[0]
	host, rest, err := readBytes(b[1:])
	if err != nil {
		return errRecord
	}
	date, rest, err := readBytes(rest)
	if err != nil {
		return errRecord
	}
	if scan == nil {
		r.Host, r.Date = string(host), string(date)
	}
	if len(rest) == 0 {
		return nil
	}
	for _, c := range []*uint32{&r.Free, &r.Base} {
		if len(rest) == 0 {
			break
		}
		v, k := binary.Uvarint(rest)
		if k <= 0 || v > 1<<32-1 {
			return errRecord
		}
		*c, rest = uint32(v), rest[k:]
	}
	if len(rest) == 0 {
		return nil
	}
	jitter, k := binary.Uvarint(rest)
	if k <= 0 || jitter > 1<<62 {
		return errRecord
	}
	r.Jitter, rest = int64(jitter), rest[k:]
	if len(rest) == 0 {
		return nil
	}
	if r.Moved, k = binary.Varint(rest); k <= 0 {
		return errRecord
	}
	held, rest, err := readBytes(rest[k:])
	if err != nil {
		return errRecord
	}
	if scan == nil {
		r.Held = string(held)
	}
	if len(rest) == 0 {
		return nil
	}
	pool, rest, err := readBytes(rest)
	if err != nil {
		return errRecord
	}
	if scan == nil {
		r.Pool = string(pool)
	}
	if len(rest) == 0 {
		return nil
	}
	switch rest[0] {
	case 0:
	case 1:
		r.Canary = true
	default:
		return errRecord
	}
	if rest = rest[1:]; len(rest) == 0 {
		return nil
	}
	return r.decodeShards(rest, scan != nil)
}

// decodeShards reads the shard fields and the trace link, the record's
// last fields (the link left out for a scan).
func (r *record) decodeShards(b []byte, scan bool) error {
	var v [4]uint64
	for i := range v {
		x, k := binary.Uvarint(b)
		if k <= 0 {
			return errRecord
		}
		v[i], b = x, b[k:]
	}
	if v[1] > 1<<32-1 || v[2] > 1<<32-1 {
		return errRecord
	}
	r.Parent, r.ShardIndex, r.Shards, r.FirstShard = v[0], uint32(v[1]), uint32(v[2]), v[3]
	pin, rest, err := readBytes(b)
	if err != nil {
		return errRecord
	}
	r.Pin = string(pin)
	for _, c := range []*uint32{&r.ShardsDone, &r.ShardsFailed} {
		x, k := binary.Uvarint(rest)
		if k <= 0 || x > 1<<32-1 {
			return errRecord
		}
		*c, rest = uint32(x), rest[k:]
	}
	if len(rest) == 0 {
		return nil
	}
	link, rest, err := readBytes(rest)
	if err != nil || len(link) == 0 || len(rest) != 0 {
		return errRecord
	}
	if !scan {
		r.Link = append([]byte(nil), link...)
	}
	return nil
}

func u64key(v uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], v)
	return k[:]
}
