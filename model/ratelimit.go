package model

import "time"

// RateLimit bounds how often instances start (policy.rateLimit of a
// task, rateLimit of a pool; protocol 8): at most Count starts per Per,
// spaced evenly (one every Per/Count, rounded up to the millisecond), as
// a generic cell rate algorithm (GCRA) keeps them; Burst (default 1, at
// most Count) lets that many start at once after an idle spell, so that
// any window of length Per holds at most Count+Burst-1 starts. A start
// is an instance becoming READY (a retry is not one); an instance beyond
// the limit waits BLOCKED (OnLimit "wait", the default), holding the
// slots it took, until its turn, or is SKIPPED ("skip").
type RateLimit struct {
	Count   int      `json:"count"`
	Per     Duration `json:"per"`
	Burst   int      `json:"burst,omitempty"`
	OnLimit string   `json:"onLimit,omitempty"`
}

// Rate limit bounds: Count at most MaxRateCount, Per within
// [MinRatePer, MaxRatePer].
const (
	MaxRateCount = 100_000
	MinRatePer   = Duration(time.Second)
	MaxRatePer   = Duration(7 * 24 * time.Hour)
)

// Interval is the time between two starts (ms, at least 1).
func (l *RateLimit) Interval() int64 {
	per := l.Per.Std().Milliseconds()
	return max((per+int64(l.Count)-1)/int64(max(l.Count, 1)), 1)
}

// Tolerance is how much earlier than its turn a start may come (ms): the
// burst's allowance.
func (l *RateLimit) Tolerance() int64 { return int64(max(l.Burst, 1)-1) * l.Interval() }

// Skips reports whether an instance beyond the limit is SKIPPED.
func (l *RateLimit) Skips() bool { return l.OnLimit == "skip" }

func (l *RateLimit) validate(field string) error {
	switch {
	case l == nil:
		return nil
	case l.Count < 1 || l.Count > MaxRateCount:
		return FieldErrorf(field+".count", "must be between 1 and %d, got %d", MaxRateCount, l.Count)
	case l.Per < MinRatePer || l.Per > MaxRatePer:
		return FieldErrorf(field+".per", "must be between %s and %s, got %s", MinRatePer.Std(), MaxRatePer.Std(), l.Per.Std())
	case l.Per.Std()%time.Millisecond != 0:
		return FieldErrorf(field+".per", "must be whole milliseconds, got %s", l.Per.Std())
	case int64(l.Count) > l.Per.Std().Milliseconds():
		return FieldErrorf(field+".count", "at most one start per millisecond: %d per %s is more", l.Count, l.Per.Std())
	case l.Burst < 0 || l.Burst > l.Count:
		return FieldErrorf(field+".burst", "must be between 1 and count (%d), got %d", l.Count, l.Burst)
	case !oneOf(l.OnLimit, "", "wait", "skip"):
		return FieldErrorf(field+".onLimit", "unknown onLimit %q: use wait or skip", l.OnLimit)
	}
	return nil
}
