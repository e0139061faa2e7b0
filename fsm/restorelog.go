package fsm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// A restore through the log (protocol 9). ax snapshot restore used to
// hand the file to Raft's user restore, which puts a state beside the
// log rather than in it: a leader that died before its followers
// installed it left states no log entry could bring level
// (docs/operations.md). Now the leader proposes the file itself:
//
//   - restore_begin names the restore, its size and SHA-256, and makes
//     an empty staging area (the bucket bktRestore; another restore's is
//     dropped);
//   - restore_chunk appends the file's next bytes to it, each entry at
//     most command.MaxRestoreChunk, in order (a chunk at any other offset,
//     or of another restore, is refused);
//   - restore_switch checks the staged bytes (all there, the SHA-256, an
//     ax state, not a state without ACLs into a cluster with them) and
//     makes them the state: the cluster's identity (members, member key,
//     protocol) and the switch's log position are written into the file,
//     which then replaces the state file (switchState);
//   - restore_abort drops the staging area: a leader proposes it when a
//     restore fails, and at the start of its term when it finds one
//     (its proposer died).
//
// Every step is a committed entry, so a leader dying at any point leaves
// every replica with the same staged bytes, and either the committed
// switch (every replica switches) or none (the next leader drops the
// staging area). Raft snapshots taken meanwhile carry the staging area.

var (
	// bktRestore is the staging area: keyRestoreMeta, and the staged
	// bytes under their u64 offsets. It exists only during a restore.
	bktRestore     = []byte("restore_staging")
	keyRestoreMeta = []byte("m")
)

// stagedRestore is what the staging area holds (keyRestoreMeta).
type stagedRestore struct {
	ID     string `json:"id"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Staged int64  `json:"staged"` // bytes staged so far
	Began  int64  `json:"began"`  // leader time of restore_begin (ms)
}

// readStaged returns the staging area's record, nil when there is none.
func readStaged(tx *bolt.Tx) (*stagedRestore, error) {
	b := tx.Bucket(bktRestore)
	if b == nil {
		return nil, nil
	}
	var s stagedRestore
	if err := json.Unmarshal(b.Get(keyRestoreMeta), &s); err != nil {
		return nil, fmt.Errorf("the staged restore's record: %w", err)
	}
	return &s, nil
}

// staged returns the staging area of restore id, or the refusal of a
// command naming another.
func (w clusterWrites) staged(id string) (*stagedRestore, *Result) {
	s, err := readStaged(w.tx)
	if err != nil {
		w.err = err
		return nil, nil
	}
	if e := stagedAs(s, id); e != nil {
		return nil, errResult(e)
	}
	return s, nil
}

// stagedAs refuses a command naming restore id when the staging area s
// (nil: none) is not that restore's.
func stagedAs(s *stagedRestore, id string) *model.Error {
	switch {
	case s == nil:
		return model.FieldErrorf("id", "no restore %q is being staged", id)
	case s.ID != id:
		return model.FieldErrorf("id", "restore %q is being staged, not %q", s.ID, id)
	}
	return nil
}

func (w clusterWrites) putStaged(s *stagedRestore) {
	b, err := json.Marshal(s)
	if err != nil {
		w.err = err
		return
	}
	w.put(bktRestore, keyRestoreMeta, b)
}

// dropStaged removes the staging area, if any.
func (w clusterWrites) dropStaged() {
	if w.err == nil && w.tx.Bucket(bktRestore) != nil {
		w.err = w.tx.DeleteBucket(bktRestore)
	}
}

func (w clusterWrites) restoreBegin(b *command.RestoreBegin) *Result {
	w.dropStaged()
	if w.err == nil {
		_, w.err = w.tx.CreateBucket(bktRestore)
	}
	w.putStaged(&stagedRestore{ID: b.ID, Size: b.Size, SHA256: b.SHA256, Began: w.cmd.Now})
	return okResult(struct{}{})
}

func (w clusterWrites) restoreChunkCheck(ch *command.RestoreChunk) (*stagedRestore, *Result) {
	s, res := w.staged(ch.ID)
	if s == nil {
		return nil, res
	}
	switch {
	case ch.Offset != s.Staged:
		return nil, errResult(model.FieldErrorf("offset", "%d: restore %q has %d bytes staged, the next chunk starts there", ch.Offset, s.ID, s.Staged))
	case ch.Offset+int64(len(ch.Data)) > s.Size:
		return nil, errResult(model.FieldErrorf("data", "%d bytes at %d: past the file's %d", len(ch.Data), ch.Offset, s.Size))
	}
	return s, nil
}

func (w clusterWrites) restoreChunk(ch *command.RestoreChunk, s *stagedRestore) *Result {
	w.put(bktRestore, u64key(uint64(ch.Offset)), ch.Data)
	s.Staged += int64(len(ch.Data))
	w.putStaged(s)
	return okResult(struct{}{})
}

// restoreAbort drops the staging area of ref.ID (of whatever restore
// with an empty id); nothing staged is not an error.
func (w clusterWrites) restoreAbort(ref *command.RestoreRef) *Result {
	s, err := readStaged(w.tx)
	switch {
	case err != nil:
		w.err = err
		return nil
	case s == nil:
		return okResult(struct{}{})
	case ref.ID != "":
		if e := stagedAs(s, ref.ID); e != nil {
			return errResult(e)
		}
	}
	w.dropStaged()
	return okResult(struct{}{})
}

// restoreSwitch is the transactional apply of a restore_switch, which
// ApplyBatch applies on its own (switchState) when it can: it is reached
// only when the switch is refused (f.switchRefusal, decided by
// switchState from the same state on every replica), which drops the
// staging area, or when the switch is not a log entry of its own.
func (w clusterWrites) restoreSwitch(ref *command.RestoreRef) *Result {
	if w.dry {
		return nil // Precheck: only the apply can tell
	}
	e := w.f.switchRefusal
	if e == nil {
		return errResult(model.Errorf(model.CodeInvalid, "a restore_switch must be a log entry of its own"))
	}
	if s, err := readStaged(w.tx); err != nil {
		w.err = err
		return nil
	} else if s != nil && s.ID == ref.ID {
		w.dropStaged()
	}
	return errResult(e)
}

// StagedRestore returns the id of the restore being staged, if any (a
// leader drops one it finds as its term starts).
func (q clusterReads) StagedRestore() (string, bool, error) {
	var s *stagedRestore
	err := q.f.view(func(tx *bolt.Tx) error {
		var err error
		s, err = readStaged(tx)
		return err
	})
	if err != nil || s == nil {
		return "", false, err
	}
	return s.ID, true, nil
}

// isRestoreChunk reports whether l is a restore_chunk entry. Its bytes
// do not count toward AppliedBytes, which raftnode snapshots by: a
// snapshot while a restore stages writes the whole state, old and staged
// (a 345 MB restore took ten of them, and staged at a fifth of its
// speed); the switch counts the staged bytes at once instead, so the
// node snapshots the restored state soon after it and the log's chunks
// are compacted away.
func isRestoreChunk(l *raft.Log) bool {
	return l.Type == raft.LogCommand && len(l.Data) > 0 && command.Type(l.Data[0]) == command.TypeRestoreChunk
}

// nextSwitch returns the position in logs of the first restore_switch
// entry (a command of its own), len(logs) if none.
func nextSwitch(logs []*raft.Log) int {
	for i, l := range logs {
		if l.Type == raft.LogCommand && len(l.Data) > 0 && command.Type(l.Data[0]) == command.TypeRestoreSwitch {
			return i
		}
	}
	return len(logs)
}

// applySwitch applies the restore_switch entry l: the staged file, once
// checked, replaces the state (switchState); a refused switch goes
// through the transactional apply, which answers the refusal and drops
// the staging area.
func (f *FSM) applySwitch(l *raft.Log) interface{} {
	if l.Index <= f.applied.Load() {
		return nil // a replay after restart: the state is past it
	}
	c, err := command.Decode(l.Data)
	if err != nil || c.ValidateHeader() != nil {
		return f.applyTx([]*raft.Log{l})[0]
	}
	ref, e := command.JSONBody[command.RestoreRef](c)
	if e != nil {
		return f.applyTx([]*raft.Log{l})[0]
	}
	start := time.Now()
	tmp, staged, refusal, err := f.stageFile(l, c, ref.ID)
	if err != nil {
		f.logger.Error("restore_switch failed on a storage error; stopping to avoid divergence", "index", l.Index, "error", err)
		panic(fmt.Sprintf("fsm: restore_switch: %v", err))
	}
	if refusal != nil {
		f.switchRefusal = refusal
		defer func() { f.switchRefusal = nil }()
		f.logger.Warn("restore refused at its switch; the staged state is dropped and the state stays", "index", l.Index, "restore", ref.ID, "error", refusal)
		return f.applyTx([]*raft.Log{l})[0]
	}
	f.mu.Lock()
	err = f.replaceDB(tmp)
	if err == nil {
		err = syncDir(filepath.Dir(f.cfg.Path))
	}
	if err != nil {
		f.failed = fmt.Errorf("switching to a restored state failed: %w", err)
		f.mu.Unlock()
		f.logger.Error("restore_switch failed on a storage error; stopping to avoid divergence", "index", l.Index, "error", err)
		panic(fmt.Sprintf("fsm: restore_switch: %v", err))
	}
	f.mu.Unlock()
	f.appliedBytes.Add(uint64(len(l.Data)) + uint64(staged))
	f.revokes.Add(1)
	f.logger.Info("switched to a restored state from the log", "index", l.Index, "restore", ref.ID,
		"bytes", f.StateBytes(), "took", time.Since(start).Round(time.Millisecond))
	f.notify()
	if o, ok := f.cfg.Observer.(RestoreObserver); ok {
		o.Restored()
	}
	return okResult(struct{}{})
}

// stageFile writes restore id's staged bytes to a file beside the state
// file and makes it the state as of the switch entry l: it returns the
// file's path and the bytes staged, or the refusal of the switch
// (nothing written), or a storage error.
func (f *FSM) stageFile(l *raft.Log, c *command.Command, id string) (path string, size int64, refusal *model.Error, err error) {
	path = f.cfg.Path + ".switch"
	var ident identity
	f.mu.RLock()
	if f.failed != nil || f.db == nil {
		f.mu.RUnlock()
		return "", 0, nil, fmt.Errorf("state machine unavailable: %v", f.failed)
	}
	tx, err := f.db.Begin(false)
	f.mu.RUnlock()
	if err != nil {
		return "", 0, nil, err
	}
	defer tx.Rollback()
	s, err := readStaged(tx)
	if err != nil {
		return "", 0, model.Errorf(model.CodeInternal, "%v", err), nil
	}
	if e := stagedAs(s, id); e != nil {
		return "", 0, e, nil
	}
	if s.Staged != s.Size {
		return "", 0, model.Errorf(model.CodePrecondition, "restore %q has %d of its %d bytes staged", id, s.Staged, s.Size), nil
	}
	if ident, err = readIdentity(tx); err != nil {
		return "", 0, nil, err
	}
	out, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return "", 0, nil, err
	}
	defer func() {
		if path == "" {
			os.Remove(f.cfg.Path + ".switch")
		}
	}()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(out, h), 1<<20)
	refusal, err = copyStaged(tx.Bucket(bktRestore), bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil || refusal != nil {
		return "", 0, refusal, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 {
		return "", 0, model.FieldErrorf("sha256", "the %d staged bytes have SHA-256 %s, not %s", s.Size, got, s.SHA256), nil
	}
	if refusal, err = finishRestored(path, ident, l, c.Now); err != nil || refusal != nil {
		return "", 0, refusal, err
	}
	return path, s.Size, nil, nil
}

// copyStaged writes the staged bytes in order to w, refusing a gap.
func copyStaged(b *bolt.Bucket, w io.Writer) (*model.Error, error) {
	var next uint64
	cur := b.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if len(k) != 8 {
			continue // keyRestoreMeta
		}
		if off := binary.BigEndian.Uint64(k); off != next {
			return model.Errorf(model.CodeInternal, "the staged bytes have a gap at %d (next at %d)", next, off), nil
		}
		if _, err := w.Write(v); err != nil {
			return nil, err
		}
		next += uint64(len(v))
	}
	return nil, nil
}

// identity is what identifies the running cluster, which a restore keeps
// (restore.go).
type identity struct {
	nodes     [][2][]byte
	memberKey []byte
	proto     uint64
	secured   bool
	hwm       uint64
}

func readIdentity(tx *bolt.Tx) (identity, error) {
	meta := tx.Bucket(bktMeta)
	id := identity{
		memberKey: bytes.Clone(meta.Get(keyMemberKey)),
		proto:     uint64(stateProto(tx)),
		secured:   meta.Get(keyACLBootstrapped) != nil,
		hwm:       metaU64(tx, keyTimeHWM),
	}
	err := tx.Bucket(bktNodes).ForEach(func(k, v []byte) error {
		id.nodes = append(id.nodes, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
		return nil
	})
	return id, err
}

// write writes the identity into a restored file's transaction: the
// member key (when the cluster has one), the protocol (when higher), the
// members' records.
func (id identity) write(tx *bolt.Tx, fileProto uint64) error {
	meta := tx.Bucket(bktMeta)
	if id.memberKey != nil {
		if err := meta.Put(keyMemberKey, id.memberKey); err != nil {
			return err
		}
	}
	if id.proto > fileProto {
		if err := meta.Put(keyProto, u64key(id.proto)); err != nil {
			return err
		}
	}
	if err := tx.DeleteBucket(bktNodes); err != nil {
		return err
	}
	b, err := tx.CreateBucket(bktNodes)
	if err != nil {
		return err
	}
	for _, kv := range id.nodes {
		if err := b.Put(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// finishRestored makes the file at path, the staged bytes, the state as
// of the switch entry l: it refuses a file that is not an ax state this
// binary can apply, or one without ACLs into a cluster with them, and
// writes the cluster's identity, the switch's position as the applied
// index, and the time high-water mark (the later of the two states' and
// the switch's). The decisions read only the file and the state, the
// same on every replica.
func finishRestored(path string, ident identity, l *raft.Log, now int64) (*model.Error, error) {
	info, err := InspectState(path)
	if err != nil {
		// The answer is replicated: it must not name this node's path.
		return model.FieldErrorf("snapshot", "the staged bytes are no ax state: %s", strings.ReplaceAll(err.Error(), path, "the staged file")), nil
	}
	if e := restorable(info, ident.secured); e != nil {
		return e, nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := ident.write(tx, uint64(info.Protocol)); err != nil {
			return err
		}
		meta := tx.Bucket(bktMeta)
		complete := bytes.Equal(meta.Get(keyFinishedThrough), u64key(info.Index))
		v := make([]byte, 16)
		binary.BigEndian.PutUint64(v, l.Index)
		binary.BigEndian.PutUint64(v[8:], l.Term)
		if err := meta.Put(keyApplied, v); err != nil {
			return err
		}
		if complete { // the file's finished index was whole: it stays so
			if err := meta.Put(keyFinishedThrough, v[:8]); err != nil {
				return err
			}
		}
		hwm := max(ident.hwm, metaU64(tx, keyTimeHWM), uint64(max(now, 0)))
		return meta.Put(keyTimeHWM, u64key(hwm))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return nil, err
}

// syncDir fsyncs a directory, so that a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil && !errors.Is(cerr, os.ErrClosed) {
		err = cerr
	}
	return err
}
