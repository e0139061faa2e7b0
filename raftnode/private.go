package raftnode

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// privateSnapshots makes the snapshots of a FileSnapshotStore readable by
// their owner only: a snapshot is the whole state machine (task
// definitions, secrets, token hashes), and raft writes it with the
// process's umask.
type privateSnapshots struct {
	raft.SnapshotStore
	dir string // the store's base dir; snapshots live in dir/snapshots
}

// Create implements raft.SnapshotStore.
func (s privateSnapshots) Create(version raft.SnapshotVersion, index, term uint64, conf raft.Configuration,
	confIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, conf, confIndex, trans)
	if err != nil {
		return nil, err
	}
	return &privateSink{SnapshotSink: sink, dir: s.dir}, nil
}

type privateSink struct {
	raft.SnapshotSink
	dir string
}

// Close implements raft.SnapshotSink. The state file is restricted before
// the store renames its directory into place, meta.json (written by
// Close) after.
func (p *privateSink) Close() error {
	restrict(filepath.Join(p.dir, "snapshots"))
	err := p.SnapshotSink.Close()
	restrict(filepath.Join(p.dir, "snapshots"))
	return err
}

// restrict sets owner-only modes on every file (0600) and directory
// (0700) under dir.
func restrict(dir string) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			_ = os.Chmod(path, 0o700)
		} else if d.Type().IsRegular() {
			_ = os.Chmod(path, 0o600)
		}
		return nil
	})
}
