package taskfile

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// maxDiffCells bounds the line-matching table of unifiedDiff; beyond it
// the whole text is shown as replaced.
const maxDiffCells = 4 << 20

// unifiedDiff returns the unified diff of two texts (lines without their
// newlines) under the header lines "--- from" and "+++ to", or nil when
// they are equal. Lines are matched by a longest common subsequence, which
// is exact and quick enough for task definitions (tens of lines).
func unifiedDiff(from, to string, a, b []string) []string {
	ops := diffOps(a, b)
	changed := false
	for _, o := range ops {
		if o.kind != ' ' {
			changed = true
			break
		}
	}
	if !changed {
		return nil
	}
	out := []string{"--- " + from, "+++ " + to}
	// Hunks: runs of ops around changes, joined when their contexts meet.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-diffContext, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end = run
		}
		aStart, bStart := ops[start].ai, ops[start].bi
		var aLen, bLen int
		var body []string
		for _, o := range ops[start:end] {
			switch o.kind {
			case ' ':
				aLen++
				bLen++
				body = append(body, " "+a[o.ai])
			case '-':
				aLen++
				body = append(body, "-"+a[o.ai])
			case '+':
				bLen++
				body = append(body, "+"+b[o.bi])
			}
		}
		out = append(out, fmt.Sprintf("@@ -%s +%s @@", hunkRange(aStart, aLen), hunkRange(bStart, bLen)))
		out = append(out, body...)
		i = end
	}
	return out
}

// hunkRange formats a hunk's range as unified diffs do: the first line
// (1-based; the line before for an empty range) and the count.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// diffOp is one line of an edit script: kept (' '), removed from a ('-')
// or added from b ('+'); ai and bi are the positions in a and b where it
// stands.
type diffOp struct {
	kind   byte
	ai, bi int
}

// diffOps returns an edit script from a to b that keeps a longest common
// subsequence of lines, removals before additions in each change.
func diffOps(a, b []string) []diffOp {
	// Common prefix and suffix need no table.
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	var ops []diffOp
	for i := 0; i < p; i++ {
		ops = append(ops, diffOp{' ', i, i})
	}
	am, bm := a[p:len(a)-s], b[p:len(b)-s]
	n, m := len(am), len(bm)
	if (n+1)*(m+1) > maxDiffCells {
		for i := range am {
			ops = append(ops, diffOp{'-', p + i, p})
		}
		for j := range bm {
			ops = append(ops, diffOp{'+', p + n, p + j})
		}
	} else {
		// lcs[i][j] is the LCS length of am[i:] and bm[j:].
		lcs := make([][]int, n+1)
		for i := range lcs {
			lcs[i] = make([]int, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if am[i] == bm[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && am[i] == bm[j]:
				ops = append(ops, diffOp{' ', p + i, p + j})
				i++
				j++
			case j == m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', p + i, p + j})
				i++
			default:
				ops = append(ops, diffOp{'+', p + i, p + j})
				j++
			}
		}
	}
	for k := 0; k < s; k++ {
		ops = append(ops, diffOp{' ', len(a) - s + k, len(b) - s + k})
	}
	return ops
}

// lines splits a text into lines without their newlines.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
