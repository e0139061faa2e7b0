package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// Bucket names. See DESIGN.md.
var (
	bktMeta        = []byte("meta")
	bktTasks       = []byte("tasks")
	bktHistory     = []byte("task_history")
	bktNodes       = []byte("nodes")
	bktRequests    = []byte("requests")
	bktRequestTime = []byte("requests_by_time")
	bktInstances   = []byte("instances")
	bktDue         = []byte("due")
	bktTaskInst    = []byte("task_instances")
	bktIdem        = []byte("idempotency")
	bktTaskState   = []byte("task_state")
	bktTaskEvents  = []byte("task_events")
	bktInstEvents  = []byte("instance_events")
	bktActive      = []byte("active")
	bktBlocked     = []byte("blocked")
	bktAttempts    = []byte("attempts")
	bktLogs        = []byte("logs")
	bktAlerts      = []byte("alerts")
	bktSucceeded   = []byte("succeeded")    // task \x00 date: a SUCCESS for that scheduled date (from protocol 8: its u64 id)
	bktWaitDeps    = []byte("waiting_deps") // dep task \x00 date \x00 id: waits for that success
	bktFailedDeps  = []byte("failed_deps")  // task \x00 date: u64 id of an instance that ended FAILED/TERMINATED for it (protocol 4)
	bktACLTokens   = []byte("acl_tokens")   // token name: TokenRecord
	bktACLHashes   = []byte("acl_hashes")   // token SHA-256 hex: token name
	bktSecrets     = []byte("secrets")      // secret name: SecretRecord
	bktChannels    = []byte("channels")     // channel name: ChannelRecord (protocol 4)
	bktCalendars   = []byte("calendars")    // calendar name: calendar.Calendar (protocol 8)
	bktWindows     = []byte("windows")      // window name: calendar.Window (protocol 8)
	bktPools       = []byte("pools")        // pool name: model.Pool with its counts (protocol 8)
	bktPoolWait    = []byte("pool_wait")    // pool \x00 id: task, an instance waiting for a slot (protocol 8)
	bktPoolIdx     = []byte("pool_idx")     // id: role byte + pool, the slot it holds or waits for (protocol 8)
	bktPoolState   = []byte("pool_state")   // pool name: uvarint busy, uvarint queued (protocol 8)
	bktRateState   = []byte("rate_state")   // 't' task or 'p' pool: u64 TAT (ms), uvarint waiting, uvarint interval (protocol 8)
	bktRateWait    = []byte("rate_wait")    // limiter \x00 u64 joined, u64 id: empty, a rate limit's FIFO (protocol 8)
	bktRateIdx     = []byte("rate_idx")     // id: the rate_wait keys of a waiting instance (protocol 8)

	keyApplied   = []byte("applied")    // u64 index, u64 term
	keyLastFired = []byte("last_fired") // u64 id of the instance fired last
	keyPending   = []byte("pending")    // u64 count of SCHEDULED instances
	keyActive    = []byte("active")     // u64 count of instances in the active index
	// keyACLBootstrapped is the leader time of acl_bootstrap; keyMemberKey
	// the member key it set.
	keyACLBootstrapped = []byte("acl_bootstrapped")
	keyMemberKey       = []byte("member_key")
	// keyProto is the protocol every member spoke when a leader last
	// raised it (set_proto); absent means 1. Checks that a later protocol
	// added apply only to entries after it, so that a replica replaying
	// an older entry decides as the replicas that applied it did.
	keyProto = []byte("proto")

	// coreBuckets are in every state machine file since the first release
	// (SnapshotIndex checks for them); buckets added later are created
	// when a file is opened.
	coreBuckets = [][]byte{bktMeta, bktTasks, bktHistory, bktNodes, bktRequests, bktRequestTime,
		bktInstances, bktDue, bktTaskInst, bktIdem, bktTaskState, bktTaskEvents, bktInstEvents,
		bktActive, bktBlocked, bktAttempts, bktLogs, bktAlerts, bktSucceeded, bktWaitDeps}
	allBuckets = append(coreBuckets[:len(coreBuckets):len(coreBuckets)], bktACLTokens, bktACLHashes, bktSecrets, bktRequestClock, bktFinished,
		bktStats, bktRecentFailures, bktRecentMisfires, bktAlertsCur, bktAlertHistory, bktAlertPending, bktSilences,
		bktFailedDeps, bktChannels, bktCalendars, bktWindows, bktPools, bktPoolWait, bktPoolIdx, bktPoolState,
		bktRateState, bktRateWait, bktRateIdx, bktRollouts, bktResults)
)

// RequestTTL is how long a request id is remembered for deduplication,
// measured in leader time between commands: from protocol 3 on the
// request clock, which only counts time passing within a leadership term
// (clock.go).
const RequestTTL = 10 * time.Minute

const cleanMarker = ".clean"

// Config configures an FSM.
type Config struct {
	// Path of the bbolt file.
	Path string
	// NoSync opens bbolt without fsync. The file is then trusted after a
	// clean Close, or after the process died while the machine kept running
	// (boot.go); after a machine crash Open discards it and the node
	// rebuilds it from the Raft snapshot and log (see Rebuilt).
	NoSync bool
	// Logger receives the state machine's logs.
	Logger hclog.Logger
	// Observer, when set, is told after each committed batch what changed
	// that a scheduler must react to.
	Observer Observer
}

// Observer learns of changes after they are committed. Calls come from
// the apply goroutine and must not block.
type Observer interface {
	// TaskChanged: the task was created, updated, paused, resumed or
	// deleted.
	TaskChanged(name string)
	// Scheduled: a SCHEDULED (or RETRYING) instance is due at dueMs.
	Scheduled(id uint64, dueMs int64)
	// InstanceChanged: an instance entered a state after it fired (READY,
	// RUNNING with its lease, a terminal state...), or renewed its lease.
	InstanceChanged(c InstanceChange)
}

// notes collects observer calls during a batch.
type notes struct {
	tasks   []string
	ids     []uint64
	dues    []int64
	changes []InstanceChange
}

// FSM is ax's Raft state machine. It implements raft.BatchingFSM. Its
// own methods are its lifecycle (apply, Precheck, snapshots, restore,
// close); its queries are those of the domain readers it embeds
// (reads.go).
type FSM struct {
	taskReads
	instanceReads
	consoleReads
	alertReads
	accessReads
	clusterReads

	cfg     Config
	logger  hclog.Logger
	mu      sync.RWMutex // guards db against Restore's swap
	db      *bolt.DB
	applied atomic.Uint64
	// appliedBytes counts the bytes of the entries applied since Open
	// (raftnode snapshots by it).
	appliedBytes atomic.Uint64
	hwm          atomic.Int64 // TimeHWM
	rebuilt      bool
	aclC         atomic.Pointer[aclCache]
	// revokes counts the token revokes applied (and restores, which may
	// drop tokens): the agent ends the requests of revoked tokens still
	// running when it moves. Not state: rolled-back tries count too.
	revokes atomic.Uint64
	// failed is why the state cannot be used: a restore that failed after
	// it let go of the old database. Reads answer it until a restore
	// succeeds. Guarded by mu.
	failed error

	watchMu sync.Mutex
	watch   chan struct{} // closed and replaced on every applied batch

	// taskCache holds decoded task definitions by name for the apply
	// goroutine; an entry is used only while its version matches the
	// stored task state, so it never changes what an apply does.
	taskCache map[string]*model.Task
	// defs caches the compiled calendars and windows (calendars.go).
	defs defCache

	// switchRefusal is why the restore_switch being applied is refused
	// (applySwitch), for its transactional apply to answer. Apply
	// goroutine only.
	switchRefusal *model.Error

	// applyHook, set by tests only, runs before each command's apply
	// (to make one fail). It does not take the writer: handing the writer
	// to a function value would move it to the heap for every command.
	applyHook func(tx *bolt.Tx, c *command.Command)
}

var _ raft.BatchingFSM = (*FSM)(nil)

// Open opens (or creates) the state machine file.
func Open(cfg Config) (*FSM, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	f := &FSM{cfg: cfg, logger: cfg.Logger.Named("fsm"), watch: make(chan struct{}), taskCache: map[string]*model.Task{}}
	f.taskReads, f.instanceReads, f.consoleReads = taskReads{f}, instanceReads{f}, consoleReads{f}
	f.alertReads, f.accessReads, f.clusterReads = alertReads{f}, accessReads{f}, clusterReads{f}
	marker := cfg.Path + cleanMarker
	if cfg.NoSync {
		boot := bootID()
		if _, err := os.Stat(cfg.Path); err == nil {
			if _, err := os.Stat(marker); err != nil {
				if sameBoot(cfg.Path, boot) {
					f.logger.Warn("state machine was not closed cleanly, but the machine has not restarted since: keeping it and replaying the log after its applied index", "path", cfg.Path)
				} else {
					f.logger.Warn("state machine was not closed cleanly and the machine restarted since (or its boot id is unknown); discarding it to rebuild from snapshot and log", "path", cfg.Path)
					if err := os.Remove(cfg.Path); err != nil {
						return nil, fmt.Errorf("fsm: discard unclean state: %w", err)
					}
					f.rebuilt = true
				}
			}
		}
		if err := markBoot(cfg.Path, boot); err != nil {
			return nil, fmt.Errorf("fsm: %w", err)
		}
	}
	if err := os.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("fsm: %w", err)
	}
	db, err := openDB(cfg)
	if err != nil {
		return nil, err
	}
	f.db = db
	if err := f.loadApplied(); err != nil {
		db.Close()
		return nil, err
	}
	if err := f.loadHWM(); err != nil {
		db.Close()
		return nil, err
	}
	return f, nil
}

func openDB(cfg Config) (*bolt.DB, error) {
	db, err := bolt.Open(cfg.Path, 0o600, boltOptions(cfg))
	if err != nil {
		return nil, fmt.Errorf("fsm: open %s: %w", cfg.Path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("fsm: init buckets: %w", err)
	}
	if err := ensureFinishedIndex(db, cfg.Logger.Named("fsm")); err != nil {
		db.Close()
		return nil, err
	}
	if err := unmapPages(db); err != nil {
		cfg.Logger.Named("fsm").Warn("could not drop the state file's pages from memory", "error", err)
	}
	return db, nil
}

// boltOptions are the options the state file is opened with.
func boltOptions(cfg Config) *bolt.Options {
	return &bolt.Options{
		Timeout: 5 * time.Second,
		NoSync:  cfg.NoSync,
		// bbolt fsyncs the whole file each time it grows it (every 16 MiB),
		// which with NoSync flushes every dirty page at once: a stall of
		// tens of milliseconds in the apply path. An unsynced file is
		// trusted only after a process crash, when the kernel's page
		// cache holds every write (boot.go), which a skipped sync does
		// not change.
		NoGrowSync:      cfg.NoSync,
		NoFreelistSync:  true,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: 256 << 20,
	}
}

func (f *FSM) loadApplied() error {
	return f.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bktMeta).Get(keyApplied)
		if len(v) >= 8 {
			f.applied.Store(binary.BigEndian.Uint64(v))
		} else {
			f.applied.Store(0)
		}
		return nil
	})
}

// SnapshotIndex returns the log index a state-machine file (a snapshot's
// state.bin, or a closed node's state file) was last applied up to. It
// opens the file read-only.
func SnapshotIndex(path string) (uint64, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, fmt.Errorf("fsm: %w", err)
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return 0, fmt.Errorf("fsm: open %s: %w", path, err)
	}
	defer db.Close()
	var index uint64
	err = db.View(func(tx *bolt.Tx) error {
		for _, b := range coreBuckets {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("fsm: %s is not an ax state machine (no %q bucket)", path, b)
			}
		}
		if v := tx.Bucket(bktMeta).Get(keyApplied); len(v) >= 8 {
			index = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	return index, err
}

// Rebuilt reports whether Open discarded an unclean file, in which case the
// caller must let Raft restore the latest snapshot on start.
func (f *FSM) Rebuilt() bool { return f.rebuilt }

// AppliedBytes returns the bytes of log entries applied since Open.
func (f *FSM) AppliedBytes() uint64 { return f.appliedBytes.Load() }

// StateBytes returns the size of the state file (0 if it cannot be
// read).
func (f *FSM) StateBytes() int64 {
	st, err := os.Stat(f.cfg.Path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// AppliedIndex returns the index of the last log entry applied.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// Changed returns a channel closed after the next applied batch.
func (f *FSM) Changed() <-chan struct{} {
	f.watchMu.Lock()
	defer f.watchMu.Unlock()
	return f.watch
}

func (f *FSM) notify() {
	f.watchMu.Lock()
	close(f.watch)
	f.watch = make(chan struct{})
	f.watchMu.Unlock()
}

// Close syncs and closes the database and, with NoSync, marks it clean.
func (f *FSM) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.db == nil {
		return nil
	}
	if err := f.db.Sync(); err != nil {
		return fmt.Errorf("fsm: sync: %w", err)
	}
	if err := f.db.Close(); err != nil {
		return fmt.Errorf("fsm: close: %w", err)
	}
	f.db = nil
	if f.cfg.NoSync && f.failed == nil {
		if err := os.WriteFile(f.cfg.Path+cleanMarker, nil, 0o600); err != nil {
			return fmt.Errorf("fsm: mark clean: %w", err)
		}
	}
	return nil
}

// rememberRequest stores a command's result under its request id, indexed
// for pruning by the request clock and log index (protocol 3) or, before,
// by leader time.
func (f *FSM) rememberRequest(tx *bolt.Tx, c *command.Command, index uint64, es *entryState, res *Result) {
	v := make([]byte, 8, 9+len(res.Data))
	binary.BigEndian.PutUint64(v, uint64(c.Now))
	v = appendStoredResult(v, res)
	must(tx.Bucket(bktRequests).Put([]byte(c.ReqID), v))
	if es.byClock {
		must(tx.Bucket(bktRequestClock).Put(clockKey(es.clock, c.ReqID), u64key(index)))
		return
	}
	must(tx.Bucket(bktRequestTime).Put(timeKey(c.Now, c.ReqID), nil))
}

// A remembered result is stored as a tag byte and the data (storedData) or
// the error's JSON (storedErr). Older versions stored the Result's JSON,
// which starts with '{'.
const (
	storedData = 0
	storedErr  = 1
)

func appendStoredResult(b []byte, r *Result) []byte {
	if r.Err != nil {
		enc, _ := json.Marshal(r.Err)
		return append(append(b, storedErr), enc...)
	}
	return append(append(b, storedData), r.Data...)
}

func decodeStoredResult(b []byte) (*Result, error) {
	if len(b) == 0 {
		return nil, errors.New("empty stored result")
	}
	switch b[0] {
	case storedData:
		var data []byte
		if len(b) > 1 {
			data = append([]byte(nil), b[1:]...)
		}
		return &Result{Data: data}, nil
	case storedErr:
		var e model.Error
		if err := json.Unmarshal(b[1:], &e); err != nil {
			return nil, err
		}
		return &Result{Err: &e}, nil
	default:
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, err
		}
		return &r, nil
	}
}

// pruneRequests forgets request ids older than RequestTTL before now.
func (f *FSM) pruneRequests(tx *bolt.Tx, now int64) {
	cutoff := now - RequestTTL.Milliseconds()
	bt := tx.Bucket(bktRequestTime)
	br := tx.Bucket(bktRequests)
	cur := bt.Cursor()
	for k, _ := cur.First(); k != nil && int64(binary.BigEndian.Uint64(k)) < cutoff; k, _ = cur.First() {
		must(br.Delete(k[8:]))
		must(cur.Delete())
	}
}

func timeKey(ms int64, id string) []byte {
	k := make([]byte, 8, 8+len(id))
	binary.BigEndian.PutUint64(k, uint64(ms))
	return append(k, id...)
}

// must aborts the apply on a bbolt error; ApplyBatch rolls the
// transaction back and decides (see abort).
func must(err error) {
	if err != nil {
		panic(abort{err})
	}
}

// Snapshot captures the state with a read transaction; Persist streams the
// database file, consistent as of this moment, while applies continue.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.failed != nil || f.db == nil {
		return nil, fmt.Errorf("fsm: snapshot: state machine unavailable: %v", f.failed)
	}
	tx, err := f.db.Begin(false)
	if err != nil {
		return nil, fmt.Errorf("fsm: snapshot: %w", err)
	}
	return &snapshot{tx: tx}, nil
}

type snapshot struct{ tx *bolt.Tx }

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.tx.WriteTo(sink); err != nil {
		sink.Cancel()
		return fmt.Errorf("fsm: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) Release() { _ = s.tx.Rollback() }

// WriteState writes the whole state, consistent as of the applied index
// it first hands to started, to w (the file a Raft snapshot holds, and
// what `ax agent -restore` takes), while applies go on.
func (f *FSM) WriteState(w io.Writer, started func(index uint64)) (int64, error) {
	f.mu.RLock()
	if f.failed != nil || f.db == nil {
		f.mu.RUnlock()
		return 0, fmt.Errorf("fsm: state machine unavailable: %v", f.failed)
	}
	tx, err := f.db.Begin(false)
	f.mu.RUnlock()
	if err != nil {
		return 0, fmt.Errorf("fsm: %w", err)
	}
	defer tx.Rollback()
	var index uint64
	if v := tx.Bucket(bktMeta).Get(keyApplied); len(v) >= 8 {
		index = binary.BigEndian.Uint64(v)
	}
	if started != nil {
		started(index)
	}
	return tx.WriteTo(w)
}

// StateInfo is what a state file holds, by count (InspectState).
type StateInfo = member.StateInfo

// InspectState opens the state file at path read-only and counts what
// it holds.
func InspectState(path string) (*StateInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("fsm: %w", err)
	}
	if _, err := SnapshotIndex(path); err != nil { // an ax state machine?
		return nil, err
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("fsm: open %s: %w", path, err)
	}
	defer db.Close()
	info := &StateInfo{Size: st.Size()}
	err = db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bktMeta).Get(keyApplied); len(v) >= 16 {
			info.Index, info.Term = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
		}
		info.Protocol = max(int(metaU64(tx, keyProto)), 1)
		info.Tasks = tx.Bucket(bktTasks).Stats().KeyN
		info.Instances = tx.Bucket(bktInstances).Stats().KeyN
		info.Pending, info.Active = int(metaU64(tx, keyPending)), int(metaU64(tx, keyActive))
		info.ACLs = tx.Bucket(bktMeta).Get(keyACLBootstrapped) != nil
		return nil
	})
	return info, err
}

// Restore replaces the database with the snapshot's file.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	tmp := f.cfg.Path + ".restore"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	n, err := io.Copy(out, rc)
	if err == nil && !f.cfg.NoSync {
		// Without NoSync the file is trusted after any crash: it must
		// be on disk before it replaces the state. With NoSync it is
		// trusted after a process crash only (the kernel holds every
		// write), and a machine crash discards it (Open, sameBoot) and
		// restores this snapshot again from Raft's store, which synced
		// it: an fsync here would only wait for the disk (about 1 s per
		// GB on this VM's disk, a restart's and a join's time).
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: write: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.replaceDB(tmp); err != nil {
		// The old database is closed (or no longer matches its applied
		// index): nothing this node holds can be trusted until Raft
		// installs a snapshot again.
		f.failed = fmt.Errorf("restoring a snapshot failed: %w", err)
		f.logger.Error("the state machine is unusable until a snapshot restores; the node serves only /livez and a 503 /healthz", "error", err)
		return err
	}
	f.failed = nil
	f.revokes.Add(1)
	f.logger.Info("restored snapshot", "bytes", n, "applied", f.applied.Load())
	f.notify()
	if o, ok := f.cfg.Observer.(RestoreObserver); ok {
		o.Restored()
	}
	return nil
}

// replaceDB closes the database and opens the file tmp in its place; f.mu
// is held.
func (f *FSM) replaceDB(tmp string) error {
	if f.db != nil {
		err := f.db.Close()
		f.db = nil
		if err != nil {
			return fmt.Errorf("fsm: restore: close: %w", err)
		}
	}
	if err := os.Rename(tmp, f.cfg.Path); err != nil {
		return fmt.Errorf("fsm: restore: rename: %w", err)
	}
	db, err := openDB(f.cfg)
	if err != nil {
		return err
	}
	f.db = db
	f.taskCache = map[string]*model.Task{}
	f.defs.cals.Store(nil)
	f.defs.wins.Store(nil)
	f.defs.pools.Store(nil)
	if err := f.loadApplied(); err != nil {
		return err
	}
	return f.loadHWM()
}

// Failed returns why the state machine cannot be used (a failed restore),
// nil when it can.
func (f *FSM) Failed() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.failed
}

// view runs fn in a read transaction.
func (f *FSM) view(fn func(tx *bolt.Tx) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.failed != nil {
		return model.Errorf(model.CodeUnavailable, "state machine unavailable: %v", f.failed)
	}
	if f.db == nil {
		return model.Errorf(model.CodeUnavailable, "state machine closed")
	}
	return f.db.View(fn)
}

// Dump writes every bucket's keys and values in order to w; tests compare
// dumps of two state machines to check determinism.
func (f *FSM) Dump(w io.Writer) error {
	return f.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			fmt.Fprintf(w, "[%s]\n", name)
			return b.ForEach(func(k, v []byte) error {
				if bytes.Equal(name, bktMeta) && (bytes.Equal(k, keyApplied) || bytes.Equal(k, keyFinishedThrough)) {
					return nil // the applied index (and its copy) differs by design
				}
				_, err := fmt.Fprintf(w, "%x=%x\n", k, v)
				return err
			})
		})
	})
}

// writer is one command's transaction state, carried through its apply
// (or its Precheck): what every write of the command needs. The writes
// themselves are the methods of one type per domain over it (writes.go).
type writer struct {
	f      *FSM
	tx     *bolt.Tx
	cmd    *command.Command
	index  uint64
	es     *entryState // what the commands of the entry share
	notes  *notes
	states map[string]*taskState // task states changed by this command
	err    error
	proto  int // the state's protocol as this command began (0: not read yet)
	ended  *endedAttempt
	// dry marks a Precheck: the transaction is read-only, and what a
	// check finds is not used, only its answer.
	dry bool

	// rollouts caches the rollouts records this command read or wrote
	// (nil: none), so a submission of many instances reads one once.
	rollouts map[string]*model.Rollout
}

func (w *writer) put(bkt, k, v []byte) {
	if w.err == nil {
		w.err = w.tx.Bucket(bkt).Put(k, v)
	}
}

func (w *writer) del(bkt, k []byte) {
	if w.err == nil {
		w.err = w.tx.Bucket(bkt).Delete(k)
	}
}
