package localcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

// CacheEnv names the directory Install keeps its builds in; by default
// ax-test-bin in the user's cache directory (~/.cache on Linux).
const CacheEnv = "AX_TEST_BIN_CACHE"

// cacheKeep is how many builds the cache keeps: the most recently used
// ones (several worktrees and build-tag variants at once).
const cacheKeep = 12

// Install puts the command pkg of this module (an import path), built
// with tags (and -race with AX_TEST_RACE=1), at out, and returns the
// files it was built from. A build is kept in a cache shared by every
// test package and keyed by the hash of those files' contents, the tags,
// -race and the toolchain: the test packages that run ax build it once
// between them instead of once each, and a change to any source builds
// it again. out is a hard link to the cached binary, or a copy where
// links cannot be made, so that a process's command line names the
// caller's directory. Concurrent Installs of one key wait for one build.
func Install(out, pkg string, tags ...string) ([]string, error) {
	files, err := sourceFiles(pkg, tags)
	if err != nil {
		return nil, err
	}
	key, err := buildKey(pkg, tags, files)
	if err != nil {
		return nil, err
	}
	dir, err := cacheDir()
	if err != nil {
		return nil, err
	}
	entry := filepath.Join(dir, key)
	bin := filepath.Join(entry, path.Base(pkg))
	unlock, err := lockFile(entry + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(bin); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(entry, 0o755); err != nil {
			return nil, err
		}
		tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
		if err := goBuild(tmp, pkg, tags); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, bin); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	now := time.Now()
	_ = os.Chtimes(entry, now, now) // most recently used: pruned last
	if err := linkOrCopy(bin, out); err != nil {
		return nil, err
	}
	pruneCache(dir, cacheKeep)
	return files, nil
}

// buildKey hashes what a build of pkg depends on: the contents of its
// source files (by their path in the module), the tags, -race, the
// toolchain and the environment that changes a build.
func buildKey(pkg string, tags, files []string) (string, error) {
	h := sha256.New()
	sorted := slices.Clone(tags)
	sort.Strings(sorted)
	fmt.Fprintf(h, "pkg %s\ntags %s\nrace %t\ngo %s %s/%s\n", pkg, strings.Join(sorted, ","), os.Getenv("AX_TEST_RACE") != "",
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, v := range []string{"GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT", "GOAMD64", "GOTOOLCHAIN"} {
		fmt.Fprintf(h, "%s=%s\n", v, os.Getenv(v))
	}
	root := moduleRoot(files)
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			return "", err
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s %x\n", filepath.ToSlash(rel), sum)
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// moduleRoot is the directory of the go.mod among files.
func moduleRoot(files []string) string {
	for _, f := range files {
		if filepath.Base(f) == "go.mod" {
			return filepath.Dir(f)
		}
	}
	return "/"
}

// cacheDir returns the cache's directory, creating it.
func cacheDir() (string, error) {
	dir := os.Getenv(CacheEnv)
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "ax-test-bin")
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// lockFile takes an exclusive lock on path (created if missing), waiting
// for whoever holds it; the lock goes with the process if it dies.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// linkOrCopy makes dst the file src: a hard link, or a copy (another
// file system) with src's mode.
func linkOrCopy(src, dst string) error {
	_ = os.Remove(dst)
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// pruneCache removes all but the keep most recently used builds in dir.
// A build in use elsewhere is safe: its users hold links or copies. An
// entry being built is skipped (its lock is held). Lock files stay (a
// waiter may hold one open) until a day after their build is gone.
func pruneCache(dir string, keep int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type entry struct {
		name string
		used time.Time
	}
	var builds []entry
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".lock"); ok {
			info, err := e.Info()
			if _, serr := os.Stat(filepath.Join(dir, name)); err == nil && errors.Is(serr, fs.ErrNotExist) && time.Since(info.ModTime()) > 24*time.Hour {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
			continue
		}
		if !e.IsDir() {
			continue
		}
		if info, err := e.Info(); err == nil {
			builds = append(builds, entry{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(builds, func(i, j int) bool { return builds[i].used.After(builds[j].used) })
	for _, b := range builds[min(keep, len(builds)):] {
		lock := filepath.Join(dir, b.name+".lock")
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(filepath.Join(dir, b.name))
		}
		f.Close()
	}
}

// StatSources looks at files (what Install returns). A test that runs
// a built binary as a separate process is invisible to go test's result
// cache, which does see the files a test opens or stats: called from a
// test (not before testing.M.Run, when go test does not record them
// yet), a change to any of them runs the test again instead of answering
// "(cached)".
func StatSources(files []string) {
	for _, f := range files {
		_, _ = os.Stat(f)
	}
}
