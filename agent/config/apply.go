package config

import (
	"flag"
	"fmt"
	"sort"
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
	keys := make([]string, 0, len(f.values))
	for k := range f.values {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return f.lines[keys[i]] < f.lines[keys[j]] })
	for _, key := range keys {
		name := FlagName(key)
		if fs.Lookup(name) == nil {
			return fmt.Errorf("%s:%d: %s: ax agent has no flag -%s", f.Path, f.lines[key], key, name)
		}
		if skip[name] {
			continue
		}
		if err := fs.Set(name, f.values[key]); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", f.Path, f.lines[key], key, err)
		}
	}
	return nil
}
