package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/ax-scheduler/ax/internal/command"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// versionCmd is ax version.
type versionCmd struct{ command.Base }

func newVersionCmd(io *command.IO) command.Command {
	c := &versionCmd{}
	c.Init(io, "version", "Usage: ax version\n\nPrints the version, the commit it was built from and the Go version.\n")
	return c
}

func (c *versionCmd) Run(ctx context.Context, args []string) error {
	if err := c.Parse(args); err != nil {
		return err // -h: the usage, printed
	}
	if c.FS.NArg() > 0 {
		return fmt.Errorf("version: unexpected arguments %q", c.FS.Args())
	}
	fmt.Fprintln(c.IO.Stdout, versionLine())
	return nil
}

// versionLine says what this binary is: the version set with -ldflags (or
// the module version go install recorded), the VCS commit and time, and
// the Go version, from the build information.
func versionLine() string {
	v, commit, when, dirty, goVersion := version, "", "", false, runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	line := "ax " + v
	if commit != "" {
		line += " commit " + commit[:min(len(commit), 12)]
		if dirty {
			line += "+dirty"
		}
		if when != "" {
			line += " (" + when + ")"
		}
	}
	return line + " " + goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
}
