package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Apply applies one log entry. It is a thin wrapper of ApplyBatch.
func (f *FSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed entries in one bbolt transaction (one per
// maxTxBytes of entries) that also records the last applied index; entries at or below the recorded index
// (a replay after restart) are skipped and answer nil.
//
// A command that fails while it applies (a panic, which is a bug, or a
// bbolt error caused by its input, such as a key too large) must not stop
// the node nor leave half its writes: the transaction is rolled back and
// the batch applied again with that command answered as an error. Every
// replica reaches the same decision, whatever its batch boundaries,
// because the state before the command is the same. Only a storage
// failure (an I/O error, a full disk, a closed or damaged database) and a
// command type this version does not know (and may not skip) stop the
// node, with a panic: nothing of the batch is committed, and a restart
// meets the same entry again. See DESIGN.md, "Failed applies" and
// "Command types".
//
// A restore_switch entry is applied on its own, between the
// transactions of the entries around it: it replaces the state file
// (restorelog.go).
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	s := nextSwitch(logs)
	n := chunkLen(logs[:s])
	if n == len(logs) {
		return f.applyTx(logs)
	}
	out := make([]interface{}, 0, len(logs))
	for len(logs) > 0 {
		if s == 0 {
			out = append(out, f.applySwitch(logs[0]))
			logs = logs[1:]
			s = nextSwitch(logs)
			continue
		}
		n = chunkLen(logs[:s])
		out = append(out, f.applyTx(logs[:n])...)
		logs, s = logs[n:], s-n
	}
	return out
}

// applyTx applies logs in one transaction (ApplyBatch).
func (f *FSM) applyTx(logs []*raft.Log) []interface{} {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var rejected map[cmdPos]rejection
	for {
		b := &batch{f: f, rejected: rejected}
		out, fail := b.run(logs)
		if fail == nil {
			b.done()
			return out
		}
		if fail.fatal {
			// A replica that cannot apply an entry must stop rather than
			// diverge from its peers.
			msg := "apply failed on a storage error; stopping to avoid divergence"
			if errors.Is(fail.err, errUnknownType) {
				msg = "a log entry holds a command type this version does not know; stopping to avoid divergence: upgrade this node"
			}
			f.logger.Error(msg, "index", fail.pos.index, "command", fail.typ, "error", fail.err)
			panic(fmt.Sprintf("fsm: apply batch: %v", fail.err))
		}
		rejected = f.reject(rejected, fail)
		// Nothing of the rolled-back attempt may carry over: its observer
		// notes and entry counters die with b; cached task definitions
		// may hold versions it wrote.
		f.taskCache = map[string]*model.Task{}
	}
}

// maxTxBytes bounds the log bytes one transaction applies. Raft hands
// the state machine up to MaxAppendEntries entries at once (512 then, 64
// now), and
// when a node catches up those are whole entries of 1,000 submissions
// each: one transaction creating half a million instances held its dirty
// pages and their garbage on the heap at once, 3.5 times the node's steady
// memory. A batch larger than this is applied in consecutive
// transactions; where a batch is cut never changes the state (the
// determinism test applies the same entries under random cuts).
const maxTxBytes = 1 << 20

// appendBuckets are the buckets whose keys mostly arrive in ascending
// order (instance ids are consecutive, due times grow): bbolt splits a
// full page at FillPercent, 50% by default, which for keys appended in
// order leaves every page half empty for good. At 90% a pending delayed
// instance takes 140 bytes of state instead of 234 (TestFSM_StateBytes
// measures it). FillPercent is no part of the state's contents: it only
// places them in pages.
var appendBuckets = [][]byte{bktInstances, bktDue, bktTaskInst, bktInstEvents, bktAttempts, bktLogs, bktFinished, bktRequestClock, bktRequestTime}

// appendFill is the page fill of appendBuckets.
const appendFill = 0.9

// chunkLen is how many of logs the next transaction applies: at least
// one, and no more than maxTxBytes of command data past the first.
func chunkLen(logs []*raft.Log) int {
	size := 0
	for i, l := range logs {
		size += len(l.Data)
		if i > 0 && size > maxTxBytes {
			return i
		}
	}
	return len(logs)
}

// cmdPos names one command of the entries being applied: the entry's log
// index and the command's position in its batch (0 for a lone command),
// or entryLevel for the entry as a whole (its decoding, its counters).
type cmdPos struct {
	index uint64
	sub   int
}

const entryLevel = -1

// rejection is how an apply answers a command that failed before: with
// err, remembering its request id as usual or, if that failed too (bare),
// writing nothing at all.
type rejection struct {
	err  *model.Error
	bare bool
}

// failure is why one attempt at a batch stopped.
type failure struct {
	pos   cmdPos
	typ   command.Type
	err   error
	fatal bool // a storage failure or an unknown type: the node must stop
	stack []byte
}

// abort is the panic value that unwinds an apply when a write or an
// encoding fails (must, writer.err).
type abort struct{ err error }

// reject records a failed command so that the next attempt answers it as
// an error, or answers it bare if it failed as a rejection already. A
// command that fails while it writes nothing has hit storage, not input.
func (f *FSM) reject(rejected map[cmdPos]rejection, fl *failure) map[cmdPos]rejection {
	if rejected == nil {
		rejected = map[cmdPos]rejection{}
	}
	r, again := rejected[fl.pos]
	switch {
	case !again && fl.stack != nil:
		// A bug, not the caller's input. The panic's value stays in the
		// log: it may differ between replicas (an address, a version),
		// and the answer is replicated state.
		r = rejection{err: model.Errorf(model.CodeInternal, "%s command could not be applied: it failed on a bug (see the nodes' logs)", fl.typ)}
	case !again:
		r = rejection{err: model.Errorf(model.CodeInvalid, "%s command could not be applied: %v", fl.typ, fl.err)}
	case !r.bare && fl.pos.sub != entryLevel:
		r.bare = true
	default:
		f.logger.Error("a rejected command failed again; stopping to avoid divergence",
			"index", fl.pos.index, "command", fl.typ, "error", fl.err)
		panic(fmt.Sprintf("fsm: apply batch: %v", fl.err))
	}
	rejected[fl.pos] = r
	args := []any{"index", fl.pos.index, "command", fl.typ, "error", fl.err}
	if fl.pos.sub != entryLevel {
		args = append(args, "position", fl.pos.sub)
	}
	if fl.stack != nil {
		args = append(args, "stack", string(fl.stack))
	}
	f.logger.Error("command failed while applying; rolled back and answered as an error", args...)
	return rejected
}

// batch is one attempt at applying a batch of entries in one transaction.
type batch struct {
	f        *FSM
	tx       *bolt.Tx
	rejected map[cmdPos]rejection
	pos      cmdPos       // what is being applied
	typ      command.Type // its type, once decoded
	last     *raft.Log
	notes    notes
	hwm      int64  // the latest leader time applied (clock.go)
	bytes    uint64 // of the entries applied
	// w is the writer of the command being applied: kept here, handing it
	// to its type's handler allocates nothing per command.
	w writer
}

// run applies logs in a new transaction and commits it, or rolls it back
// and reports the failure.
func (b *batch) run(logs []*raft.Log) (out []interface{}, fail *failure) {
	if b.f.failed != nil || b.f.db == nil {
		return nil, &failure{pos: cmdPos{sub: entryLevel}, err: fmt.Errorf("state machine unavailable: %v", b.f.failed), fatal: true}
	}
	tx, err := b.f.db.Begin(true)
	if err != nil {
		return nil, &failure{pos: cmdPos{sub: entryLevel}, err: err, fatal: true}
	}
	b.tx = tx
	for _, name := range appendBuckets {
		tx.Bucket(name).FillPercent = appendFill
	}
	defer func() {
		if r := recover(); r != nil {
			fail = b.recovered(r)
			_ = tx.Rollback()
			out = nil
		}
	}()
	out = make([]interface{}, len(logs))
	applied := b.f.applied.Load()
	b.hwm = b.f.hwm.Load()
	for i, l := range logs {
		if l.Index <= applied {
			continue
		}
		b.last = l
		if !isRestoreChunk(l) { // counted at their switch (restorelog.go)
			b.bytes += uint64(len(l.Data))
		}
		if l.Type != raft.LogCommand {
			continue
		}
		out[i] = b.entry(l)
	}
	if b.last == nil {
		_ = tx.Rollback() // nothing was written
		return out, nil
	}
	b.pos, b.typ = cmdPos{index: b.last.Index, sub: entryLevel}, 0
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, b.last.Index)
	binary.BigEndian.PutUint64(v[8:], b.last.Term)
	meta := tx.Bucket(bktMeta)
	err = meta.Put(keyApplied, v)
	if err == nil {
		// This binary keeps the finished index complete (finished.go).
		err = meta.Put(keyFinishedThrough, v[:8])
	}
	if err == nil {
		err = b.flushHWM()
	}
	if err != nil {
		_ = tx.Rollback()
		return nil, &failure{pos: b.pos, err: err, fatal: true}
	}
	if err := tx.Commit(); err != nil {
		return nil, &failure{pos: b.pos, err: err, fatal: true}
	}
	return out, nil
}

// done publishes a committed batch: the applied index, the change
// channel and the observer's notes.
func (b *batch) done() {
	if b.last == nil {
		return
	}
	f := b.f
	f.applied.Store(b.last.Index)
	f.appliedBytes.Add(b.bytes)
	if b.hwm > f.hwm.Load() {
		f.hwm.Store(b.hwm)
	}
	f.notify()
	if o := f.cfg.Observer; o != nil {
		ns := &b.notes
		for _, n := range ns.tasks {
			o.TaskChanged(n)
		}
		for i, id := range ns.ids {
			o.Scheduled(id, ns.dues[i])
		}
		for _, c := range ns.changes {
			o.InstanceChanged(c)
		}
	}
}

// recovered classifies a panic of the attempt. It must be called by the
// deferred function that recovered, while the panicking frames are still
// on the stack.
func (b *batch) recovered(r any) *failure {
	fl := &failure{pos: b.pos, typ: b.typ}
	if ab, ok := r.(abort); ok {
		fl.err, fl.fatal = ab.err, storageFailure(ab.err) || errors.Is(ab.err, errUnknownType)
		return fl
	}
	fl.err, fl.stack = fmt.Errorf("panic: %v", r), debug.Stack()
	// bbolt panics when its own invariants fail: a damaged file, which is
	// this replica's problem and not the command's.
	fl.fatal = strings.HasPrefix(panicOrigin(), "go.etcd.io/bbolt")
	return fl
}

// storageFailure reports whether err means the database cannot be written
// (the node must stop) rather than that a command's input was refused: a
// closed or read-only database or transaction, or an operating system
// error. Anything else inside a command (bbolt's ErrKeyRequired,
// ErrKeyTooLarge, ErrValueTooLarge, ErrIncompatibleValue, an encoding
// error, a stored record that does not decode) is deterministic: every
// replica meets it on the same command.
func storageFailure(err error) bool {
	for _, e := range []error{berrors.ErrDatabaseNotOpen, berrors.ErrTxClosed, berrors.ErrTxNotWritable,
		berrors.ErrDatabaseReadOnly, berrors.ErrInvalidMapping, os.ErrClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	var pe *os.PathError
	var se *os.SyscallError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &se) || errors.As(err, &errno)
}

// panicOrigin returns the function that panicked (the first frame below
// runtime.gopanic that is not in the runtime), "" if unknown.
func panicOrigin() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	below := false
	for {
		fr, more := frames.Next()
		switch {
		case fr.Function == "runtime.gopanic":
			below = true
		case below && !strings.HasPrefix(fr.Function, "runtime."):
			return fr.Function
		}
		if !more {
			return ""
		}
	}
}

// entryState is what the commands of one log entry share.
type entryState struct {
	seq    uint32 // instance ids of this entry are index<<20 | seq
	pruned bool   // request ids were pruned (as of prunedAt before protocol 3)
	// prunedAt is the command time of the last prune. A later command of
	// the entry with the same time has nothing to prune: every request it
	// remembered since is no older.
	prunedAt int64
	// pending and active are the changes the entry's commands made to the
	// counts of SCHEDULED and of active instances, written once when the
	// entry ends (nothing reads them while it is applied).
	pending, active int64
	// byClock: the entry remembers and prunes request ids by the request
	// clock (protocol 3), which stood at clock when it began.
	byClock bool
	clock   int64
	// now is the entry's time; stats what its commands add to the
	// console aggregates (stats.go), written once when it ends.
	now   int64
	stats entryStats
}

// entry applies one log entry: a command or a batch of them.
func (b *batch) entry(l *raft.Log) interface{} {
	b.pos, b.typ = cmdPos{index: l.Index, sub: entryLevel}, 0
	if r, ok := b.rejected[b.pos]; ok {
		return errResult(r.err)
	}
	var es entryState
	c, err := command.Decode(l.Data)
	if err != nil {
		b.f.logger.Warn("undecodable log entry", "index", l.Index, "error", err)
		return errResult(model.Errorf(model.CodeInvalid, "undecodable command: %v", err))
	}
	b.typ = c.Type
	es.now = c.Now
	b.clockEntry(l, c.Now, &es)
	if c.Type == command.TypeBatch {
		cmds, err := command.DecodeBatch(c.Body)
		if err != nil {
			b.f.logger.Warn("undecodable batch", "index", l.Index, "error", err)
			return errResult(model.Errorf(model.CodeInvalid, "undecodable batch: %v", err))
		}
		res := &BatchResult{Results: make([]*Result, len(cmds))}
		for i, sub := range cmds {
			b.pos, b.typ = cmdPos{index: l.Index, sub: i}, sub.Type
			res.Results[i] = b.command(l.Index, sub, &es)
		}
		b.pos, b.typ = cmdPos{index: l.Index, sub: entryLevel}, command.TypeBatch
		es.flush(b.tx)
		return res
	}
	b.pos = cmdPos{index: l.Index}
	res := b.command(l.Index, c, &es)
	b.pos = cmdPos{index: l.Index, sub: entryLevel}
	es.flush(b.tx)
	return res
}

// flush writes the entry's counter changes and aggregates.
func (es *entryState) flush(tx *bolt.Tx) {
	addMeta(tx, keyPending, es.pending)
	addMeta(tx, keyActive, es.active)
	es.pending, es.active = 0, 0
	es.stats.flush(tx, es.now)
}

// addMeta adds delta to a u64 counter in the meta bucket.
func addMeta(tx *bolt.Tx, key []byte, delta int64) {
	if delta != 0 {
		must(tx.Bucket(bktMeta).Put(key, u64key(uint64(int64(metaU64(tx, key))+delta))))
	}
}

// command applies one command, deduplicating on its request id. Each
// command validates its body and checks every precondition before its
// first write, so a rejected command writes nothing but its request-id
// record.
func (b *batch) command(index uint64, c *command.Command, es *entryState) *Result {
	rej, rejected := b.rejected[b.pos]
	if rejected && rej.bare {
		return errResult(rej.err)
	}
	f, tx := b.f, b.tx
	if e := c.ValidateHeader(); e != nil {
		// Not remembered: the request id may be what is wrong.
		f.logger.Warn("invalid command rejected", "index", index, "command", c.Type, "error", e)
		return errResult(e)
	}
	if c.ReqID != "" {
		switch {
		case es.byClock && !es.pruned:
			f.pruneRequestsByClock(tx, es.clock, index)
			es.pruned = true
		case !es.byClock && (!es.pruned || es.prunedAt != c.Now):
			f.pruneRequests(tx, c.Now)
			es.pruned, es.prunedAt = true, c.Now
		}
		if v := tx.Bucket(bktRequests).Get([]byte(c.ReqID)); v != nil {
			return f.rememberedResult(index, c, v)
		}
	}
	var res *Result
	if rejected {
		res = errResult(rej.err)
	} else {
		if f.applyHook != nil {
			f.applyHook(tx, c)
		}
		b.w = writer{f: f, tx: tx, cmd: c, index: index, es: es, notes: &b.notes}
		w := &b.w
		res = w.apply()
		w.flushStates()
		if w.err != nil {
			panic(abort{w.err})
		}
		if res.Err != nil && res.Err.Code == model.CodeInvalid && c.Type.Known() {
			f.logger.Warn("invalid command rejected", "index", index, "command", c.Type, "error", res.Err)
		}
	}
	if c.ReqID != "" {
		f.rememberRequest(tx, c, index, es, res)
	}
	return res
}

// rememberedResult answers a command whose request id was applied before
// with the first outcome. A record that does not decode (a damaged file,
// or a format this version cannot read) is answered with an error: the
// command was applied once already, and applying it again would break the
// promise that a retry changes nothing. Every replica holds the same record,
// so every replica answers the same.
func (f *FSM) rememberedResult(index uint64, c *command.Command, v []byte) *Result {
	if len(v) >= 8 {
		if r, err := decodeStoredResult(v[8:]); err == nil {
			return r
		}
	}
	f.logger.Error("remembered result of a request does not decode; not applying it again", "index", index,
		"command", c.Type, "request", c.ReqID)
	return errResult(&model.Error{Code: model.CodeConflict, Field: "Idempotency-Key",
		Message: "request " + c.ReqID + " was applied before, but its first outcome cannot be read; it was not applied again"})
}

// apply dispatches a command to its type's handler. A type this version
// does not know stops the node (w.err wraps errUnknownType), unless it is
// flagged ignorable: then it is answered as releases before the flag
// answered every unknown type, and the entry goes on. See DESIGN.md,
// "Command types".
func (w *writer) apply() *Result {
	t := w.cmd.Type
	if h := handlerOf(t); h != nil {
		return h.apply(w)
	}
	switch {
	case t == command.TypeBatch:
		return errResult(model.Errorf(model.CodeInvalid, "a batch cannot hold a batch"))
	case t.Ignorable():
		w.f.logger.Warn("skipped a command of a type this version does not know (flagged ignorable); upgrade this node",
			"index", w.index, "command", t)
		return errResult(unknownType(t))
	}
	w.err = fmt.Errorf("%w %d: skipping what the other replicas applied would make this one diverge", errUnknownType, uint8(t))
	return nil
}

// errUnknownType stops an apply that meets a command type this version
// does not know and may not skip.
var errUnknownType = errors.New("this version cannot apply command type")

// unknownType is the answer to a command of a type this version cannot
// apply.
func unknownType(t command.Type) *model.Error {
	if t.Known() {
		return model.Errorf(model.CodeInvalid, "command type %s is not implemented by this version", t)
	}
	return model.Errorf(model.CodeInvalid, "unknown command type %d", uint8(t))
}
