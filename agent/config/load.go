package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

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
	// Agent holds the file's settings, relative paths resolved against
	// the file's directory.
	Agent Agent
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
	known := map[string]field{}
	for _, f := range fields() {
		known[f.key] = f
	}
	for _, b := range body.Blocks {
		p.add(b.TypeRange, b.Type, "a block; the file holds only key = value settings")
	}
	for name, attr := range body.Attributes {
		f, ok := known[name]
		if !ok {
			p.add(attr.NameRange, name, "unknown key"+suggest(name, known))
			continue
		}
		v, d := attr.Expr.Value(nil)
		if d.HasErrors() {
			p.diags(d, body)
			continue
		}
		if msg := wrongType(v, f); msg != "" {
			p.add(attr.Expr.Range(), name, msg)
		}
	}
	if len(p.problems) > 0 {
		return nil, p.err()
	}
	file := &File{Path: path, lines: map[string]int{}}
	if d := gohcl.DecodeBody(body, nil, &file.Agent); d.HasErrors() {
		p.diags(d, body)
		return nil, p.err()
	}
	rv := reflect.ValueOf(&file.Agent).Elem()
	for _, f := range fields() {
		attr, ok := body.Attributes[f.key]
		if !ok {
			continue
		}
		if _, set := flagValue(rv.Field(f.index)); set {
			file.lines[f.key] = attr.SrcRange.Start.Line
		}
		if msg := check(rv.Field(f.index), f.check, dir); msg != "" {
			p.add(attr.Expr.Range(), f.key, msg)
		}
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
func suggest(name string, known map[string]field) string {
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

// wrongType says why v does not fit f, or returns "". Values are not
// converted: "7070" is not a number and 7070 is not an address. A null
// value is as if the key were absent.
func wrongType(v cty.Value, f field) string {
	if v.IsNull() {
		return ""
	}
	t := f.typ
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var want string
	ok := false
	switch t.Kind() {
	case reflect.String:
		// An enumeration of true, false and more takes a bool too.
		want, ok = "a string", v.Type() == cty.String
		if strings.Contains("|"+strings.TrimPrefix(f.check, "oneof=")+"|", "|true|") {
			want, ok = "a string or a bool", ok || v.Type() == cty.Bool
		}
	case reflect.Bool:
		want, ok = "a bool (true or false, unquoted)", v.Type() == cty.Bool
	case reflect.Int, reflect.Uint64:
		want, ok = "a number (unquoted)", v.Type() == cty.Number
	case reflect.Slice:
		want, ok = `a list of strings (["a", "b"])`, allStrings(v, v.Type().IsTupleType() || v.Type().IsListType())
	case reflect.Map:
		want, ok = `a map of strings ({ k = "v" })`, allStrings(v, v.Type().IsObjectType() || v.Type().IsMapType())
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

// check validates a decoded value as its ax tag says and resolves a
// relative path against dir; it returns what is wrong, or "".
func check(v reflect.Value, tag, dir string) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Int:
		if v.Int() < 1 {
			return fmt.Sprintf("wants at least 1, got %d", v.Int())
		}
	case reflect.Slice:
		for i := range v.Len() {
			if msg := checkString(v.Index(i).String(), tag); msg != "" {
				return fmt.Sprintf("element %d: %s", i+1, msg)
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			key, val := k.String(), v.MapIndex(k).String()
			if key == "" || strings.ContainsAny(key, ",=") || strings.Contains(val, ",") {
				return fmt.Sprintf("label %q = %q: a key must be non-empty without , or =, a value without ,", key, val)
			}
		}
	case reflect.String:
		s := v.String()
		if msg := checkString(s, tag); msg != "" {
			return msg
		}
		if tag == "path" && s != "" && !filepath.IsAbs(s) {
			v.SetString(filepath.Join(dir, s))
		}
	}
	return ""
}

// checkString validates one string as tag says.
func checkString(s, tag string) string {
	switch {
	case tag == "duration":
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Sprintf("%q is not a duration (write it as 30s, 5m, 1h30m)", s)
		}
		if d < 0 {
			return fmt.Sprintf("%q is negative", s)
		}
	case tag == "addr":
		if s != "" {
			return checkHostPort(s)
		}
	case tag == "member":
		if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
			if u, err := url.Parse(s); err != nil || u.Host == "" {
				return fmt.Sprintf("%q is not an address (host:port or https://host:port)", s)
			}
			return ""
		}
		return checkHostPort(s)
	case tag == "url":
		if s == "" {
			return ""
		}
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Sprintf("%q is not an http(s):// URL", s)
		}
	case strings.HasPrefix(tag, "oneof="):
		opts := strings.Split(strings.TrimPrefix(tag, "oneof="), "|")
		for _, o := range opts {
			if s == o {
				return ""
			}
		}
		return fmt.Sprintf("%q is not one of %s", s, strings.Join(opts, ", "))
	}
	return ""
}

func checkHostPort(s string) string {
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Sprintf("%q is not host:port", s)
	}
	return ""
}
