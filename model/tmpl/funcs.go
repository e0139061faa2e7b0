package tmpl

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"text/template"
	"unicode/utf8"
)

// Errors of a rendering that went over a limit.
var (
	// ErrOutput is the error of a template, or a function it calls, that
	// produces more than OutputLimit bytes.
	ErrOutput = fmt.Errorf("template output longer than %d bytes", OutputLimit)
	// ErrWork is the error of a rendering whose functions produce more
	// than WorkLimit bytes in all.
	ErrWork = fmt.Errorf("template functions produced more than %d bytes", WorkLimit)
)

// Funcs implements the functions of FuncNames that are not text/template
// builtins, bounded: a result longer than OutputLimit is an error
// (checked before it is built where the size can be foreseen), and so
// are more than WorkLimit bytes produced by the calls of one rendering.
// Use a new Funcs for each rendering. It reads no clock: Check, if set,
// is called on every call and its error stops the rendering (the
// executor's time limit).
type Funcs struct {
	// Check, if set, is called by every function and by Writer.
	Check func() error
	work  int
}

// Map returns the functions, for template.Funcs. raw returns its
// argument's text; secret fails (secrets exist only in the executor,
// which replaces both).
func (f *Funcs) Map() template.FuncMap {
	return template.FuncMap{
		"print":    f.Print,
		"printf":   f.Printf,
		"println":  f.Println,
		"html":     f.HTML,
		"js":       f.JS,
		"urlquery": f.URLQuery,
		"raw":      func(v any) (string, error) { return f.Print(v) },
		"secret":   func(string) (string, error) { return "", errors.New("secrets are not available here") },
	}
}

// charge counts n bytes produced by a call, then runs Check.
func (f *Funcs) charge(n int) error {
	if n > OutputLimit {
		return ErrOutput
	}
	f.work += n
	if f.work > WorkLimit {
		return ErrWork
	}
	if f.Check != nil {
		return f.Check()
	}
	return nil
}

// result charges s and returns it.
func (f *Funcs) result(s string) (string, error) {
	if err := f.charge(len(s)); err != nil {
		return "", err
	}
	return s, nil
}

// Print is fmt.Sprint, bounded.
func (f *Funcs) Print(args ...any) (string, error) {
	if err := f.foresee(sprintSize(args)); err != nil {
		return "", err
	}
	return f.result(fmt.Sprint(args...))
}

// Println is fmt.Sprintln, bounded.
func (f *Funcs) Println(args ...any) (string, error) {
	if err := f.foresee(sprintSize(args)); err != nil {
		return "", err
	}
	return f.result(fmt.Sprintln(args...))
}

// Printf is fmt.Sprintf, bounded: a width or precision above
// WidthLimit, and '*' or [n] in a verb, are errors.
func (f *Funcs) Printf(format string, args ...any) (string, error) {
	n, err := printfSize(format, args)
	if err != nil {
		return "", err
	}
	if err := f.foresee(n); err != nil {
		return "", err
	}
	return f.result(fmt.Sprintf(format, args...))
}

// HTML is text/template's html, bounded.
func (f *Funcs) HTML(args ...any) (string, error) {
	return f.escape(template.HTMLEscapeString, args)
}

// JS is text/template's js, bounded.
func (f *Funcs) JS(args ...any) (string, error) {
	return f.escape(template.JSEscapeString, args)
}

// URLQuery is text/template's urlquery, bounded.
func (f *Funcs) URLQuery(args ...any) (string, error) {
	return f.escape(url.QueryEscape, args)
}

// escape applies esc to the text of args (one string as it is, else
// fmt.Sprint of them), as text/template's escapers do.
func (f *Funcs) escape(esc func(string) string, args []any) (string, error) {
	if s, ok := oneString(args); ok {
		if err := f.foresee(len(s)); err != nil {
			return "", err
		}
		return f.result(esc(s))
	}
	if err := f.foresee(sprintSize(args)); err != nil {
		return "", err
	}
	return f.result(esc(fmt.Sprint(args...)))
}

// foresee refuses a call whose result is foreseen to be too long.
func (f *Funcs) foresee(n int) error {
	if n > OutputLimit {
		return ErrOutput
	}
	return nil
}

func oneString(args []any) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	s, ok := args[0].(string)
	return s, ok
}

// sprintSize foresees, from above, the length of fmt.Sprint(args...).
// It stops counting past OutputLimit.
func sprintSize(args []any) int {
	n := 0
	for _, a := range args {
		n += argSize(a, 'v', false) + 1
		if n > OutputLimit {
			break
		}
	}
	return n
}

// printfSize checks format and foresees, from above, the length of
// fmt.Sprintf(format, args...). It stops counting past OutputLimit.
func printfSize(format string, args []any) (int, error) {
	n := len(format)
	next := 0
	for i := 0; i < len(format) && n <= OutputLimit; i++ {
		if format[i] != '%' {
			continue
		}
		i++
		wide := false
	flags:
		for ; i < len(format); i++ {
			switch format[i] {
			case '#', ' ':
				wide = true
			case '+', '-', '0':
			default:
				break flags
			}
		}
		width, j, err := formatNumber(format, i)
		if err != nil {
			return 0, err
		}
		i = j
		prec := 0
		if i < len(format) && format[i] == '.' {
			if prec, i, err = formatNumber(format, i+1); err != nil {
				return 0, err
			}
		}
		if i >= len(format) {
			break
		}
		verb, size := utf8.DecodeRuneInString(format[i:])
		i += size - 1
		switch verb {
		case '*', '[':
			return 0, errors.New("printf: '*' and [n] are not allowed in a format")
		case '%':
			continue
		}
		n += width + prec + 16 // 16: room for a %!verb(type=) wrapper
		if next < len(args) {
			n += argSize(args[next], verb, wide)
			next++
		}
	}
	for ; next < len(args) && n <= OutputLimit; next++ {
		n += argSize(args[next], 'v', false) + 16 // %!(EXTRA type=value)
	}
	return n, nil
}

// formatNumber reads the decimal number at format[i:] (0 if none) and
// returns it and where it ends; above WidthLimit is an error.
func formatNumber(format string, i int) (int, int, error) {
	n := 0
	for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
		n = n*10 + int(format[i]-'0')
		if n > WidthLimit {
			return 0, 0, fmt.Errorf("printf: width or precision above %d", WidthLimit)
		}
	}
	return n, i, nil
}

// argSize foresees, from above, how long a is when formatted with verb
// (wide: the '#' or ' ' flag).
func argSize(a any, verb rune, wide bool) int {
	text := func(n int) int {
		switch verb {
		case 'q':
			return 4*n + 2
		case 'x', 'X':
			if wide {
				return 5 * n
			}
			return 2 * n
		}
		return n
	}
	switch v := a.(type) {
	case nil:
		return 8
	case string:
		return text(len(v))
	case []byte:
		return text(len(v)) + 2*len(v) // %v of a byte slice prints numbers
	case error:
		return text(len(v.Error()))
	case fmt.Stringer:
		return text(len(v.String()))
	}
	rv := reflect.ValueOf(a)
	switch rv.Kind() {
	case reflect.Bool:
		return 8
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		if verb == 'f' || verb == 'F' {
			return 2 * 330 // %f of ±1e308, twice for a complex
		}
		return 2 * 70 // %b of an int64
	case reflect.String:
		return text(rv.Len())
	}
	// A map, slice or struct of the data: as long as it prints, with room
	// for %#v's type names.
	s := fmt.Sprint(a)
	if wide {
		return 4*len(s) + 64
	}
	return text(len(s))
}

// Writer collects what a template renders: a write that would take it
// past Limit bytes (OutputLimit if 0) fails with ErrOutput, and Check, if
// set, runs on every write.
type Writer struct {
	// Limit is the most bytes the writer keeps; 0 means OutputLimit.
	Limit int
	// Check, if set, is called on every write; its error fails the write.
	Check func() error
	b     strings.Builder
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	limit := w.Limit
	if limit == 0 {
		limit = OutputLimit
	}
	if w.b.Len()+len(p) > limit {
		return 0, ErrOutput
	}
	if w.Check != nil {
		if err := w.Check(); err != nil {
			return 0, err
		}
	}
	return w.b.Write(p)
}

// String returns what was written.
func (w *Writer) String() string { return w.b.String() }

// Render executes t, a template from Parse, with data and the functions
// of funcs (plus extra, which override them) on a clone of t, into w. t
// itself is not changed, so it may be shared.
func Render(t *template.Template, data any, funcs *Funcs, extra template.FuncMap, w *Writer) error {
	c, err := t.Clone()
	if err != nil {
		return err
	}
	c.Funcs(funcs.Map())
	if extra != nil {
		c.Funcs(extra)
	}
	return c.Execute(w, data)
}
