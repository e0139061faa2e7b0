package trigger

import (
	"fmt"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // fallback zone database, so every node knows every IANA zone

	"github.com/robfig/cron/v3"
)

// fieldNames names the six cron fields, seconds first, in error messages.
var fieldNames = [6]string{"second", "minute", "hour", "day-of-month", "month", "day-of-week"}

// ParseCron parses a cron expression evaluated in the given IANA timezone
// ("UTC" when timezone is empty).
//
// The expression has 5 fields (minute hour day-of-month month day-of-week)
// or 6 with seconds first, in the syntax of github.com/robfig/cron/v3:
// numbers, ranges "a-b", steps "*/n" and "a-b/n", lists "a,b", "*" and "?",
// month and weekday names (jan, mon), Sunday = 0, and Quartz's day
// extensions L, L-n, nW and LW (day-of-month), xL and x#n (day-of-week;
// quartz.go). When both day-of-month and
// day-of-week are restricted (neither contains "*", "?" or "*/1"; "*/2"
// counts as restricted), a day matches if either matches, as in robfig/cron
// and Vixie cron; otherwise both must match. The descriptors @yearly (@annually),
// @monthly, @weekly, @daily (@midnight) and @hourly are accepted, and so is
// "@every <duration>" with a whole number of seconds, at least 1s; @every
// fires at the multiples of the duration since the Unix epoch, so every
// leader computes the same fire times whenever it starts.
//
// The timezone is a separate field: TZ= and CRON_TZ= prefixes in the
// expression are rejected, and so is "Local", which differs between nodes.
// Fire times are returned in the schedule's timezone and follow the DST
// rule in the package documentation.
//
// Errors are *Error values with Field FieldExpression or FieldTimezone; for a
// bad cron field the message names it, e.g.
// `minute field "61": end of range (61) above maximum (59)`.
func ParseCron(expr, timezone string) (Schedule, error) {
	e := strings.TrimSpace(expr)
	switch {
	case e == "":
		return nil, exprError("empty expression")
	case strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ="):
		return nil, exprError("TZ= and CRON_TZ= prefixes are not allowed; set the timezone field instead")
	}
	loc, err := loadLocation(timezone)
	// Expression errors are reported before timezone errors.
	if strings.HasPrefix(e, "@every") {
		sched, everyErr := parseEvery(e)
		if everyErr != nil {
			return nil, everyErr
		}
		if err != nil {
			return nil, err
		}
		sched.loc = loc
		return sched, nil
	}
	spec, rules, specErr := parseSpec(e)
	if specErr != nil {
		return nil, specErr
	}
	if err != nil {
		return nil, err
	}
	cs := newCronSchedule(spec, loc)
	rules.apply(cs)
	return cs, nil
}

// Zone is the location of an IANA timezone name ("" meaning UTC), from
// the cache this package's schedules share; an unknown name or "Local"
// is an *Error naming the timezone field.
func Zone(name string) (*time.Location, error) { return loadLocation(name) }

// loadLocation resolves an IANA timezone name, "" meaning UTC.
func loadLocation(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if name == "Local" {
		return nil, &Error{Field: FieldTimezone, Message: `"Local" is not allowed; use an IANA name such as "Europe/Berlin"`}
	}
	if loc, ok := locations.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, &Error{Field: FieldTimezone, Message: fmt.Sprintf("unknown timezone %q", name)}
	}
	locations.Store(name, loc)
	return loc, nil
}

// locations caches the timezones loaded so far by name: time.LoadLocation
// reads the zone file on every call, which dominated parsing a thousand
// schedules (GET /v1/upcoming). Only valid names are kept, so it is
// bounded by the tz database; a zone file changed on disk is seen after a
// restart.
var locations sync.Map

func exprError(format string, args ...any) *Error {
	return &Error{Field: FieldExpression, Message: fmt.Sprintf(format, args...)}
}

// parseEvery parses "@every <duration>"; the caller sets the location.
func parseEvery(e string) (*every, error) {
	arg := strings.TrimSpace(strings.TrimPrefix(e, "@every"))
	if arg == "" {
		return nil, exprError(`@every needs a duration, e.g. "@every 5m"`)
	}
	if !strings.HasPrefix(e, "@every ") && !strings.HasPrefix(e, "@every\t") {
		return nil, exprError("unknown descriptor %q", e)
	}
	d, err := time.ParseDuration(arg)
	if err != nil {
		return nil, exprError("@every duration %q is not a Go duration such as 90s, 5m or 1h30m", arg)
	}
	if d < time.Second {
		return nil, exprError("@every duration %s is below the minimum of 1s", d)
	}
	if d%time.Second != 0 {
		return nil, exprError("@every duration %s is not a whole number of seconds", d)
	}
	return &every{sec: int64(d / time.Second)}, nil
}

// parseSpec parses a descriptor or a 5/6-field expression with robfig/cron
// and, when robfig rejects it, finds the offending field.
func parseSpec(e string) (*cron.SpecSchedule, quartzRules, error) {
	p := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	var q quartzRules
	if strings.HasPrefix(e, "@") {
		s, err := p.Parse(e)
		if err != nil {
			return nil, q, exprError("unknown descriptor %q", e)
		}
		spec, ok := s.(*cron.SpecSchedule)
		if !ok {
			return nil, q, exprError("unknown descriptor %q", e)
		}
		return spec, q, nil
	}

	fields := strings.Fields(e)
	switch len(fields) {
	case 5:
		fields = append([]string{"0"}, fields...)
	case 6:
	default:
		return nil, q, exprError("expected 5 or 6 fields, got %d", len(fields))
	}
	// Quartz's L, W and # items go to rules; robfig parses the rest ("*"
	// standing for a field of rules only, which apply then clears).
	plain := append([]string(nil), fields...)
	for _, i := range []int{3, 5} {
		rest, rules, err := splitDayRules(i, fields[i])
		if err != nil {
			return nil, q, err
		}
		if len(rules) > 0 {
			q.set(i, rules, rest == "")
			if rest == "" {
				rest = "*"
			}
			plain[i] = rest
		}
	}
	s, err := p.Parse(strings.Join(plain, " "))
	if err != nil {
		return nil, q, diagnose(p, plain, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, q, exprError("unsupported expression %q", e)
	}
	masks := [6]uint64{spec.Second, spec.Minute, spec.Hour, spec.Dom, spec.Month, spec.Dow}
	for i, m := range masks {
		if m&^starBit == 0 {
			return nil, q, exprError("%s field %q: no values", fieldNames[i], fields[i])
		}
	}
	return spec, q, nil
}

// quartzRules are the Quartz items of the two day fields, and whether a
// field held nothing else.
type quartzRules struct {
	dom, dow         []dayRule
	domOnly, dowOnly bool
}

func (q *quartzRules) set(i int, rules []dayRule, only bool) {
	if i == 3 {
		q.dom, q.domOnly = rules, only
	} else {
		q.dow, q.dowOnly = rules, only
	}
}

// apply adds the rules to s: a day field with rules is restricted (not
// "*"), and one of rules only matches by its rules alone.
func (q quartzRules) apply(s *cronSchedule) {
	if len(q.dom) > 0 {
		s.domRules, s.domStar = q.dom, false
		if q.domOnly {
			s.dom = 0
		}
	}
	if len(q.dow) > 0 {
		s.dowRules, s.dowStar = q.dow, false
		if q.dowOnly {
			s.dow = 0
		}
	}
}

// diagnose finds the first field, left to right, that robfig rejects by
// parsing each comma-separated range of each field on its own, with "*" in
// the other fields. robfig's own errors do not name the field.
func diagnose(p cron.Parser, fields []string, whole error) error {
	for i, f := range fields {
		for _, r := range strings.Split(f, ",") {
			if r == "" {
				continue
			}
			probe := []string{"0", "*", "*", "*", "*", "*"}
			probe[i] = r
			if _, err := p.Parse(strings.Join(probe, " ")); err != nil {
				return exprError("%s field %q: %s", fieldNames[i], f, cleanRangeError(err.Error(), r))
			}
		}
	}
	return exprError("%s", whole.Error())
}

// cleanRangeError drops the range (or the part of it) that robfig appends
// to its messages and rewrites its number-parsing errors.
func cleanRangeError(msg, r string) string {
	if i := strings.LastIndex(msg, ": "); i >= 0 && msg[i+2:] != "" && strings.Contains(r, msg[i+2:]) {
		msg = msg[:i]
	}
	if rest, ok := strings.CutPrefix(msg, "failed to parse int from "); ok {
		tok, _, _ := strings.Cut(rest, ": ")
		if tok == "" {
			return "missing number"
		}
		return fmt.Sprintf("invalid value %q", tok)
	}
	return msg
}
