package work

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model/calendar"
)

// cliRun is what one command run printed and returned.
type cliRun struct {
	stdout, stderr string
	err            error
}

// runCmd runs the command newCmd makes against the agent at addr, with
// stdin, as ax would.
func runCmd(t *testing.T, addr string, newCmd func(*command.IO) command.Command, stdin string, args ...string) cliRun {
	t.Helper()
	stdout, stderr := &testkit.Buffer{}, &testkit.Buffer{}
	io := &command.IO{Stdin: strings.NewReader(stdin), Stdout: stdout, Stderr: stderr,
		Getenv: func(k string) string {
			if k == "AX_ADDR" {
				return addr
			}
			return ""
		}}
	err := newCmd(io).Run(testkit.Context(t, 30*time.Second), args)
	return cliRun{stdout.String(), stderr.String(), err}
}

// check fails the test unless r ended without an error and stdout holds
// each of want (or with an error holding wantErr).
func (r cliRun) check(t *testing.T, what, wantErr string, want ...string) {
	t.Helper()
	switch {
	case wantErr == "" && r.err != nil:
		t.Fatalf("%s: got error %#v (stderr %q, stdout %q), want none", what, r.err, r.stderr, r.stdout)
	case wantErr != "" && (r.err == nil || !strings.Contains(r.err.Error(), wantErr)):
		t.Fatalf("%s: got error %v, want one with %q", what, r.err, wantErr)
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("%s printed %q, want it to hold %q", what, r.stdout, w)
		}
	}
}

// TestCalendarCommands: apply, get, list and delete calendars and
// windows against an in-process agent: get -o json can be applied
// again, bad files are refused naming the field, and the server's
// errors come through.
func TestCalendarCommands(t *testing.T) {
	a := agenttest.Start(t, nil)
	addr := a.HTTPAddr()
	now := time.Now().UTC()
	active := now.Add(-time.Hour).Format("2006-01-02T15:04") + "/" + now.Add(2*time.Hour).Format("2006-01-02T15:04")
	until := now.Add(2 * time.Hour).Truncate(time.Minute).Format(time.RFC3339)
	tests := []struct {
		name    string
		cmd     func(*command.IO) command.Command
		stdin   string
		args    []string
		wantErr string
		want    []string
	}{
		{"apply a calendar", NewCalendarApply, `{"name":"us","timezone":"America/New_York","exclude":["sat","sun","2026-12-25","2026-12-31/2027-01-01"],"include":["2026-10-10"]}`,
			[]string{"-f", "-"}, "", []string{"calendar us applied (version "}},
		{"list calendars", NewCalendarList, "", nil, "",
			[]string{"NAME", "TIMEZONE", "EXCLUDE", "INCLUDE", "USED BY", "us", "America/New_York", "4 (sat, sun, 2026-12-25, ...)"}},
		{"get a calendar", NewCalendarGet, "", []string{"us"}, "", []string{"us", "America/New_York", "4 (sat, sun"}},
		{"get a calendar as yaml", NewCalendarGet, "", []string{"us", "-o", "yaml"}, "", []string{"name: us", "timezone: America/New_York", "- 2026-12-31/2027-01-01"}},
		{"a server refusal names the field", NewCalendarApply, `{"name":"bad","exclude":["2026-02-30"]}`, []string{"-f", "-"}, "exclude[0]", nil},
		{"apply without -f", NewCalendarApply, "", nil, "calendar apply: -f FILE (or - for stdin) is required", nil},
		{"apply an unknown field", NewCalendarApply, `{"name":"x","exclude":[],"bogus":1}`, []string{"-f", "-"}, `calendar apply: unknown field "bogus"`, nil},
		{"apply a file without name", NewCalendarApply, `{"exclude":["sun"]}`, []string{"-f", "-"}, "calendar apply: name is required in the file", nil},
		{"apply a missing file", NewCalendarApply, "", []string{"-f", filepath.Join(t.TempDir(), "none.json")}, "no such file", nil},
		{"get without a name", NewCalendarGet, "", nil, "want exactly one calendar name", nil},
		{"get an unknown calendar", NewCalendarGet, "", []string{"nope"}, "no calendar named nope", nil},
		{"list -o bad", NewCalendarList, "", []string{"-o", "xml"}, `-o "xml": want table, json or yaml`, nil},

		{"apply a repeating window", NewWindowApply, `{"name":"weekend","timezone":"Europe/Berlin","cron":"0 18 * * 5","duration":"60h","selector":{"team":"billing"}}`,
			[]string{"-f", "-"}, "", []string{"window weekend applied (version "}},
		{"apply a window active now", NewWindowApply, `{"name":"now","ranges":["` + active + `"]}`, []string{"-f", "-"}, "", []string{"window now applied"}},
		{"list windows", NewWindowList, "", nil, "",
			[]string{"NAME", "TIMEZONE", "SCHEDULE", "SELECTOR", "ACTIVE", "NEXT", "TASKS", "0 18 * * 5 for 2d12h", "team=billing", "(every task)", active, "until " + until}},
		{"get a window as json", NewWindowGet, "", []string{"weekend", "-o", "json"}, "", []string{`"cron": "0 18 * * 5"`, `"nextFrom"`}},
		{"a window needs a schedule", NewWindowApply, `{"name":"empty"}`, []string{"-f", "-"}, "cron", nil},
		{"a nested unknown field is named by its path", NewWindowApply, `{"name":"w","ranges":["2026-12-24"],"status":{"bogus":true}}`, []string{"-f", "-"},
			`window apply: unknown field "status.bogus"`, nil},
		{"delete a window", NewWindowDelete, "", []string{"now"}, "", []string{"deleted window now"}},
		{"get a deleted window", NewWindowGet, "", []string{"now"}, "no window named now", nil},
		{"delete a calendar", NewCalendarDelete, "", []string{"us"}, "", []string{"deleted calendar us"}},
		{"list no calendars", NewCalendarList, "", []string{"-o", "json"}, "", []string{`"calendars": []`}},
	}
	for _, tt := range tests {
		runCmd(t, addr, tt.cmd, tt.stdin, tt.args...).check(t, tt.name, tt.wantErr, tt.want...)
	}
}

// TestCalendarCommands_GetIsAppliable: what get -o json prints, server
// fields and status included, is taken by apply and changes nothing but
// the version.
func TestCalendarCommands_GetIsAppliable(t *testing.T) {
	a := agenttest.Start(t, nil)
	addr := a.HTTPAddr()
	for _, k := range []struct {
		def        string
		apply, get func(*command.IO) command.Command
		name       string
	}{
		{`{"name":"eu","timezone":"Europe/Berlin","exclude":["sun","2026-12-24/2026-12-26"],"include":["2026-12-25"],"description":"EU office"}`, NewCalendarApply, NewCalendarGet, "eu"},
		{`{"name":"freeze","cron":"0 22 * * *","duration":"2h","ranges":["2026-12-24/2026-12-26"],"selector":{"env":"prod"}}`, NewWindowApply, NewWindowGet, "freeze"},
	} {
		runCmd(t, addr, k.apply, k.def, "-f", "-").check(t, "apply "+k.name, "", "applied (version ")
		first := runCmd(t, addr, k.get, "", k.name, "-o", "json")
		first.check(t, "get "+k.name, "", `"version"`, `"createdAt"`)
		file := filepath.Join(t.TempDir(), k.name+".json")
		if err := os.WriteFile(file, []byte(first.stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		runCmd(t, addr, k.apply, "", "-f", file).check(t, "apply the get output of "+k.name, "", "applied (version ")
		second := runCmd(t, addr, k.get, "", k.name, "-o", "json")
		var d1, d2 map[string]any
		if err := json.Unmarshal([]byte(first.stdout), &d1); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(second.stdout), &d2); err != nil {
			t.Fatal(err)
		}
		if d2["version"].(float64) <= d1["version"].(float64) {
			t.Errorf("%s: version %v after re-applying version %v, want it to grow", k.name, d2["version"], d1["version"])
		}
		for _, f := range []string{"version", "updatedAt", "updatedBy", "status"} {
			delete(d1, f)
			delete(d2, f)
		}
		if !reflect.DeepEqual(d1, d2) {
			t.Errorf("%s: re-applying its get -o json changed it:\n got %v\nwant %v", k.name, d2, d1)
		}
	}
}

// TestCalendarImport: ax calendar import converts testdata/office.ics
// in the file's zone (or -timezone's) between -from and -to (by default
// from January 1 of the client's year, for two years), prints the
// calendar with -dry-run without writing it, and otherwise writes it,
// keeping an existing calendar's include list.
func TestCalendarImport(t *testing.T) {
	a := agenttest.Start(t, nil)
	addr := a.HTTPAddr()
	clock := func() time.Time { return time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC) }
	importAt := func(io *command.IO) command.Command {
		c := NewCalendarImport(io)
		c.(*calendarImportCmd).now = clock
		return c
	}
	get := func(name string) (*calendar.Calendar, error) {
		var c calendar.Calendar
		r := runCmd(t, addr, NewCalendarGet, "", name, "-o", "json")
		if r.err != nil {
			return nil, r.err
		}
		return &c, json.Unmarshal([]byte(r.stdout), &c)
	}
	const ics = "testdata/office.ics"
	berlin := []string{"2026-05-01", "2026-12-24/2026-12-25", "2027-01-01", "2027-05-01"}
	tests := []struct {
		name     string
		args     []string
		wantErr  string
		tz       string
		exclude  []string
		include  []string // kept from the calendar there before
		dryRun   bool
		existing string // a calendar applied first
	}{
		{name: "dry run", args: []string{"office", ics, "-dry-run"}, tz: "Europe/Berlin", exclude: berlin, dryRun: true},
		{name: "new calendar", args: []string{"office", ics}, tz: "Europe/Berlin", exclude: berlin},
		{name: "-timezone moves the timed event", args: []string{"office-utc", ics, "-timezone", "UTC"}, tz: "UTC",
			exclude: []string{"2026-05-01", "2026-12-24/2026-12-25", "2026-12-31", "2027-05-01"}},
		{name: "-from and -to", args: []string{"office-2027", ics, "-from", "2027-01-01", "-to", "2027-05-01"}, tz: "Europe/Berlin",
			exclude: []string{"2027-01-01"}},
		{name: "keeps the include list", args: []string{"kept", ics}, tz: "Europe/Berlin", exclude: berlin, include: []string{"2026-12-24"},
			existing: `{"name":"kept","timezone":"UTC","exclude":["sat"],"include":["2026-12-24"]}`},
		{name: "dry run keeps the include list too", args: []string{"kept2", ics, "-dry-run"}, tz: "Europe/Berlin", exclude: berlin, include: []string{"2026-12-24"},
			existing: `{"name":"kept2","exclude":["sat"],"include":["2026-12-24"]}`, dryRun: true},
		{name: "not an ics file", args: []string{"x", "testdata/not-ics.csv"}, wantErr: "calendar import: ics: not an iCalendar file"},
		{name: "no such file", args: []string{"x", "testdata/none.ics"}, wantErr: "no such file"},
		{name: "a bad -from", args: []string{"x", ics, "-from", "2026/01/01"}, wantErr: `-from "2026/01/01": want YYYY-MM-DD`},
		{name: "-to before -from", args: []string{"x", ics, "-from", "2027-01-01", "-to", "2026-01-01"}, wantErr: "must be after From"},
		{name: "a bad -timezone", args: []string{"x", ics, "-timezone", "Mars/Olympus"}, wantErr: "-timezone"},
		{name: "a bad name", args: []string{"Bad Name", ics}, wantErr: "calendar import: "},
		{name: "one argument", args: []string{"x"}, wantErr: "want a calendar name and an .ics file"},
	}
	for _, tt := range tests {
		name := tt.args[0]
		if tt.existing != "" {
			runCmd(t, addr, NewCalendarApply, tt.existing, "-f", "-").check(t, tt.name+": apply", "", "applied")
		}
		r := runCmd(t, addr, importAt, "", tt.args...)
		r.check(t, tt.name, tt.wantErr)
		if tt.wantErr != "" {
			continue
		}
		if want := "skipped event \"Offsite\": STATUS:CANCELLED\n"; r.stderr != want {
			t.Errorf("%s: stderr %q, want %q", tt.name, r.stderr, want)
		}
		want := calendar.Calendar{Name: name, Description: "imported from office.ics", Timezone: tt.tz, Exclude: tt.exclude, Include: tt.include}
		if tt.dryRun {
			var got calendar.Calendar
			if err := command.DecodeJSON([]byte(r.stdout), &got); err != nil {
				t.Fatalf("%s: the dry run printed %q: %v", tt.name, r.stdout, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: dry run printed %+v, want %+v", tt.name, got, want)
			}
			stored, err := get(name)
			switch {
			case tt.existing == "" && err == nil:
				t.Errorf("%s: the dry run wrote %+v", tt.name, stored)
			case tt.existing != "" && (err != nil || !reflect.DeepEqual(stored.Exclude, []string{"sat"})):
				t.Errorf("%s: the dry run changed the calendar: %+v, %v", tt.name, stored, err)
			}
			continue
		}
		if line := "calendar " + name + " imported: " + strconv.Itoa(len(tt.exclude)) + " entries from 4 events (1 skipped)\n"; r.stdout != line {
			t.Errorf("%s: printed %q, want %q", tt.name, r.stdout, line)
		}
		stored, err := get(name)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := stored.Definition(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: stored %+v, want %+v", tt.name, got, want)
		}
	}
}
