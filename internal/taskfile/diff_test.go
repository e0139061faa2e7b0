package taskfile

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	num := func(from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprint(i))
		}
		return out
	}
	with := func(l []string, i int, v string) []string {
		c := append([]string(nil), l...)
		c[i] = v
		return c
	}
	tests := []struct {
		name string
		a, b []string
		want string // lines after the --- and +++ header, joined by \n; "" for no diff
	}{
		{"equal", num(1, 5), num(1, 5), ""},
		{"both empty", nil, nil, ""},
		{"one line changed in the middle", num(1, 10), with(num(1, 10), 4, "five"),
			"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8"},
		{"first line changed", num(1, 5), with(num(1, 5), 0, "one"),
			"@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4"},
		{"line added at the end", num(1, 3), num(1, 4),
			"@@ -1,3 +1,4 @@\n 1\n 2\n 3\n+4"},
		{"line removed at the start", num(1, 5), num(2, 5),
			"@@ -1,4 +1,3 @@\n-1\n 2\n 3\n 4"},
		{"from nothing", nil, []string{"a", "b"},
			"@@ -0,0 +1,2 @@\n+a\n+b"},
		{"to nothing", []string{"a"}, nil,
			"@@ -1 +0,0 @@\n-a"},
		{"two changes close together make one hunk", num(1, 12), with(with(num(1, 12), 2, "x"), 8, "y"),
			"@@ -1,12 +1,12 @@\n 1\n 2\n-3\n+x\n 4\n 5\n 6\n 7\n 8\n-9\n+y\n 10\n 11\n 12"},
		{"two changes far apart make two hunks", num(1, 20), with(with(num(1, 20), 1, "x"), 17, "y"),
			"@@ -1,5 +1,5 @@\n 1\n-2\n+x\n 3\n 4\n 5\n@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+y\n 19\n 20"},
		{"six unchanged lines between changes: one hunk", num(1, 12), with(with(num(1, 12), 1, "x"), 8, "y"),
			"@@ -1,12 +1,12 @@\n 1\n-2\n+x\n 3\n 4\n 5\n 6\n 7\n 8\n-9\n+y\n 10\n 11\n 12"},
		{"seven unchanged lines between changes: two hunks", num(1, 13), with(with(num(1, 13), 1, "x"), 9, "y"),
			"@@ -1,5 +1,5 @@\n 1\n-2\n+x\n 3\n 4\n 5\n@@ -7,7 +7,7 @@\n 7\n 8\n 9\n-10\n+y\n 11\n 12\n 13"},
		{"an insertion inside keeps the common lines", []string{"a", "b", "c"}, []string{"a", "x", "b", "c"},
			"@@ -1,3 +1,4 @@\n a\n+x\n b\n c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := unifiedDiff("old", "new", tt.a, tt.b)
			if tt.want == "" {
				if got != nil {
					t.Fatalf("got %q, want no diff", got)
				}
				return
			}
			if len(got) < 2 || got[0] != "--- old" || got[1] != "+++ new" {
				t.Fatalf("header %q", got)
			}
			if body := strings.Join(got[2:], "\n"); body != tt.want {
				t.Errorf("got\n%s\nwant\n%s", body, tt.want)
			}
		})
	}
}

// TestUnifiedDiff_Applies checks on many edits that every hunk's counts
// match its lines and that applying the diff to a gives b.
func TestUnifiedDiff_Applies(t *testing.T) {
	t.Parallel()
	base := strings.Split("a b c d e f g h i j k l m n o p q r s t", " ")
	for seed := 0; seed < 200; seed++ {
		b := append([]string(nil), base...)
		// A deterministic scramble: drop, change and insert lines.
		for k := 0; k < 1+seed%5; k++ {
			i := (seed*7 + k*13) % (len(b) + 1)
			switch (seed + k) % 3 {
			case 0:
				if i < len(b) {
					b = append(b[:i], b[i+1:]...)
				}
			case 1:
				if i < len(b) {
					b[i] = b[i] + "'"
				}
			default:
				b = append(b[:i], append([]string{fmt.Sprint(seed)}, b[i:]...)...)
			}
		}
		d := unifiedDiff("a", "b", base, b)
		if got := patch(t, base, d); strings.Join(got, " ") != strings.Join(b, " ") {
			t.Fatalf("seed %d: patched\n%v\nwant\n%v\ndiff:\n%s", seed, got, b, strings.Join(d, "\n"))
		}
	}
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)

// patch applies a unified diff made by unifiedDiff, checking its counts.
func patch(t *testing.T, a, diff []string) []string {
	t.Helper()
	if diff == nil {
		return a
	}
	var out []string
	next := 0 // the next line of a not yet copied
	for i := 2; i < len(diff); {
		m := hunkHeader.FindStringSubmatch(diff[i])
		if m == nil {
			t.Fatalf("bad hunk header %q", diff[i])
		}
		count := func(s string) int {
			if s == "" {
				return 1
			}
			n, _ := strconv.Atoi(s)
			return n
		}
		as, _ := strconv.Atoi(m[1])
		al, bl := count(m[2]), count(m[4])
		start := as - 1
		if al == 0 {
			start = as
		}
		out = append(out, a[next:start]...)
		next = start
		i++
		gotA, gotB := 0, 0
		for ; i < len(diff) && !strings.HasPrefix(diff[i], "@@"); i++ {
			switch l := diff[i]; l[0] {
			case ' ':
				if a[next] != l[1:] {
					t.Fatalf("context %q does not match line %d %q", l, next+1, a[next])
				}
				out = append(out, l[1:])
				next++
				gotA++
				gotB++
			case '-':
				if a[next] != l[1:] {
					t.Fatalf("removal %q does not match line %d %q", l, next+1, a[next])
				}
				next++
				gotA++
			case '+':
				out = append(out, l[1:])
				gotB++
			}
		}
		if gotA != al || gotB != bl {
			t.Fatalf("hunk counts -%d +%d, lines -%d +%d", al, bl, gotA, gotB)
		}
	}
	return append(out, a[next:]...)
}
