package operate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/internal/command"
)

// SnapshotUsage is the help of ax snapshot and of its subcommands.
const SnapshotUsage = `
Usage: ax snapshot <subcommand> [flags] FILE

Subcommands:
	save FILE        write the cluster's state to FILE (admin), online, through
	                 any node: every write acknowledged before the command is in
	                 it; its SHA-256 is checked against the server's
	inspect FILE     what FILE holds: applied index and term, protocol, tasks,
	                 instances (pending, active), size
	restore FILE     make FILE the running cluster's state (admin), through any
	                 node: every member installs it, the leader's services
	                 start again from it; what was written after the save is
	                 gone. The cluster keeps its members and member key; its
	                 ACL tokens become the file's

A saved file is a state file as the data dir's Raft snapshots hold it:
restore it into a running cluster with ax snapshot restore, or as a new
cluster with ax agent -restore FILE (docs/operations.md, Backups and
restore).

Examples:
	ax snapshot save backup-$(date +%F).ax
	ax snapshot inspect backup-2026-12-03.ax
	ax snapshot restore backup-2026-12-03.ax
`

// snapshotSaveCmd is ax snapshot save.
type snapshotSaveCmd struct{ command.ClientBase }

// NewSnapshotSave makes ax snapshot save.
func NewSnapshotSave(io *command.IO) command.Command {
	c := &snapshotSaveCmd{}
	c.Init(io, "snapshot save", SnapshotUsage)
	return c
}

func (c *snapshotSaveCmd) Run(ctx context.Context, args []string) error {
	cl, file, err := c.ConnectOne(args, nil, "file")
	if err != nil {
		return err
	}
	// Written beside FILE and renamed once checked: FILE is whole or absent.
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".part-*")
	if err != nil {
		return fmt.Errorf("snapshot save: %w", err)
	}
	defer os.Remove(tmp.Name())
	info, err := cl.SaveSnapshot(ctx, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("snapshot save: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("snapshot save: %w", err)
	}
	fmt.Fprintf(c.IO.Stdout, "saved %s: applied index %d, %d bytes, sha256 %s\n", file, info.Index, info.Size, info.SHA256)
	return nil
}

// snapshotInspectCmd is ax snapshot inspect.
type snapshotInspectCmd struct{ command.Base }

// NewSnapshotInspect makes ax snapshot inspect.
func NewSnapshotInspect(io *command.IO) command.Command {
	c := &snapshotInspectCmd{}
	c.Init(io, "snapshot inspect", SnapshotUsage)
	return c
}

func (c *snapshotInspectCmd) Run(ctx context.Context, args []string) error {
	file, err := c.ParseOne(args, "file")
	if err != nil {
		return err
	}
	info, err := fsm.InspectState(file)
	if err != nil {
		return fmt.Errorf("snapshot inspect: %w", err)
	}
	fmt.Fprintf(c.IO.Stdout, "applied index  %d\nterm           %d\nprotocol       %d\ntasks          %d\ninstances      %d (%d pending, %d active)\nsize           %d bytes\nacls           %s\n",
		info.Index, info.Term, info.Protocol, info.Tasks, info.Instances, info.Pending, info.Active, info.Size, map[bool]string{true: "bootstrapped", false: "none"}[info.ACLs])
	return nil
}

// snapshotRestoreCmd is ax snapshot restore.
type snapshotRestoreCmd struct{ command.ClientBase }

// NewSnapshotRestore makes ax snapshot restore.
func NewSnapshotRestore(io *command.IO) command.Command {
	c := &snapshotRestoreCmd{}
	c.Init(io, "snapshot restore", SnapshotUsage)
	return c
}

func (c *snapshotRestoreCmd) Run(ctx context.Context, args []string) error {
	cl, file, err := c.ConnectOne(args, nil, "file")
	if err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("snapshot restore: %w", err)
	}
	defer f.Close()
	// Checked here first: a file that is not a state is refused before
	// anything is sent.
	if _, err := fsm.InspectState(file); err != nil {
		return fmt.Errorf("snapshot restore: %w", err)
	}
	info, err := cl.RestoreSnapshot(ctx, f)
	if err != nil {
		return fmt.Errorf("snapshot restore: %w", err)
	}
	fmt.Fprintf(c.IO.Stdout, "restored %s: saved at applied index %d; %d tasks, %d instances (%d pending, %d active)\n",
		file, info.Index, info.Tasks, info.Instances, info.Pending, info.Active)
	return nil
}
