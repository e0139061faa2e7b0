package jsonpath

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// CheckPointer reports whether p is a JSON pointer (RFC 6901): "" (the
// whole document), or "/" followed by reference tokens separated by "/",
// in which "~" appears only as "~0" (a "~") or "~1" (a "/").
func CheckPointer(p string) error {
	if p == "" {
		return nil
	}
	if p[0] != '/' {
		return fmt.Errorf("%q is not a JSON pointer: it must be empty or start with /", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || p[i+1] != '0' && p[i+1] != '1') {
			return fmt.Errorf("%q is not a JSON pointer: ~ must be followed by 0 or 1 (~0 is ~, ~1 is /)", p)
		}
	}
	return nil
}

// Pointer returns the value that the JSON pointer p (RFC 6901) selects in
// the JSON document doc. An array index is a decimal number without
// leading zeros; "-" (past the end) selects nothing. The error says which
// reference token found nothing.
func Pointer(doc []byte, p string) (json.RawMessage, error) {
	if err := CheckPointer(p); err != nil {
		return nil, err
	}
	cur := json.RawMessage(bytes.TrimSpace(doc))
	if !json.Valid(cur) {
		return nil, fmt.Errorf("the document is not JSON")
	}
	if p == "" {
		return cur, nil
	}
	at := ""
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		at += "/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
		switch {
		case len(cur) > 0 && cur[0] == '{':
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(cur, &obj); err != nil {
				return nil, err
			}
			v, ok := obj[tok]
			if !ok {
				return nil, fmt.Errorf("%s: no member %q", at, tok)
			}
			cur = v
		case len(cur) > 0 && cur[0] == '[':
			var arr []json.RawMessage
			if err := json.Unmarshal(cur, &arr); err != nil {
				return nil, err
			}
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || strconv.Itoa(n) != tok {
				return nil, fmt.Errorf("%s: %q is not an array index", at, tok)
			}
			if n >= len(arr) {
				return nil, fmt.Errorf("%s: index %d is past the end of an array of %d", at, n, len(arr))
			}
			cur = arr[n]
		default:
			return nil, fmt.Errorf("%s: %q is not an object or an array", at[:len(at)-len(tok)-1], shorten(cur))
		}
	}
	return cur, nil
}

// shorten is v, cut to 40 bytes for an error.
func shorten(v []byte) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}
