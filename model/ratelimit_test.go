package model_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// wantFieldError fails t unless err is an error on field ("": no error).
func wantFieldError(t *testing.T, err error, field string) {
	t.Helper()
	var me *model.Error
	switch {
	case field == "" && err != nil:
		t.Fatalf("refused: %v", err)
	case field != "" && (!errors.As(err, &me) || me.Field != field):
		t.Fatalf("got %v, want an error on %s", err, field)
	}
}

func TestRateLimit_Validate(t *testing.T) {
	rl := func(c int, per time.Duration, burst int, on string) *model.RateLimit {
		return &model.RateLimit{Count: c, Per: model.Duration(per), Burst: burst, OnLimit: on}
	}
	tests := []struct {
		name  string
		l     *model.RateLimit
		field string
	}{
		{"ok", rl(2, 2*time.Second, 0, ""), ""},
		{"ok all set", rl(100, time.Minute, 10, "skip"), ""},
		{"count zero", rl(0, time.Minute, 0, ""), "policy.rateLimit.count"},
		{"count too big", rl(model.MaxRateCount+1, time.Minute, 0, ""), "policy.rateLimit.count"},
		{"count above one per ms", rl(1001, time.Second, 0, ""), "policy.rateLimit.count"},
		{"per missing", rl(1, 0, 0, ""), "policy.rateLimit.per"},
		{"per too short", rl(1, 999*time.Millisecond, 0, ""), "policy.rateLimit.per"},
		{"per too long", rl(1, 8*24*time.Hour, 0, ""), "policy.rateLimit.per"},
		{"per not whole ms", rl(1, time.Second+time.Microsecond, 0, ""), "policy.rateLimit.per"},
		{"burst above count", rl(2, time.Minute, 3, ""), "policy.rateLimit.burst"},
		{"burst negative", rl(2, time.Minute, -1, ""), "policy.rateLimit.burst"},
		{"onLimit unknown", rl(2, time.Minute, 0, "drop"), "policy.rateLimit.onLimit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := baseTask()
			task.Policy.RateLimit = tt.l
			wantFieldError(t, task.Validate(), tt.field)
			p := model.Pool{Name: "p", Slots: 1, RateLimit: tt.l}
			if tt.field != "" {
				wantFieldError(t, p.Validate(), "rateLimit"+tt.field[len("policy.rateLimit"):])
			}
		})
	}
	// The interval rounds up: 3 per second never lets 4 into a second.
	if got := rl(3, time.Second, 0, "").Interval(); got != 334 {
		t.Fatalf("interval of 3/s = %d ms, want 334", got)
	}
	if got := rl(4, 2*time.Second, 3, "").Tolerance(); got != 1000 {
		t.Fatalf("tolerance of 4/2s burst 3 = %d ms, want 1000", got)
	}
}
