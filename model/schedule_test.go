package model

import (
	"testing"
	"time"
)

func TestFireKeys(t *testing.T) {
	at := time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC)
	for _, tc := range []struct{ tmpl, tz, want string }{
		{"", "", "daily@2026-11-30T23:30:00.000Z"},
		{"{{.Task}}:{{.Date}}", "Asia/Shanghai", "daily:2026-12-01"},
		{"{{.Task}}:{{.Yesterday}}", "", "daily:2026-11-29"},
		// Stored before apply-time checks: a template that cannot expand
		// falls back to the default key, never to a constant like
		// "<no value>" that would merge every fire into one instance.
		{"{{.Nope}}", "", "daily@2026-11-30T23:30:00.000Z"},
		{"{{.Task.Name}}", "", "daily@2026-11-30T23:30:00.000Z"},
	} {
		task := &Task{Name: "daily", Trigger: Trigger{Timezone: tc.tz}, Policy: Policy{IdempotencyKey: tc.tmpl}}
		if got := task.FireKeys().Key(at); got != tc.want {
			t.Errorf("key %q (tz %q): got %q, want %q", tc.tmpl, tc.tz, got, tc.want)
		}
	}
}
