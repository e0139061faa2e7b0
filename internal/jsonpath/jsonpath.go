// Package jsonpath names the JSON object key that encoding/json refused
// as unknown by its dotted path ("trigger.bogus"), for errors that name
// the field, and selects a part of a JSON document by a JSON pointer
// (RFC 6901; an HTTP action's resultFrom).
package jsonpath

import (
	"encoding/json"
	"reflect"
	"strings"
)

// IsUnknownField reports whether err is encoding/json's unknown-field error.
func IsUnknownField(err error) bool {
	return strings.HasPrefix(err.Error(), "json: unknown field ")
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// UnknownFieldPath returns the dotted path ("trigger.bogus") of the first
// object key in the JSON value data that has no field in type t, or "" when
// there is none. It matches keys to fields as encoding/json does (tag name,
// else field name; exact match first, then case-insensitive).
func UnknownFieldPath(data []byte, t reflect.Type) string {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	p, _ := walkUnknown(dec, t, "")
	return p
}

// walkUnknown reads one value from dec shaped by t (nil: anything goes).
func walkUnknown(dec *json.Decoder, t reflect.Type, path string) (string, error) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)) {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return "", nil
	}
	switch d {
	case '{':
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "", err
			}
			key, _ := kt.(string)
			sub := key
			if path != "" {
				sub = path + "." + key
			}
			var ft reflect.Type
			switch {
			case t == nil:
			case t.Kind() == reflect.Map:
				ft = t.Elem()
			case t.Kind() == reflect.Struct:
				f, ok := jsonField(t, key)
				if !ok {
					return sub, nil
				}
				ft = f
			}
			if p, err := walkUnknown(dec, ft, sub); p != "" || err != nil {
				return p, err
			}
		}
	case '[':
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for dec.More() {
			if p, err := walkUnknown(dec, et, path); p != "" || err != nil {
				return p, err
			}
		}
	}
	_, err = dec.Token() // closing delimiter
	return "", err
}

// jsonField returns the type of the field of struct t that encoding/json
// would decode key into.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	var fold reflect.Type
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = f.Type
		}
	}
	return fold, fold != nil
}
