package trigger

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// randomField returns a random cron field for values in [lo, hi].
func randomField(r *rand.Rand, lo, hi int, names []string) string {
	n := func() int { return lo + r.IntN(hi-lo+1) }
	switch r.IntN(10) {
	case 0:
		return "*"
	case 1:
		return "?"
	case 2:
		return fmt.Sprint(n())
	case 3:
		a, b := n(), n()
		if a > b {
			a, b = b, a
		}
		return fmt.Sprintf("%d-%d", a, b)
	case 4:
		return fmt.Sprintf("*/%d", 1+r.IntN(hi-lo+1))
	case 5:
		a, b := n(), n()
		if a > b {
			a, b = b, a
		}
		return fmt.Sprintf("%d-%d/%d", a, b, 1+r.IntN(5))
	case 6:
		return fmt.Sprintf("%d/%d", n(), 1+r.IntN(10))
	case 7:
		if names != nil {
			return names[r.IntN(len(names))]
		}
		return fmt.Sprint(n())
	default:
		parts := make([]string, 1+r.IntN(3))
		for i := range parts {
			parts[i] = fmt.Sprint(n())
		}
		return strings.Join(parts, ",")
	}
}

// randomExpr returns a random 5- or 6-field expression robfig accepts.
func randomExpr(r *rand.Rand) string {
	fields := []string{
		randomField(r, 0, 59, nil),
		randomField(r, 0, 59, nil),
		randomField(r, 0, 23, nil),
		randomField(r, 1, 31, nil),
		randomField(r, 1, 12, []string{"jan", "feb", "FEB", "jun", "dec"}),
		randomField(r, 0, 6, []string{"sun", "mon", "fri", "SAT"}),
	}
	if r.IntN(3) == 0 {
		// Make rare and impossible dates common: February, day 29-31.
		fields[4] = "2"
		fields[3] = fmt.Sprint(29 + r.IntN(3))
	}
	if r.IntN(2) == 0 {
		fields = fields[1:]
	}
	return strings.Join(fields, " ")
}

// TestCron_NextMatchesRobfigInUTC checks that, where there is no DST,
// cronSchedule.Next equals robfig/cron's SpecSchedule.Next.
func TestCron_NextMatchesRobfigInUTC(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	lo := mustTime(t, "1995-01-01T00:00:00Z").Unix()
	hi := mustTime(t, "2060-01-01T00:00:00Z").Unix()
	exprs := []string{"@yearly", "@monthly", "@weekly", "@daily", "@hourly"}
	for range 600 {
		exprs = append(exprs, randomExpr(r))
	}
	for _, expr := range exprs {
		ours, err := ParseCron(expr, "UTC")
		if err != nil {
			t.Fatalf("ParseCron(%q): %v", expr, err)
		}
		theirs, err := p.Parse(expr)
		if err != nil {
			t.Fatalf("robfig Parse(%q): %v", expr, err)
		}
		ref := theirs.(*cron.SpecSchedule)
		ref.Location = time.UTC
		after := time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9)).UTC()
		for range 8 {
			got, want := ours.Next(after), ref.Next(after)
			if !got.Equal(want) {
				t.Fatalf("%q after %v: got %v, want %v", expr, after, got, want)
			}
			if want.IsZero() {
				break
			}
			after = want
			if r.IntN(3) == 0 {
				after = after.Add(time.Duration(r.Int64N(int64(40 * 24 * time.Hour))))
			}
		}
	}
}

// TestCron_NextBruteForceDST checks the DST rule against a brute-force
// reference around real transitions: an instant fires when its wall clock
// matches the expression and no earlier instant had the same wall clock.
func TestCron_NextBruteForceDST(t *testing.T) {
	zones := []struct {
		tz   string
		from string // transitions are searched from here
		n    int    // number of transitions
	}{
		{"America/New_York", "2025-01-01T00:00:00Z", 2},
		{"Europe/Berlin", "2025-01-01T00:00:00Z", 2},
		{"Australia/Sydney", "2025-01-01T00:00:00Z", 2},
		{"Australia/Lord_Howe", "2025-01-01T00:00:00Z", 2},
		{"America/Sao_Paulo", "2018-06-01T00:00:00Z", 2},
		{"America/St_Johns", "2025-01-01T00:00:00Z", 2},
		{"Pacific/Apia", "2011-12-01T00:00:00Z", 1},
	}
	minuteExprs := []string{"* * * * *", "0 * * * *", "30 2 * * *", "30 1 * * *", "0 0 * * *", "59 23 * * *",
		"*/7 1-3 * * *", "15,45 0-4 * * *", "0 */2 * * *", "*/30 * * * *"}
	secondExprs := []string{"*/20 * * * * *", "0 */30 * * * *", "59 59 * * * *"}
	for _, z := range zones {
		loc, err := time.LoadLocation(z.tz)
		if err != nil {
			t.Fatal(err)
		}
		tr := mustTime(t, z.from).In(loc)
		for range z.n {
			_, end := tr.ZoneBounds()
			tr = end
			t.Run(z.tz+"/"+tr.UTC().Format(time.RFC3339), func(t *testing.T) {
				for _, expr := range minuteExprs {
					bruteCompare(t, expr, loc, tr.Add(-26*time.Hour), tr.Add(26*time.Hour), time.Minute)
				}
				for _, expr := range secondExprs {
					bruteCompare(t, expr, loc, tr.Add(-2*time.Hour), tr.Add(2*time.Hour), time.Second)
				}
			})
		}
	}
}

func bruteCompare(t *testing.T, expr string, loc *time.Location, from, to time.Time, step time.Duration) {
	t.Helper()
	p := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	ps, err := p.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	spec := ps.(*cron.SpecSchedule)
	var want []time.Time
	seen := map[civil]bool{}
	for u := from; !u.After(to); u = u.Add(step) {
		w := civilOf(u.In(loc))
		first := !seen[w]
		seen[w] = true
		if u.After(from) && first && wallMatches(spec, u.In(loc)) {
			want = append(want, u.In(loc))
		}
	}
	s := mustParseCron(t, expr, loc.String())
	got := Between(s, from, to, 1<<20)
	if g, w := format(got), format(want); strings.Join(g, " ") != strings.Join(w, " ") {
		t.Errorf("%q in %s: got %d fire times %q, want %d %q", expr, loc, len(g), g, len(w), w)
	}
}

// wallMatches is an independent matcher over robfig's bit masks.
func wallMatches(s *cron.SpecSchedule, t time.Time) bool {
	has := func(mask uint64, v int) bool { return mask&(1<<uint(v)) != 0 }
	dom, dow := has(s.Dom, t.Day()), has(s.Dow, int(t.Weekday()))
	day := dom || dow
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		day = dom && dow
	}
	return day && has(s.Second, t.Second()) && has(s.Minute, t.Minute()) &&
		has(s.Hour, t.Hour()) && has(s.Month, int(t.Month()))
}
