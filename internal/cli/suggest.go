package cli

import (
	"fmt"

	"github.com/agext/levenshtein"
)

// Closest is the word of known nearest to name when it is near enough to
// be a typo of it (one edit for a word of up to three letters, two for
// a longer one: a swap of two letters is two), "" otherwise; ties go to
// the first of known.
func Closest(name string, known []string) string {
	best, bestDist := "", 2
	if len(name) > 3 {
		bestDist = 3
	}
	for _, k := range known {
		if d := levenshtein.Distance(name, k, nil); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// DidYouMean is Closest as the end of an error message, "; did you mean
// \"task\"?", or "" when nothing is close.
func DidYouMean(name string, known []string) string {
	if c := Closest(name, known); c != "" {
		return fmt.Sprintf("; did you mean %q?", c)
	}
	return ""
}
