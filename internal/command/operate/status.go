package operate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/view"
)

// statusCmd is ax status.
type statusCmd struct {
	command.ClientBase
	out   view.Output
	fires int
}

// NewStatus makes ax status.
func NewStatus(io *command.IO) command.Command {
	c := &statusCmd{}
	c.Init(io, "status", `
Usage: ax status [-o table|json|yaml] [-fires N] [-stale]

The cluster at a glance, from GET /v1/overview and GET /v1/upcoming: the
leader and the members with their health and version, the executors
(slots, labels, last heartbeat), unfinished instances by state, fires
and outcomes in the last hour and day, the latest failures, the firing
alerts and the next fire times (within 24h). -o json|yaml prints
{"overview": ..., "upcoming": ...} as the API answers them. Without a
leader it fails after about a second: -stale shows what the node itself
knows (its state as applied, the members as it sees them).

Examples:
	ax status
	ax status -addr 10.0.0.1:7070,10.0.0.2:7070 -o yaml
	ax status -stale -addr 10.0.0.2:7070
`)
	c.CF.RegisterStale(c.FS, false)
	c.out.Register(c.FS)
	c.FS.IntVar(&c.fires, "fires", 10, "how many of the next fire times to show (1 to 5000)")
	return c
}

func (c *statusCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, &c.out)
	if err != nil {
		return err
	}
	if c.FS.NArg() > 0 {
		return fmt.Errorf("status: unexpected arguments %q", c.FS.Args())
	}
	var r view.StatusReport
	if err := cl.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/overview"}, &r.Overview); err != nil {
		return err
	}
	q := url.Values{"within": {"24h"}, "limit": {strconv.Itoa(c.fires)}}
	if err := cl.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/upcoming", Query: q}, &r.Upcoming); err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, r, func(w io.Writer) error { return view.Status(w, &r, time.Now()) })
}
