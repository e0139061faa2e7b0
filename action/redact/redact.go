package redact

import (
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Mask replaces a secret's value in output and errors.
const Mask = "***"

// MinLen is the shortest secret value that is masked: shorter ones
// ("", "a", "no") would mask ordinary text and hide nothing.
const MinLen = 4

// Masker masks secret values in text, like GitHub Actions masks its
// secrets: each value, each of its lines, and its JSON-, URL- and
// Go-quoted forms (as errors quote them) become Mask. A nil
// *Masker masks nothing. It is safe for concurrent use.
type Masker struct {
	words   []string // longest first
	longest int
}

// New returns a Masker of values; nil if none is at least
// MinLen bytes long.
func New(values ...string) *Masker {
	seen := map[string]bool{}
	var words []string
	add := func(w string) {
		if len(w) >= MinLen && !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	for _, v := range values {
		add(v)
		for _, line := range strings.Split(v, "\n") {
			add(strings.TrimSuffix(line, "\r"))
		}
		q := jsonString(v)
		add(q[1 : len(q)-1])
		add(url.QueryEscape(v))
		add(url.PathEscape(v))
		q = strconv.Quote(v)
		add(q[1 : len(q)-1])
	}
	if len(words) == 0 {
		return nil
	}
	slices.SortStableFunc(words, func(a, b string) int { return len(b) - len(a) })
	return &Masker{words: words, longest: len(words[0])}
}

// Secrets returns the Masker of the values of secrets (a Job's
// Secrets, by name).
func Secrets(secrets map[string]string) *Masker {
	values := make([]string, 0, len(secrets))
	for _, v := range secrets {
		values = append(values, v)
	}
	return New(values...)
}

// Redact returns s with every secret value masked.
func (r *Masker) Redact(s string) string {
	if r == nil {
		return s
	}
	out, _ := r.scan(s, len(s))
	return out
}

// scan masks the matches in s that start before stop and returns the
// masked text up to the end of the last of them or stop, whichever is
// later, and how much of s that covers. At each position the longest
// word that matches wins.
func (r *Masker) scan(s string, stop int) (string, int) {
	next := make([]int, len(r.words)) // where each word next occurs, from i
	for k, w := range r.words {
		next[k] = index(s, w, 0)
	}
	var b strings.Builder
	i := 0
	for {
		at, k := -1, -1
		for j, w := range r.words {
			if next[j] >= 0 && next[j] < i {
				next[j] = index(s, w, i)
			}
			if next[j] >= 0 && (at < 0 || next[j] < at) {
				at, k = next[j], j
			}
		}
		if at < 0 || at >= stop {
			break
		}
		b.WriteString(s[i:at])
		b.WriteString(Mask)
		i = at + len(r.words[k])
	}
	end := max(i, stop)
	b.WriteString(s[i:end])
	return b.String(), end
}

// index is strings.Index of w in s from i, as an index of s; -1 if none.
func index(s, w string, from int) int {
	j := strings.Index(s[from:], w)
	if j < 0 {
		return -1
	}
	return from + j
}

// Writer returns a writer that writes to w what is written to it, masked.
// It holds back the last bytes of what it was given, as long as the
// longest word less one, until more comes or Flush, so that a value split
// across two writes is masked too. Not safe for concurrent use.
func (r *Masker) Writer(w io.Writer) *Writer {
	return &Writer{r: r, w: w}
}

// Writer is the streaming writer of a Masker.
type Writer struct {
	r    *Masker
	w    io.Writer
	held []byte
}

// Write masks and writes p, but for a tail it holds back; it reports
// len(p) unless the underlying writer fails.
func (rw *Writer) Write(p []byte) (int, error) {
	if rw.r == nil {
		return rw.w.Write(p)
	}
	rw.held = append(rw.held, p...)
	stop := len(rw.held) - (rw.r.longest - 1)
	if stop <= 0 {
		return len(p), nil
	}
	out, n := rw.r.scan(string(rw.held), stop)
	rw.held = append(rw.held[:0], rw.held[n:]...)
	if _, err := io.WriteString(rw.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush masks and writes what is held back.
func (rw *Writer) Flush() error {
	if len(rw.held) == 0 {
		return nil
	}
	out := rw.r.Redact(string(rw.held))
	rw.held = rw.held[:0]
	_, err := io.WriteString(rw.w, out)
	return err
}

// jsonString is v as a JSON string literal (<, > and & escaped too).
func jsonString(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}
