package localcluster

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestBuildKey: the cache key of a build follows the contents of its
// sources and its tags, not where the module lies or the files' times.
func TestBuildKey(t *testing.T) {
	module := func(main string) []string {
		dir := t.TempDir()
		files := map[string]string{"go.mod": "module x\n", "go.sum": "", "cmd/x/main.go": main}
		var out []string
		for name, body := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
		sort.Strings(out)
		return out
	}
	key := func(files []string, tags ...string) string {
		k, err := buildKey("x/cmd/x", tags, files)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a := key(module("package main\n"))
	if b := key(module("package main\n")); b != a {
		t.Errorf("the same sources elsewhere: key %s, want %s", b, a)
	}
	if b := key(module("package main // changed\n")); b == a {
		t.Errorf("a changed source kept key %s", a)
	}
	if b := key(module("package main\n"), "faults"); b == a {
		t.Errorf("a build tag kept key %s", a)
	}
}

// TestPruneCache keeps the most recently used builds and the lock files
// of those it removes (a waiter may hold one).
func TestPruneCache(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for i, name := range []string{"old", "older", "new", "newer"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".lock"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		age := map[int]time.Duration{0: time.Hour, 1: 2 * time.Hour, 2: time.Minute, 3: time.Second}[i]
		if err := os.Chtimes(filepath.Join(dir, name), now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	pruneCache(dir, 2)
	for name, want := range map[string]bool{"new": true, "newer": true, "old": false, "older": false,
		"old.lock": true, "older.lock": true} {
		_, err := os.Stat(filepath.Join(dir, name))
		if got := err == nil; got != want {
			t.Errorf("%s kept: %v, want %v", name, got, want)
		}
	}
}

// TestLinkOrCopy: the destination has the source's bytes and mode, and
// replaces what was there.
func TestLinkOrCopy(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if err := os.WriteFile(src, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := linkOrCopy(src, dst); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	st, _ := os.Stat(dst)
	if err != nil || string(b) != "binary" || st.Mode().Perm() != 0o755 {
		t.Fatalf("dst: %q %v %v, want the source's bytes with mode 0755", b, st.Mode(), err)
	}
}
