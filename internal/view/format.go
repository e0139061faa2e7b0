package view

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// newTable returns the aligned writer of every table; the caller
// flushes it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// row writes one tab-separated table row.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	fmt.Fprintln(w)
}

// fmtTime is t in UTC to the second, "-" for the zero time.
func fmtTime(t model.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// age is how long ago t was ("3h12m"), or "in 5m" for a time to come;
// "-" for the zero time.
func age(t model.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if d := t.Sub(now); d > 0 {
		return "in " + Human(d)
	}
	return Human(now.Sub(t.Time))
}

// ago is age with "ago" after a past time: "3h12m ago", "in 5m".
func ago(t model.Time, now time.Time) string {
	a := age(t, now)
	if a == "-" || strings.HasPrefix(a, "in ") {
		return a
	}
	return a + " ago"
}

// Human is d in at most two units, as people read a duration: 350ms,
// 12s, 3m12s, 3h12m, 2d3h.
func Human(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	d = d.Round(time.Hour)
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Ellipsis cuts s to n runes on one line, marking a cut with "...".
func Ellipsis(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

// indent writes through to w with every line led by two spaces.
func indent(w io.Writer) io.Writer { return &indentWriter{w: w, bol: true} }

type indentWriter struct {
	w   io.Writer
	bol bool
}

func (iw *indentWriter) Write(b []byte) (int, error) {
	var out []byte
	for _, c := range b {
		if iw.bol {
			out = append(out, ' ', ' ')
		}
		out = append(out, c)
		iw.bol = c == '\n'
	}
	if _, err := iw.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// joinLabels is a label set as k=v pairs, sorted, comma-separated.
func joinLabels(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
