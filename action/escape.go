package action

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"text/template"
)

// Escaping of caller values and secrets in HTTP actions, by position, the
// way html/template escapes values for HTML: see the package doc.

// errURLAuthority refuses a marked value in the scheme or authority of a
// URL.
var errURLAuthority = errors.New("a caller value or secret cannot form the scheme or host of the URL " +
	"(only its path, query and fragment); write them in the template, or use {{raw ...}} if a caller may choose them")

// valueError is an error that depends on a value, not on where it stands:
// Check does not hold it against a template.
type valueError struct{ msg string }

func (e *valueError) Error() string { return e.msg }

// URL parts a value can stand in.
const (
	urlPath = iota
	urlQuery
	urlFragment
)

// escapeURL replaces the markers of s, a rendered url, by their values
// escaped for the part of the URL they stand in: url.PathEscape in the
// path (so '/', '?', '#' and '%' are escaped), url.QueryEscape in the
// query, fragment escaping in the fragment; urlquery's result as it is. A
// value in the scheme or authority (before the first '/', '?' or '#' after
// "://") is refused, and so is a path segment made by values alone that is
// empty, "." or "..", which a server would collapse.
func escapeURL(s string) (string, error) {
	first := strings.IndexByte(s, 0)
	if first < 0 {
		return s, nil
	}
	sep := strings.Index(s[:first], "://")
	if sep < 0 {
		return "", errURLAuthority
	}
	end := strings.IndexAny(s[sep+3:first], "/?#")
	if end < 0 {
		return "", errURLAuthority
	}
	end += sep + 3
	var b strings.Builder
	b.WriteString(s[:end])
	part := urlPath
	seg := segment{start: end + 1}
	for i := end; i < len(s); {
		c := s[i]
		if c == 0 {
			kind, v, next, err := readMarker(s, i)
			if err != nil {
				return "", err
			}
			b.WriteString(escapeURLPart(part, kind, v))
			seg.value = seg.value || part == urlPath
			i = next
			continue
		}
		if part == urlPath && (c == '/' || c == '?' || c == '#') {
			if err := seg.check(b.String()); err != nil {
				return "", err
			}
			seg = segment{start: b.Len() + 1}
		}
		switch {
		case c == '?' && part == urlPath:
			part = urlQuery
		case c == '#':
			part = urlFragment
		}
		b.WriteByte(c)
		i++
	}
	if part == urlPath {
		if err := seg.check(b.String()); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// segment is the path segment being written, from start.
type segment struct {
	start int
	value bool // a value stands in it
}

// check refuses the segment that ends at the end of out if values made it
// empty, "." or "..".
func (s segment) check(out string) error {
	if !s.value || s.start > len(out) {
		return nil
	}
	text := out[s.start:]
	if u, err := url.PathUnescape(text); err == nil {
		text = u
	}
	if text == "" || text == "." || text == ".." {
		return &valueError{fmt.Sprintf("a value makes the URL path segment %q, which a server would collapse", text)}
	}
	return nil
}

// escapeURLPart escapes v, a value of kind, for part of a URL.
func escapeURLPart(part int, kind byte, v string) string {
	switch {
	case kind == kindURL:
		return v
	case part == urlPath:
		return url.PathEscape(v)
	case part == urlQuery:
		return url.QueryEscape(v)
	}
	return (&url.URL{Fragment: v}).EscapedFragment()
}

// Body formats, from the Content-Type header.
const (
	bodyJSON  = iota // application/json, */*+json, or no type and a JSON-looking body
	bodyForm         // application/x-www-form-urlencoded
	bodyXML          // */xml, */*+xml, text/html
	bodyText         // text/plain
	bodyOther        // any other type, or no type and a body that does not look like JSON
)

// bodyFormat returns the format of a body rendered as s, sent with
// Content-Type ct (typed: the action sets one, "" if it comes from a
// secret).
func bodyFormat(ct string, typed bool, s string) int {
	if !typed {
		s = strings.TrimLeft(s, " \t\r\n")
		if s != "" && strings.IndexByte("{[\"\x00", s[0]) >= 0 {
			return bodyJSON
		}
		return bodyOther
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return bodyOther
	}
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return bodyJSON
	case mt == "application/x-www-form-urlencoded":
		return bodyForm
	case mt == "application/xml" || mt == "text/xml" || strings.HasSuffix(mt, "+xml") || mt == "text/html":
		return bodyXML
	case mt == "text/plain":
		return bodyText
	}
	return bodyOther
}

// escapeBody replaces the markers of s, a rendered body of format, by
// their values escaped for it. JSON: inside a string literal a value is
// escaped as string content, elsewhere it becomes a JSON string (a JSON
// payload, if it still is valid JSON, is inserted as the JSON value it
// is). Form: query escaping. XML
// and HTML: entity escaping. text/plain: as it is. Another format: only
// urlquery's result; other values are refused.
func escapeBody(s string, format int) (string, error) {
	if strings.IndexByte(s, 0) < 0 {
		return s, nil
	}
	switch format {
	case bodyJSON:
		return escapeJSON(s)
	case bodyForm:
		return replaceMarkers(s, func(kind byte, v string) (string, error) {
			if kind == kindURL {
				return v, nil
			}
			return url.QueryEscape(v), nil
		})
	case bodyXML:
		return replaceMarkers(s, func(_ byte, v string) (string, error) { return template.HTMLEscapeString(v), nil })
	case bodyText:
		return replaceMarkers(s, func(_ byte, v string) (string, error) { return v, nil })
	}
	return replaceMarkers(s, func(kind byte, v string) (string, error) {
		if kind == kindURL {
			return v, nil
		}
		return "", errors.New("a caller value or secret cannot be escaped in a body that is neither JSON, a form, XML nor text/plain: " +
			"set a Content-Type header (a JSON body needs none), or use {{raw ...}} to insert the value as it is")
	})
}

// escapeJSON is escapeBody for a JSON body: it follows string literals to
// know where each marker stands.
func escapeJSON(s string) (string, error) {
	var b strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0 {
			kind, v, next, err := readMarker(s, i)
			if err != nil {
				return "", err
			}
			switch {
			case escaped:
				return "", errors.New("a caller value or secret cannot be expanded right after a backslash in a JSON string")
			case inString:
				q := jsonString(v)
				b.WriteString(q[1 : len(q)-1])
			case kind == kindJSON && json.Valid([]byte(v)):
				// Checked again: slice of a payload keeps its kind.
				b.WriteString(v)
			default:
				b.WriteString(jsonString(v))
			}
			i = next
			continue
		}
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), nil
}

// jsonString is v as a JSON string literal (<, > and & escaped too).
func jsonString(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}
