package work

import (
	"context"
	"fmt"
	"io"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/command"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// CalendarUsage is the help of ax calendar and of its subcommands.
const CalendarUsage = `
Usage: ax calendar <subcommand> [flags] [args]

Subcommands:
	apply -f FILE|-          create or replace a calendar from JSON (its name in the file)
	import NAME FILE.ics|-   set a calendar's exclude list from an iCalendar file
	list                     the calendars, with the tasks that use them
	get NAME                 one calendar (-o json: as apply takes it)
	delete NAME              delete a calendar (refused while a task names it)

A calendar is {"name", "description", "timezone" (IANA, default UTC),
"exclude": ["2026-12-25", "2026-12-24/2026-12-26", "sat", "sun"],
"include": ["2026-10-10"]}: the days, in its timezone, on which the
triggers that name it ("calendars": ["NAME"]) do not fire; include wins
over exclude (a working Saturday). Ranges include both ends.

import reads the events of FILE.ics (each day an event covers is
excluded; recurring events are expanded) between -from (default January
1 of this year) and -to (default two years later, not included), in the
zone of -timezone, else the file's X-WR-TIMEZONE, else UTC. It REPLACES
the calendar's exclude list, timezone and description; the include list
of an existing calendar is kept. -dry-run prints the calendar it would
write, as JSON that apply takes, and writes nothing. Events it ignores
(cancelled ones, to-dos) are listed on stderr.

list and get take -o table|json|yaml (-json: -o json).

Examples:
	echo '{"name":"us","timezone":"America/New_York","exclude":["sat","sun","2026-12-25"]}' | ax calendar apply -f -
	ax calendar import us-holidays us-holidays.ics -from 2026-01-01
	ax calendar import cn cn-holidays.ics -timezone Asia/Shanghai -dry-run > cn.json
	ax calendar get us -o json > us.json   # edit, then: ax calendar apply -f us.json
	ax calendar list
	ax calendar delete us
`

// WindowUsage is the help of ax window and of its subcommands.
const WindowUsage = `
Usage: ax window <subcommand> [flags] [args]

Subcommands:
	apply -f FILE|-   create or replace a blackout window from JSON (its name in the file)
	list              the windows: active or not, the next span, the tasks held
	get NAME          one window (-o json: as apply takes it)
	delete NAME       delete a window

A window is {"name", "description", "timezone" (IANA, default UTC),
"cron" with "duration" (each repeat starts at cron and lasts duration),
"ranges": ["2026-12-24/2026-12-26", "2026-12-31T18:00/2027-01-01T06:00"],
"selector": {"label": "value"}}: the tasks carrying every label of the
selector (every task when it is empty) do not fire inside it; when it
ends, what it held back is handled by each task's catch-up policy.
Date ranges include both ends; wall-time ranges exclude their end.

list and get take -o table|json|yaml (-json: -o json).

Examples:
	echo '{"name":"weekend-freeze","timezone":"Europe/Berlin","cron":"0 18 * * 5","duration":"60h","selector":{"team":"billing"}}' | ax window apply -f -
	echo '{"name":"new-year","ranges":["2026-12-31T18:00/2027-01-01T06:00"]}' | ax window apply -f -
	ax window list
	ax window get weekend-freeze -o json
	ax window delete new-year
`

// defKind is what the commands of a kind of named definition (a
// calendar, a window) need to know of it: T the definition, L the list.
type defKind[T, L any] struct {
	noun  string // "calendar"
	usage string
	// name and version read a definition's name and its server version;
	// definition drops what the server sets.
	name       func(*T) string
	version    func(*T) uint64
	definition func(*T) T
	put        func(*client.Client, context.Context, *T) (*T, error)
	list       func(*client.Client, context.Context) (*L, error)
	items      func(*L) []T
	get        func(*client.Client, context.Context, string) (*T, error)
	delete     func(*client.Client, context.Context, string) (*T, error)
	table      func(io.Writer, []T) error
}

var calendars = defKind[calendar.Calendar, calendar.List]{
	noun: "calendar", usage: CalendarUsage,
	name:       func(c *calendar.Calendar) string { return c.Name },
	version:    func(c *calendar.Calendar) uint64 { return c.Version },
	definition: (*calendar.Calendar).Definition,
	put:        (*client.Client).PutCalendar, list: (*client.Client).ListCalendars,
	items: func(l *calendar.List) []calendar.Calendar { return l.Calendars },
	get:   (*client.Client).GetCalendar, delete: (*client.Client).DeleteCalendar,
	table: view.Calendars,
}

var windows = defKind[calendar.Window, calendar.WindowList]{
	noun: "window", usage: WindowUsage,
	name:       func(w *calendar.Window) string { return w.Name },
	version:    func(w *calendar.Window) uint64 { return w.Version },
	definition: (*calendar.Window).Definition,
	put:        (*client.Client).PutWindow, list: (*client.Client).ListWindows,
	items: func(l *calendar.WindowList) []calendar.Window { return l.Windows },
	get:   (*client.Client).GetWindow, delete: (*client.Client).DeleteWindow,
	table: view.Windows,
}

// PoolUsage is the help of ax pool and of its subcommands.
const PoolUsage = `
Usage: ax pool <subcommand> [flags] [args]

Subcommands:
	apply -f FILE|-   create or replace a pool of slots from JSON (its name in the file)
	list              the pools: slots, instances holding one and waiting, tasks
	get NAME          one pool (-o json: as apply takes it)
	delete NAME       delete a pool (refused while a task names it or an instance uses it)

A pool is {"name", "description", "slots", "rateLimit"}: the instances of
every task whose policy.pool names it hold at most slots at once, on top
of each task's maxConcurrency; the others wait BLOCKED and start oldest
first as slots free (more slots start them at once). A rateLimit
{"count", "per", "burst", "onLimit"} bounds how often they start, all
tasks together (docs/tasks.md, Rate limits).

list and get take -o table|json|yaml (-json: -o json).

Examples:
	echo '{"name":"warehouse","slots":4}' | ax pool apply -f -
	ax pool list
	ax pool delete warehouse
`

var pools = defKind[model.Pool, model.PoolList]{
	noun: "pool", usage: PoolUsage,
	name:       func(p *model.Pool) string { return p.Name },
	version:    func(p *model.Pool) uint64 { return p.Version },
	definition: (*model.Pool).Definition,
	put:        (*client.Client).PutPool, list: (*client.Client).ListPools,
	items: func(l *model.PoolList) []model.Pool { return l.Pools },
	get:   (*client.Client).GetPool, delete: (*client.Client).DeletePool,
	table: view.Pools,
}

// NewPoolApply makes ax pool apply.
func NewPoolApply(io *command.IO) command.Command { return pools.newApply(io) }

// NewPoolList makes ax pool list.
func NewPoolList(io *command.IO) command.Command { return pools.newList(io) }

// NewPoolGet makes ax pool get.
func NewPoolGet(io *command.IO) command.Command { return pools.newGet(io) }

// NewPoolDelete makes ax pool delete.
func NewPoolDelete(io *command.IO) command.Command { return pools.newDelete(io) }

// NewCalendarApply makes ax calendar apply.
func NewCalendarApply(io *command.IO) command.Command { return calendars.newApply(io) }

// NewCalendarList makes ax calendar list.
func NewCalendarList(io *command.IO) command.Command { return calendars.newList(io) }

// NewCalendarGet makes ax calendar get.
func NewCalendarGet(io *command.IO) command.Command { return calendars.newGet(io) }

// NewCalendarDelete makes ax calendar delete.
func NewCalendarDelete(io *command.IO) command.Command { return calendars.newDelete(io) }

// NewWindowApply makes ax window apply.
func NewWindowApply(io *command.IO) command.Command { return windows.newApply(io) }

// NewWindowList makes ax window list.
func NewWindowList(io *command.IO) command.Command { return windows.newList(io) }

// NewWindowGet makes ax window get.
func NewWindowGet(io *command.IO) command.Command { return windows.newGet(io) }

// NewWindowDelete makes ax window delete.
func NewWindowDelete(io *command.IO) command.Command { return windows.newDelete(io) }

// defApplyCmd is ax calendar|window apply.
type defApplyCmd[T, L any] struct {
	command.ClientBase
	k    *defKind[T, L]
	file string
}

func (k *defKind[T, L]) newApply(io *command.IO) command.Command {
	c := &defApplyCmd[T, L]{k: k}
	c.Init(io, k.noun+" apply", k.usage)
	c.FS.StringVar(&c.file, "f", "", k.noun+" JSON file, or - for stdin")
	return c
}

func (c *defApplyCmd[T, L]) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, nil)
	if err != nil {
		return err
	}
	var def T
	if err := c.IO.ReadJSON(c.file, &def); err != nil {
		return fmt.Errorf("%s: %w", c.FS.Name(), err)
	}
	if c.k.name(&def) == "" {
		return fmt.Errorf("%s: name is required in the file", c.FS.Name())
	}
	def = c.k.definition(&def)
	out, err := c.k.put(cl, ctx, &def)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "%s %s applied (version %d)\n", c.k.noun, c.k.name(out), c.k.version(out))
	return nil
}

// defReadCmd is ax calendar|window list (one false) and get (one).
type defReadCmd[T, L any] struct {
	command.ClientBase
	k   *defKind[T, L]
	one bool
	out view.Output
}

func (k *defKind[T, L]) newRead(io *command.IO, one bool) command.Command {
	c := &defReadCmd[T, L]{k: k, one: one}
	verb := "list"
	if one {
		verb = "get"
	}
	c.Init(io, k.noun+" "+verb, k.usage)
	c.CF.RegisterStale(c.FS, false)
	c.out.Register(c.FS)
	return c
}

func (k *defKind[T, L]) newList(io *command.IO) command.Command { return k.newRead(io, false) }
func (k *defKind[T, L]) newGet(io *command.IO) command.Command  { return k.newRead(io, true) }

func (c *defReadCmd[T, L]) Run(ctx context.Context, args []string) error {
	if !c.one {
		cl, err := c.Connect(args, &c.out)
		if err != nil {
			return err
		}
		l, err := c.k.list(cl, ctx)
		if err != nil {
			return err
		}
		return c.out.Print(c.IO.Stdout, l, func(w io.Writer) error { return c.k.table(w, c.k.items(l)) })
	}
	cl, name, err := c.ConnectOne(args, &c.out, c.k.noun+" name")
	if err != nil {
		return err
	}
	def, err := c.k.get(cl, ctx, name)
	if err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, def, func(w io.Writer) error { return c.k.table(w, []T{*def}) })
}

// defDeleteCmd is ax calendar|window delete.
type defDeleteCmd[T, L any] struct {
	command.ClientBase
	k *defKind[T, L]
}

func (k *defKind[T, L]) newDelete(io *command.IO) command.Command {
	c := &defDeleteCmd[T, L]{k: k}
	c.Init(io, k.noun+" delete", k.usage)
	return c
}

func (c *defDeleteCmd[T, L]) Run(ctx context.Context, args []string) error {
	cl, name, err := c.ConnectOne(args, nil, c.k.noun+" name")
	if err != nil {
		return err
	}
	if _, err := c.k.delete(cl, ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "deleted %s %s\n", c.k.noun, name)
	return nil
}
