package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// File is a loaded agent config file.
type File struct {
	// Path is the file's path as given to Load.
	Path string
	// values holds each key the file sets, written as its flag takes it
	// (lists a,b; maps k=v,k=v in key order), relative paths resolved
	// against the file's directory.
	values map[string]string
	// lines maps each key the file sets to its line.
	lines map[string]int
}

// Problem is one thing wrong with a config file.
type Problem struct {
	File         string
	Line, Column int
	// Key is the key the problem is about; empty for a syntax error
	// outside any setting.
	Key     string
	Message string
}

// String formats the problem as "file:line:column: key: message".
func (p Problem) String() string {
	s := fmt.Sprintf("%s:%d:%d: ", p.File, p.Line, p.Column)
	if p.Key != "" {
		s += p.Key + ": "
	}
	return s + p.Message
}

// Error is a config file that cannot be used: every problem found, in
// the order of the file.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Load reads and checks the config file at path.
func Load(path string) (*File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	return Parse(src, path)
}

// Parse checks src, the content of the config file at path, and decodes
// it. path names the file in problems and anchors relative paths. The
// error, when the file has problems, is an *Error.
func Parse(src []byte, path string) (*File, error) {
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	p := &parser{path: path, src: src}
	hf, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	var body *hclsyntax.Body
	if hf != nil {
		body, _ = hf.Body.(*hclsyntax.Body)
	}
	if diags.HasErrors() || body == nil {
		p.diags(diags, body)
		return nil, p.err()
	}
	known := keyed()
	for _, b := range body.Blocks {
		p.add(b.TypeRange, b.Type, "a block; the file holds only key = value settings")
	}
	values := map[string]cty.Value{}
	for name, attr := range body.Attributes {
		st, ok := known[name]
		if !ok {
			p.add(attr.NameRange, name, "unknown key"+suggest(name, known))
			continue
		}
		v, d := attr.Expr.Value(nil)
		if d.HasErrors() {
			p.diags(d, body)
			continue
		}
		if msg := wrongType(v, st); msg != "" {
			p.add(attr.Expr.Range(), name, msg)
		}
		if !v.IsNull() {
			values[name] = v
		}
	}
	if len(p.problems) > 0 {
		return nil, p.err()
	}
	file := &File{Path: path, values: map[string]string{}, lines: map[string]int{}}
	for name := range values {
		attr, st := body.Attributes[name], known[name]
		text, msg, d := decode(attr.Expr, st)
		if d.HasErrors() {
			p.diags(d, body)
			continue
		}
		if msg != "" {
			p.add(attr.Expr.Range(), name, msg)
			continue
		}
		if st.check == "path" && text != "" && !filepath.IsAbs(text) {
			text = filepath.Join(dir, text)
		}
		file.values[name], file.lines[name] = text, attr.SrcRange.Start.Line
	}
	if len(p.problems) > 0 {
		return nil, p.err()
	}
	return file, nil
}

// Set reports whether the file sets key.
func (f *File) Set(key string) bool {
	_, ok := f.lines[key]
	return ok
}

// parser collects a file's problems.
type parser struct {
	path     string
	src      []byte
	problems []Problem
}

func (p *parser) add(r hcl.Range, key, msg string) {
	p.problems = append(p.problems, Problem{File: p.path, Line: r.Start.Line, Column: r.Start.Column, Key: key, Message: msg})
}

// diags adds HCL's error diagnostics, each attributed to the setting of
// body (when given) it points into.
func (p *parser) diags(ds hcl.Diagnostics, body *hclsyntax.Body) {
	for _, d := range ds {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		var r hcl.Range
		if d.Subject != nil {
			r = *d.Subject
		}
		key := ""
		if body != nil {
			for name, a := range body.Attributes {
				if a.SrcRange.Overlaps(r) {
					key = name
				}
			}
		}
		if d.Summary == "Attribute redefined" {
			// HCL keeps the first definition; the subject is the second's name.
			key = strings.TrimSpace(string(r.SliceBytes(p.src)))
		}
		p.add(r, key, msg)
	}
}

func (p *parser) err() error {
	sort.SliceStable(p.problems, func(i, j int) bool {
		a, b := p.problems[i], p.problems[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return &Error{Problems: p.problems}
}

// suggest names the known key closest to an unknown one, if one is close.
func suggest(name string, known map[string]setting) string {
	best, bestDist := "", 3
	for k := range known {
		if d := levenshtein.Distance(name, k, nil); d < bestDist || (d == bestDist && best != "" && k < best) {
			best, bestDist = k, d
		}
	}
	if best == "" {
		return " (every key is a flag of ax agent with _ for -)"
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// wrongType says why v does not fit st, or returns "". Values are not
// converted: "7070" is not a number and 7070 is not an address. A null
// value is as if the key were absent.
func wrongType(v cty.Value, st setting) string {
	if v.IsNull() {
		return ""
	}
	var want string
	ok := false
	switch {
	case st.form == formList:
		want, ok = `a list of strings (["a", "b"])`, allStrings(v, v.Type().IsTupleType() || v.Type().IsListType())
	case st.form == formMap:
		want, ok = `a map of strings ({ k = "v" })`, allStrings(v, v.Type().IsObjectType() || v.Type().IsMapType())
	case st.kind == kindString || st.kind == kindDuration:
		// An enumeration of true, false and more takes a bool too.
		want, ok = "a string", v.Type() == cty.String
		if strings.Contains("|"+strings.TrimPrefix(st.check, "oneof=")+"|", "|true|") {
			want, ok = "a string or a bool", ok || v.Type() == cty.Bool
		}
	case st.kind == kindBool:
		want, ok = "a bool (true or false, unquoted)", v.Type() == cty.Bool
	case st.kind == kindInt || st.kind == kindUint:
		want, ok = "a number (unquoted)", v.Type() == cty.Number
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("wants %s, got %s", want, friendly(v.Type()))
}

// allStrings reports whether the collection v (when isColl) holds only
// strings.
func allStrings(v cty.Value, isColl bool) bool {
	if !isColl {
		return false
	}
	for it := v.ElementIterator(); it.Next(); {
		if _, e := it.Element(); e.IsNull() || e.Type() != cty.String {
			return false
		}
	}
	return true
}

func friendly(t cty.Type) string {
	switch {
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		return "a list"
	case t.IsObjectType() || t.IsMapType():
		return "a map"
	case t == cty.Number:
		return "a number"
	case t == cty.Bool:
		return "a bool"
	case t == cty.String:
		return "a string"
	}
	return t.FriendlyName()
}

// decode reads the value of expr, of the type wrongType accepted, as
// st's flag takes it, and says what is wrong with it ("" when nothing
// is): each element of a list is checked, and each label of a map.
func decode(expr hcl.Expression, st setting) (text, problem string, diags hcl.Diagnostics) {
	switch {
	case st.form == formList:
		var l []string
		if diags = gohcl.DecodeExpression(expr, nil, &l); diags.HasErrors() {
			return "", "", diags
		}
		for i, e := range l {
			if msg := checkString(e, st.check); msg != "" {
				return "", fmt.Sprintf("element %d: %s", i+1, msg), nil
			}
		}
		return strings.Join(l, ","), "", nil
	case st.form == formMap:
		var m map[string]string
		if diags = gohcl.DecodeExpression(expr, nil, &m); diags.HasErrors() {
			return "", "", diags
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			if k == "" || strings.ContainsAny(k, ",=") || strings.Contains(m[k], ",") {
				return "", fmt.Sprintf("label %q = %q: a key must be non-empty without , or =, a value without ,", k, m[k]), nil
			}
			parts[i] = k + "=" + m[k]
		}
		return strings.Join(parts, ","), "", nil
	case st.kind == kindBool:
		var b bool
		diags = gohcl.DecodeExpression(expr, nil, &b)
		text = strconv.FormatBool(b)
	case st.kind == kindInt:
		var n int
		diags = gohcl.DecodeExpression(expr, nil, &n)
		text = strconv.Itoa(n)
	case st.kind == kindUint:
		var n uint64
		diags = gohcl.DecodeExpression(expr, nil, &n)
		text = strconv.FormatUint(n, 10)
	default:
		diags = gohcl.DecodeExpression(expr, nil, &text)
	}
	if diags.HasErrors() {
		return "", "", diags
	}
	return text, st.problem(text), nil
}
