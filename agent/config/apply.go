package config

import (
	"flag"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Apply sets the flags of fs that the file sets, in their flag syntax,
// except those given on the command line (fs.Visit: set explicitly,
// whatever their value) and those named in keep (flags whose value comes
// from the environment, say). Call it after fs.Parse. A flag the file
// sets that fs does not define is an error, as is a value the flag
// refuses (with the file and line).
func (f *File) Apply(fs *flag.FlagSet, keep ...string) error {
	skip := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { skip[fl.Name] = true })
	for _, k := range keep {
		skip[k] = true
	}
	rv := reflect.ValueOf(&f.Agent).Elem()
	for _, fd := range fields() {
		val, ok := flagValue(rv.Field(fd.index))
		if !ok {
			continue
		}
		name := FlagName(fd.key)
		if fs.Lookup(name) == nil {
			return fmt.Errorf("%s:%d: %s: ax agent has no flag -%s", f.Path, f.lines[fd.key], fd.key, name)
		}
		if skip[name] {
			continue
		}
		if err := fs.Set(name, val); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", f.Path, f.lines[fd.key], fd.key, err)
		}
	}
	return nil
}

// flagValue writes a field's value as its flag takes it: lists
// comma-separated, maps as k=v,k=v in key order. ok is false when the
// field is unset.
func flagValue(v reflect.Value) (s string, ok bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "", false
		}
		e := v.Elem()
		switch e.Kind() {
		case reflect.String:
			return e.String(), true
		case reflect.Bool:
			return strconv.FormatBool(e.Bool()), true
		case reflect.Int:
			return strconv.FormatInt(e.Int(), 10), true
		case reflect.Uint64:
			return strconv.FormatUint(e.Uint(), 10), true
		}
	case reflect.Slice:
		if v.IsNil() {
			return "", false
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = v.Index(i).String()
		}
		return strings.Join(parts, ","), true
	case reflect.Map:
		if v.IsNil() {
			return "", false
		}
		parts := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			parts = append(parts, k.String()+"="+v.MapIndex(k).String())
		}
		sort.Strings(parts)
		return strings.Join(parts, ","), true
	}
	panic(fmt.Sprintf("config: field of type %s", v.Type()))
}
