package command

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"github.com/ax-scheduler/ax/model"
)

// Submit creates delayed instances of a task. Its body is binary
// (EncodeSubmit).
type Submit struct {
	Task  string       `json:"t"`
	Items []SubmitItem `json:"i"`
	// Link is the caller's trace context (the request's traceparent,
	// packed: LinkSize bytes), which the instances' traces link to
	// (protocol 8).
	Link []byte `json:"l,omitempty"`
}

// LinkSize is the size of a packed trace context: a trace id (16 bytes),
// a span id (8) and the trace flags (1).
const LinkSize = 25

// SubmitItem is one delayed submission; exactly one of DelayMs and AtMs
// applies (AtMs when non-zero).
type SubmitItem struct {
	Payload json.RawMessage `json:"p,omitempty"`
	DelayMs int64           `json:"d,omitempty"`
	AtMs    int64           `json:"a,omitempty"`
	Key     string          `json:"k,omitempty"`
}

// Trigger creates a READY instance of a task now (source api).
type Trigger struct {
	Task   string            `json:"t"`
	Params map[string]string `json:"p,omitempty"`
	Key    string            `json:"k,omitempty"`
	Source string            `json:"s,omitempty"` // default api
	Date   string            `json:"d,omitempty"` // today in the task's timezone
	Link   []byte            `json:"l,omitempty"` // as Submit's
}

// Fire is the leader's firing of due work: task fire times from the timing
// wheel (with the misfires it decided on) and due delayed instances.
type Fire struct {
	Tasks     []TaskFire `json:"t,omitempty"`
	Instances []uint64   `json:"i,omitempty"`
}

// TaskFire fires one task at one scheduled time (At, Unix ms; 0 for no
// fire) and may record fire times missed beyond the catch-up window.
type TaskFire struct {
	Task    string `json:"n"`
	Version uint64 `json:"v"`
	At      int64  `json:"s,omitempty"`
	Key     string `json:"k,omitempty"`
	Date    string `json:"d,omitempty"` // scheduled date in the task's timezone (dependsOn)
	// Missed fire times not fired: count, first and last (Unix ms). The
	// watermark advances past them.
	Missed      int64 `json:"mc,omitempty"`
	MissedFirst int64 `json:"mf,omitempty"`
	MissedLast  int64 `json:"ml,omitempty"`
	// MissedMore says more times than Missed were missed (the leader stops
	// counting after an outage of over a million fire times).
	MissedMore bool `json:"mm,omitempty"`
	// Jitter is how much later than At the leader fired it (Unix ms,
	// trigger.Jitter of the task's trigger.jitter); kept from protocol 7.
	Jitter int64 `json:"j,omitempty"`
	// Moved is the fire time the trigger's calendars moved this fire
	// from (onExcluded next or previous; Unix ms, 0 for none), and Held
	// the blackout window that held it back until the leader fired it
	// late; both kept on the instance from protocol 8, for its why.
	Moved int64  `json:"mv,omitempty"`
	Held  string `json:"hb,omitempty"`
}

// Backfill creates one instance per given past fire time of a task (source
// backfill), skipping times that already have an instance: every fire and
// backfill carries the idempotency key of its time, so a backfill never
// duplicates a regular fire, and a second backfill of the same range
// creates nothing.
type Backfill struct {
	Task    string   `json:"t"`
	Version uint64   `json:"v"`
	At      []int64  `json:"a"`
	Keys    []string `json:"k"`
	Dates   []string `json:"d,omitempty"`
}

// Alerted records that the leader handled a failure's alerts.
type Alerted struct {
	ID      uint64 `json:"i"`
	Message string `json:"m"`
}

// Prune deletes finished instances the leader found past their retention.
// The state machine deletes only instances in a terminal state, with their
// attempts, logs, events and idempotency key.
type Prune struct {
	IDs []uint64 `json:"i"`
}

// Sources returns the sources an instance can have (model.Source*), in
// the order of the codes the state machine stores them as: append only.
func Sources() []string { return slices.Clone(sources) }

var sources = []string{model.SourceCron, model.SourceInterval, model.SourceOnce, model.SourceDelay,
	model.SourceAPI, model.SourceRetry, model.SourceBackfill, model.SourceDependency, model.SourceOnFailure}

// Instances returns how many instances c may create at most (0 for
// commands that create none, or whose body does not decode).
func (c *Command) Instances() int {
	switch c.Type {
	case TypeSubmit:
		_, rest, err := readBytes(c.Body)
		if err != nil {
			return 0
		}
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(MaxEntryInstances) {
			return MaxEntryInstances
		}
		return int(n)
	case TypeTrigger:
		return 1
	case TypeComplete:
		// A success creates its task's onSuccess instances.
		return model.MaxOnSuccess
	case TypeCompleteBatch:
		n := 0
		if len(c.Body) > 1 && c.Body[0] == CompleteBatchVersion {
			if v, k := binary.Uvarint(c.Body[1:]); k > 0 && v <= uint64(model.MaxReports) {
				n = int(v)
			}
		} else if cs, err := DecodeCompleteBatch(c.Body); err == nil {
			n = len(cs)
		}
		return n * model.MaxOnSuccess
	case TypeBackfill:
		var b Backfill
		if json.Unmarshal(c.Body, &b) != nil {
			return 0
		}
		return len(b.At)
	case TypeShard:
		var s Shard
		if json.Unmarshal(c.Body, &s) != nil {
			return 0
		}
		return s.Count()
	}
	return 0
}

// Validate checks the task name and every submission: a delay or a time
// in range, a key and a payload (a JSON value) within bounds.
func (s *Submit) Validate(c *Command) *model.Error {
	if e := checkName(field("task"), s.Task); e != nil {
		return e
	}
	if e := checkLink(s.Link); e != nil {
		return e
	}
	if len(s.Items) == 0 || len(s.Items) > model.MaxSubmitBatch {
		return model.FieldErrorf("items", "%d submissions, want 1 to %d", len(s.Items), model.MaxSubmitBatch)
	}
	for i := range s.Items {
		it := &s.Items[i]
		switch {
		case it.AtMs != 0 && it.DelayMs != 0:
			return model.FieldErrorf(item("items", i, "delay").String(), "give delay or at, not both")
		case it.AtMs != 0:
			if e := checkTime(item("items", i, "at"), it.AtMs); e != nil {
				return e
			}
		default:
			if e := checkSpan(item("items", i, "delay"), c, it.DelayMs, 0); e != nil {
				return e
			}
		}
		if len(it.Key) > model.MaxIdempotencyKey {
			return model.FieldErrorf(item("items", i, "idempotencyKey").String(), "longer than %d bytes", model.MaxIdempotencyKey)
		}
		if len(it.Payload) > maxPayload {
			return &model.Error{Code: model.CodeTooLarge, Field: item("items", i, "payload").String(), Message: "payload larger than " + strconv.Itoa(maxPayload) + " bytes"}
		}
		// The API and the executors embed the payload in JSON answers.
		if len(it.Payload) > 0 && !validJSON(it.Payload) {
			return model.FieldErrorf(item("items", i, "payload").String(), "not a JSON value")
		}
	}
	return nil
}

// Validate checks the task name, the parameters (in key order, so that
// every replica names the same bad one), the key, the source and the
// date.
func (tr *Trigger) Validate(*Command) *model.Error {
	if e := checkName(field("task"), tr.Task); e != nil {
		return e
	}
	for _, k := range slices.Sorted(maps.Keys(tr.Params)) {
		if !model.ValidParamName(k) {
			return model.FieldErrorf("params", "%q is not a parameter name", k)
		}
		if len(tr.Params[k]) > model.MaxParamValue {
			return model.FieldErrorf("params."+k, "longer than %d bytes", model.MaxParamValue)
		}
	}
	if e := checkLen(field("idempotencyKey"), tr.Key, model.MaxIdempotencyKey); e != nil {
		return e
	}
	if e := checkLink(tr.Link); e != nil {
		return e
	}
	if tr.Source != "" && !slices.Contains(sources, tr.Source) {
		return model.FieldErrorf("source", "unknown source %q", tr.Source)
	}
	return checkLen(field("date"), tr.Date, maxDate)
}

// checkLink checks a packed trace context: none, or LinkSize bytes.
func checkLink(l []byte) *model.Error {
	if len(l) != 0 && len(l) != LinkSize {
		return model.FieldErrorf("traceparent", "a packed trace context is %d bytes, got %d", LinkSize, len(l))
	}
	return nil
}

// Validate checks every task fire (name, version, times, key, date) and
// the instance ids.
func (f *Fire) Validate(*Command) *model.Error {
	if len(f.Tasks) > maxIDs {
		return model.FieldErrorf("tasks", "%d task fires, more than %d", len(f.Tasks), maxIDs)
	}
	for i := range f.Tasks {
		tf := &f.Tasks[i]
		if e := checkName(item("tasks", i, "task"), tf.Task); e != nil {
			return e
		}
		if tf.Version == 0 {
			return model.FieldErrorf(item("tasks", i, "version").String(), "version 0")
		}
		for _, t := range []struct {
			field string
			ms    int64
		}{{"at", tf.At}, {"missedFirst", tf.MissedFirst}, {"missedLast", tf.MissedLast}, {"moved", tf.Moved}} {
			if e := checkTime(item("tasks", i, t.field), t.ms); e != nil {
				return e
			}
		}
		if tf.Missed < 0 {
			return model.FieldErrorf(item("tasks", i, "missed").String(), "negative count %d", tf.Missed)
		}
		if tf.Jitter < 0 {
			return model.FieldErrorf(item("tasks", i, "jitter").String(), "negative jitter %d", tf.Jitter)
		}
		if tf.Held != "" {
			if e := checkName(item("tasks", i, "held"), tf.Held); e != nil {
				return e
			}
		}
		if e := checkLen(item("tasks", i, "key"), tf.Key, maxFireKey); e != nil {
			return e
		}
		if e := checkLen(item("tasks", i, "date"), tf.Date, maxDate); e != nil {
			return e
		}
	}
	return checkIDs("instances", f.Instances, 0)
}

// Validate checks the task, its version and each fire time with its key
// and date.
func (b *Backfill) Validate(*Command) *model.Error {
	if e := checkName(field("task"), b.Task); e != nil {
		return e
	}
	if b.Version == 0 {
		return model.FieldErrorf("version", "version 0")
	}
	if len(b.At) > model.MaxBackfill {
		return model.FieldErrorf("at", "%d fire times, more than %d", len(b.At), model.MaxBackfill)
	}
	if len(b.Keys) != len(b.At) || len(b.Dates) > len(b.At) {
		return model.Errorf(model.CodeInvalid, "backfill: %d times but %d keys and %d dates", len(b.At), len(b.Keys), len(b.Dates))
	}
	for i, ms := range b.At {
		if e := checkTime(item("at", i, ""), ms); e != nil {
			return e
		}
		if e := checkLen(item("keys", i, ""), b.Keys[i], maxFireKey); e != nil {
			return e
		}
	}
	for i, d := range b.Dates {
		if e := checkLen(item("dates", i, ""), d, maxDate); e != nil {
			return e
		}
	}
	return nil
}

// Validate checks the instance id and the message.
func (a *Alerted) Validate(*Command) *model.Error {
	if a.ID == 0 {
		return model.FieldErrorf("id", "instance id 0")
	}
	return checkLen(field("message"), a.Message, MaxText)
}

// Validate checks the instance ids.
func (p *Prune) Validate(*Command) *model.Error { return checkIDs("ids", p.IDs, 0) }
