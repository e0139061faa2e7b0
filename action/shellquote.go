package action

import (
	"errors"
	"strings"
)

// Quoting of caller values in shell commands.
//
// A shell command template is first executed with every caller value
// (Params, Payload) and secret printed as a marker (see marker.go). quoteShell then
// reads the result the way /bin/sh will, tracking quotes, $(...), comments
// and here-documents, and replaces each marker by the value quoted for
// where it stands:
//
//	echo {{.Params.v}}            single-quoted: echo 'it'\''s'
//	echo "a {{.Params.v}} b"      backslash-escaped: \ $ ` "
//	echo 'a {{.Params.v}} b'      spliced: the quote is closed around '\''
//	# {{.Params.v}}               newlines dropped, so it stays a comment
//
// Places where no quoting is safe are refused: inside `...` (use $(...)),
// inside ${...}, $((...)) or $'...', in a here-document, right after a
// backslash or a $, and after constructs where this reading could differ
// from the shell's (a case statement inside $(...)). There,
// scripts read the value from its environment variable ("$AX_PARAM_V",
// "$AX_PAYLOAD") instead.

type shellFrame struct {
	double bool // inside "..."; otherwise unquoted
	closer byte // unquoted frames: 0 (top level), ')' for $(...), '}' for ${...}
	arith  bool // a $((...)) frame
	depth  int  // unmatched '(' inside a $(...) frame
}

type heredoc struct {
	delim string
	tabs  bool // <<- strips leading tabs
}

type shellQuoter struct {
	src       string
	i         int
	out       strings.Builder
	stack     []shellFrame
	wordStart bool // the next byte starts a word (for '#')
	dollar    bool // the last byte copied was an unescaped '$'
	heredocs  []heredoc
	// lost is set where this reading may part from the shell's: after a
	// case statement inside $(...) (whose pattern's ')' looks like the
	// end of the substitution) or a $'...' string with \' in it (dash
	// and bash end it at different quotes). Values after it are refused.
	lost string
}

// quoteShell replaces the markers in s by their values, quoted for their
// place in the command.
func quoteShell(s string) (string, error) {
	if !strings.Contains(s, "\x00") {
		return s, nil
	}
	q := &shellQuoter{src: s, stack: []shellFrame{{}}, wordStart: true}
	if err := q.run(); err != nil {
		return "", err
	}
	return q.out.String(), nil
}

func (q *shellQuoter) top() *shellFrame { return &q.stack[len(q.stack)-1] }

func (q *shellQuoter) push(f shellFrame) { q.stack = append(q.stack, f) }

func (q *shellQuoter) pop() {
	if len(q.stack) > 1 {
		q.stack = q.stack[:len(q.stack)-1]
	}
}

func (q *shellQuoter) peek(k int) byte {
	if q.i+k < len(q.src) {
		return q.src[q.i+k]
	}
	return 0xff
}

// copy copies n bytes of the source to the output.
func (q *shellQuoter) copy(n int) {
	q.out.WriteString(q.src[q.i : q.i+n])
	q.i += n
}

// marker reads the marker at q.i and returns its value.
func (q *shellQuoter) marker() (string, error) {
	_, v, next, err := readMarker(q.src, q.i)
	if err != nil {
		return "", err
	}
	if strings.IndexByte(v, 0) >= 0 {
		return "", errors.New("a caller value contains a NUL byte")
	}
	q.i = next
	return v, nil
}

func refuse(where, hint string) error {
	return errors.New("a caller value or secret ({{.Params.x}}, {{.Payload}}, {{secret ...}}) cannot be expanded " + where +
		"; " + hint)
}

const envHint = `read it from an environment variable instead ("$AX_PARAM_X", "$AX_PAYLOAD", or an env entry {"fromSecret": "name"})`

func (q *shellQuoter) run() error {
	for q.i < len(q.src) {
		c := q.src[q.i]
		f := q.top()
		if c == 0 {
			if err := q.value(f); err != nil {
				return err
			}
			continue
		}
		dollar := false
		if f.double {
			switch c {
			case '\\':
				if q.peek(1) == 0 {
					return refuse("right after a backslash", "remove the backslash")
				}
				q.copy(min(2, len(q.src)-q.i))
				continue
			case '"':
				q.pop()
			case '`':
				if err := q.backquote(); err != nil {
					return err
				}
				continue
			case '$':
				if q.dollarOpen() {
					q.dollar, q.wordStart = false, true
					continue
				}
				dollar = true
			}
			q.copy(1)
			q.dollar = dollar
			continue
		}
		wordStart := false
		switch c {
		case '\\':
			if q.peek(1) == 0 {
				return refuse("right after a backslash", "remove the backslash")
			}
			q.copy(min(2, len(q.src)-q.i))
			q.dollar, q.wordStart = false, false
			continue
		case '\'':
			if err := q.single(); err != nil {
				return err
			}
			q.dollar, q.wordStart = false, false
			continue
		case '`':
			if err := q.backquote(); err != nil {
				return err
			}
			q.dollar, q.wordStart = false, false
			continue
		case '"':
			q.push(shellFrame{double: true})
		case '#':
			if q.wordStart && f.closer != '}' {
				if err := q.comment(); err != nil {
					return err
				}
				continue
			}
		case '$':
			if q.peek(1) == '\'' {
				if err := q.ansiC(); err != nil {
					return err
				}
				q.dollar, q.wordStart = false, false
				continue
			}
			if q.dollarOpen() {
				q.dollar, q.wordStart = false, true
				continue
			}
			dollar = true
		case 'c':
			if q.wordStart && f.closer == ')' && !f.arith && strings.HasPrefix(q.src[q.i:], "case") &&
				strings.IndexByte(" \t\n", q.peek(4)) >= 0 {
				q.lost = "after a case statement inside $(...)"
			}
		case '(':
			if f.closer == ')' {
				f.depth++
			}
			wordStart = true
		case ')':
			if f.closer == ')' {
				if f.depth == 0 {
					q.pop()
				} else {
					f.depth--
				}
			}
			wordStart = true
		case '}':
			if f.closer == '}' {
				q.pop()
			}
		case '<':
			if q.peek(1) == '<' && q.peek(2) != '<' && !f.arith {
				if err := q.heredocOp(); err != nil {
					return err
				}
				q.dollar, q.wordStart = false, false
				continue
			}
			wordStart = true
		case '\n':
			q.copy(1)
			q.dollar, q.wordStart = false, true
			if err := q.heredocBodies(); err != nil {
				return err
			}
			continue
		case ' ', '\t', ';', '&', '|', '>':
			wordStart = true
		}
		q.copy(1)
		q.dollar, q.wordStart = dollar, wordStart
	}
	return nil
}

// value replaces the marker at q.i, in frame f.
func (q *shellQuoter) value(f *shellFrame) error {
	if q.dollar {
		return refuse("right after a $", "remove the $")
	}
	if q.lost != "" {
		return refuse(q.lost, envHint)
	}
	if !f.double && f.closer == '}' {
		return refuse("inside ${...}", envHint)
	}
	if f.arith {
		return refuse("inside $((...))", envHint+" and check it is a number")
	}
	v, err := q.marker()
	if err != nil {
		return err
	}
	if f.double {
		for i := 0; i < len(v); i++ {
			switch v[i] {
			case '\\', '$', '`', '"':
				q.out.WriteByte('\\')
			}
			q.out.WriteByte(v[i])
		}
	} else {
		q.out.WriteString(singleQuote(v))
	}
	q.dollar, q.wordStart = false, false
	return nil
}

// singleQuote quotes s for an unquoted place in a shell command.
func singleQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// dollarOpen handles "$(", "$((" and "${" at q.i; it reports whether it
// did.
func (q *shellQuoter) dollarOpen() bool {
	switch q.peek(1) {
	case '(':
		if q.peek(2) == '(' {
			q.push(shellFrame{closer: ')', arith: true, depth: 1})
			q.copy(3)
		} else {
			q.push(shellFrame{closer: ')'})
			q.copy(2)
		}
		return true
	case '{':
		q.push(shellFrame{closer: '}'})
		q.copy(2)
		return true
	}
	return false
}

// single copies a '...' string, splicing values into it.
func (q *shellQuoter) single() error {
	q.copy(1)
	for q.i < len(q.src) {
		switch q.src[q.i] {
		case '\'':
			q.copy(1)
			return nil
		case 0:
			v, err := q.marker()
			if err != nil {
				return err
			}
			q.out.WriteString(strings.ReplaceAll(v, "'", `'\''`))
		default:
			q.copy(1)
		}
	}
	return nil
}

// ansiC copies a $'...' string (bash), in which values are refused.
func (q *shellQuoter) ansiC() error {
	q.copy(2)
	for q.i < len(q.src) {
		switch q.src[q.i] {
		case '\'':
			q.copy(1)
			return nil
		case '\\':
			if q.peek(1) == '\'' {
				q.lost = "after a $'...' string with \\' in it"
			}
			if q.peek(1) == 0 {
				return refuse("inside $'...'", envHint)
			}
			q.copy(min(2, len(q.src)-q.i))
		case 0:
			return refuse("inside $'...'", envHint)
		default:
			q.copy(1)
		}
	}
	return nil
}

// backquote copies a `...` command substitution; values can't be quoted
// inside one, since its end is the first unescaped backquote.
func (q *shellQuoter) backquote() error {
	q.copy(1)
	for q.i < len(q.src) {
		switch q.src[q.i] {
		case '`':
			q.copy(1)
			return nil
		case '\\':
			if q.peek(1) == 0 {
				return refuse("inside `...`", "use $(...) instead")
			}
			q.copy(min(2, len(q.src)-q.i))
		case 0:
			return refuse("inside `...`", "use $(...) instead")
		default:
			q.copy(1)
		}
	}
	return nil
}

// comment copies a comment up to its newline, values without newlines.
func (q *shellQuoter) comment() error {
	for q.i < len(q.src) && q.src[q.i] != '\n' {
		if q.src[q.i] != 0 {
			q.copy(1)
			continue
		}
		v, err := q.marker()
		if err != nil {
			return err
		}
		q.out.WriteString(strings.NewReplacer("\n", " ", "\r", " ").Replace(v))
	}
	return nil
}

// heredocOp copies a << or <<- operator and its delimiter word, and
// queues the here-document, whose body starts after the next newline.
func (q *shellQuoter) heredocOp() error {
	start := q.i
	j := q.i + 2
	h := heredoc{}
	if j < len(q.src) && q.src[j] == '-' {
		h.tabs = true
		j++
	}
	for j < len(q.src) && (q.src[j] == ' ' || q.src[j] == '\t') {
		j++
	}
	var delim strings.Builder
	var quote byte
word:
	for ; j < len(q.src); j++ {
		c := q.src[j]
		switch {
		case c == 0:
			return refuse("in a here-document delimiter", envHint)
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				delim.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			if j+1 < len(q.src) {
				j++
				if q.src[j] == 0 {
					return refuse("in a here-document delimiter", envHint)
				}
				delim.WriteByte(q.src[j])
			}
		case strings.IndexByte(" \t\n;&|<>()", c) >= 0:
			break word
		default:
			delim.WriteByte(c)
		}
	}
	h.delim = delim.String()
	q.heredocs = append(q.heredocs, h)
	q.i = start
	q.copy(j - start)
	return nil
}

// heredocBodies copies the bodies of the queued here-documents, which
// start at q.i (after a newline). Values are refused in them: an unquoted
// body expands $ and `, and a value could end the body early.
func (q *shellQuoter) heredocBodies() error {
	for _, h := range q.heredocs {
		for q.i < len(q.src) {
			end := strings.IndexByte(q.src[q.i:], '\n')
			n := end + 1
			if end < 0 {
				end, n = len(q.src)-q.i, len(q.src)-q.i
			}
			line := q.src[q.i : q.i+end]
			if strings.IndexByte(line, 0) >= 0 {
				return refuse("in a here-document", envHint)
			}
			q.copy(n)
			if h.tabs {
				line = strings.TrimLeft(line, "\t")
			}
			if line == h.delim {
				break
			}
		}
	}
	q.heredocs = q.heredocs[:0]
	return nil
}
