package wheel

import (
	"math"
	"time"
)

// Times cross the API as time.Time and are stored as int64 Unix nanoseconds,
// saturating at the representable range (years 1678 to 2262). Inside the
// wheel they become ticks of one resolution each, and ticks are biased into
// uint64 (sign bit flipped) so that unsigned comparison and the XOR level
// computation keep chronological order across the Unix epoch.

// safeSec bounds the Unix seconds for which time.Time.UnixNano is defined.
const safeSec = math.MaxInt64/int64(time.Second) - 1

// toNanos converts t to Unix nanoseconds, saturating outside the int64 range.
func toNanos(t time.Time) int64 {
	if s := t.Unix(); s > -safeSec && s < safeSec {
		return t.UnixNano()
	}
	return toNanosSlow(t)
}

func toNanosSlow(t time.Time) int64 {
	if t.Before(time.Unix(0, math.MinInt64)) {
		return math.MinInt64
	}
	if t.After(time.Unix(0, math.MaxInt64)) {
		return math.MaxInt64
	}
	return t.UnixNano()
}

// bias maps a signed tick to an unsigned one with the same order.
func bias(t int64) uint64 { return uint64(t) ^ (1 << 63) }

// unbias is the inverse of bias.
func unbias(u uint64) int64 { return int64(u ^ (1 << 63)) }

// floorTick is the last tick boundary at or before the instant n: a wheel
// advanced to n has processed every tick up to and including floorTick(n).
func floorTick(n, res int64) int64 {
	q := n / res
	if n%res < 0 {
		q--
	}
	return q
}

// ceilTick is the first tick boundary at or after the deadline n: the
// rounding-up rule that makes the wheel never fire early.
func ceilTick(n, res int64) int64 {
	q := n / res
	if n%res > 0 {
		q++
	}
	return q
}

// tickNanos is the instant at which tick t starts, saturating to the int64
// nanosecond range like every other time the wheel handles.
func tickNanos(t, res int64) int64 {
	if t > math.MaxInt64/res {
		return math.MaxInt64
	}
	if t < math.MinInt64/res {
		return math.MinInt64
	}
	return t * res
}

// tickTime is the instant at which tick t starts, exactly: the ticks next
// to the ends of the int64 nanosecond range may start just outside it.
// (A deadline in the last nanoseconds before 2262 can round up past the
// end; it then never fires, and Next reports that unreachable time rather
// than one a driver would wake up at forever.)
func tickTime(t, res int64) time.Time {
	hi, lo := math.MaxInt64/res, math.MinInt64/res
	switch {
	case t > hi:
		return time.Unix(0, hi*res).Add(time.Duration(t-hi) * time.Duration(res))
	case t < lo:
		return time.Unix(0, lo*res).Add(time.Duration(t-lo) * time.Duration(res))
	}
	return time.Unix(0, t*res)
}
