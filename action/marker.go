package action

import (
	"encoding/hex"
	"errors"
	"strings"
)

// Marked values.
//
// A value a template cannot trust (a param, the payload, a secret) is
// rendered as a marker: NUL, a kind byte, the value in hex, NUL. Once the
// template has run, the output is read the way its consumer will read it
// (the shell, a URL parser, a JSON parser) and each marker is replaced by
// its value escaped for the place where it stands: quoteShell, escapeURL,
// escapeBody. Marked values compare as their text, so that {{if eq
// .Params.mode "full"}} works.

// Marker kinds.
const (
	kindValue = 'v' // text
	kindJSON  = 'j' // JSON text (a payload that is not a JSON string)
	kindURL   = 'u' // text already escaped by urlquery: safe in a URL as it is
)

// value is a caller value or a secret in a template.
type value string

// String returns the marker of v.
func (v value) String() string { return marker(kindValue, string(v)) }

// jsonValue is a payload that is JSON but not a string: a JSON value on
// its own in a JSON body, text elsewhere.
type jsonValue string

// String returns the marker of v.
func (v jsonValue) String() string { return marker(kindJSON, string(v)) }

// urlValue is what urlquery made of a marked value.
type urlValue string

// String returns the marker of v.
func (v urlValue) String() string { return marker(kindURL, string(v)) }

func marker(kind byte, s string) string {
	b := make([]byte, 0, 3+2*len(s))
	b = append(b, 0, kind)
	b = hex.AppendEncode(b, []byte(s))
	return string(append(b, 0))
}

// errNUL is returned for a NUL byte that is not part of a marker.
var errNUL = errors.New("contains a NUL byte")

// readMarker reads the marker at s[i] (a NUL) and returns its kind, its
// value and the index after it.
func readMarker(s string, i int) (kind byte, v string, next int, err error) {
	end := strings.IndexByte(s[i+1:], 0)
	if end < 1 {
		return 0, "", 0, errNUL
	}
	kind = s[i+1]
	if kind != kindValue && kind != kindJSON && kind != kindURL {
		return 0, "", 0, errNUL
	}
	b, err := hex.DecodeString(s[i+2 : i+1+end])
	if err != nil {
		return 0, "", 0, errNUL
	}
	return kind, string(b), i + end + 2, nil
}

// replaceMarkers replaces each marker of s by what fn makes of it.
func replaceMarkers(s string, fn func(kind byte, v string) (string, error)) (string, error) {
	i := strings.IndexByte(s, 0)
	if i < 0 {
		return s, nil
	}
	var b strings.Builder
	for i >= 0 {
		b.WriteString(s[:i])
		kind, v, next, err := readMarker(s, i)
		if err != nil {
			return "", err
		}
		r, err := fn(kind, v)
		if err != nil {
			return "", err
		}
		b.WriteString(r)
		s = s[next:]
		i = strings.IndexByte(s, 0)
	}
	b.WriteString(s)
	return b.String(), nil
}

// unmark returns the text of a (a marked value, or a string with markers
// in it, such as printf's result) and whether it held a marked value.
func unmark(a any) (any, bool) {
	switch v := a.(type) {
	case value:
		return string(v), true
	case jsonValue:
		return string(v), true
	case urlValue:
		return string(v), true
	case string:
		if strings.IndexByte(v, 0) < 0 {
			return v, false
		}
		s, err := replaceMarkers(v, func(_ byte, v string) (string, error) { return v, nil })
		if err != nil {
			return v, false
		}
		return s, true
	}
	return a, false
}
