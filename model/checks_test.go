package model

import (
	"archive/zip"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every zone of Go's zone database has the form validZoneName accepts, so
// the state machine refuses no task the API accepts.
func TestValidZoneName_GoZones(t *testing.T) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("no go command to find the zone database: %v", err)
	}
	z, err := zip.OpenReader(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Skipf("no zone database: %v", err)
	}
	defer z.Close()
	n := 0
	for _, f := range z.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		n++
		if !validZoneName(f.Name) {
			t.Errorf("zone %q refused", f.Name)
		}
	}
	if n < 300 {
		t.Fatalf("only %d zones read", n)
	}
}

func TestValidZoneName(t *testing.T) {
	for s, want := range map[string]bool{
		"UTC": true, "Europe/Berlin": true, "America/Argentina/Buenos_Aires": true, "Etc/GMT+5": true, "EST5EDT": true,
		"": false, "Local": false, "/etc/passwd": false, "../x": false, "Europe//Berlin": false, "Europe/": false,
		"Europe/Ber lin": false, strings.Repeat("A", 65): false,
	} {
		if got := validZoneName(s); got != want {
			t.Errorf("validZoneName(%q) = %v, want %v", s, got, want)
		}
	}
}

// ValidateStatic neither looks the timezone up nor runs the key template
// (Validate refuses {{.Nope}}, which cannot expand).
func TestTask_ValidateStatic(t *testing.T) {
	base := Task{Name: "t", Trigger: Trigger{Type: TriggerCron, Expression: "@daily"}, Action: Action{Type: ActionShell, Command: "true"}}
	tests := []struct {
		name      string
		modify    func(*Task)
		wantField string // "" for valid
	}{
		{"valid", func(*Task) {}, ""},
		{"a well-formed zone the database lacks", func(t *Task) { t.Trigger.Timezone = "Mars/Olympus_Mons" }, ""},
		{"a malformed zone", func(t *Task) { t.Trigger.Timezone = "Local" }, "trigger.timezone"},
		{"a timezone on an event trigger", func(t *Task) { t.Trigger = Trigger{Type: TriggerEvent, Timezone: "UTC"} }, "trigger.timezone"},
		{"a key template that is not run", func(t *Task) { t.Policy.IdempotencyKey = "{{.Nope}}" }, ""},
		{"a key template that does not parse", func(t *Task) { t.Policy.IdempotencyKey = "{{range}}" }, "policy.idempotencyKey"},
		{"another invalid field", func(t *Task) { t.Policy.MaxRetries = -1 }, "policy.maxRetries"},
		{"a time past year 9999", func(t *Task) {
			at := Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
			t.Trigger = Trigger{Type: TriggerOnce, At: &at}
		}, "trigger.at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tk := base
			tc.modify(&tk)
			start := time.Now()
			err := tk.ValidateStatic()
			if d := time.Since(start); d > time.Second {
				t.Fatalf("took %s", d)
			}
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if e, ok := err.(*Error); !ok || e.Field != tc.wantField {
				t.Fatalf("got %v, want an error on %s", err, tc.wantField)
			}
		})
	}
}

// A key template that renders longer than a bbolt key can hold falls back
// to the default key, so the scheduler never proposes a fire the state
// machine must refuse.
func TestKeyRenderer_LongKeyFallsBack(t *testing.T) {
	name := strings.Repeat("n", 128)
	tk := &Task{Name: name, Policy: Policy{IdempotencyKey: strings.Repeat("{{.Task}}", 300)}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got, want := tk.FireKeys().Key(at), name+"@2026-01-02T03:04:05.000Z"; got != want {
		t.Fatalf("got a key of %d bytes, want the default %q", len(got), want)
	}
	tk.Policy.IdempotencyKey = strings.Repeat("{{.Task}}", 254) // 32512 bytes
	if got := tk.FireKeys().Key(at); len(got) != 254*128 {
		t.Fatalf("got a key of %d bytes, want the rendered %d", len(got), 254*128)
	}
}

// nameRE is the rule validName implements.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)

func FuzzValidName(f *testing.F) {
	for _, s := range []string{"a", "nightly-report.v2", "-a", "A", "a b", "", strings.Repeat("a", 128), strings.Repeat("a", 129), "é", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validName(s), nameRE.MatchString(s); got != want {
			t.Fatalf("validName(%q) = %v, the rule says %v", s, got, want)
		}
	})
}
