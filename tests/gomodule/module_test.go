package gomodule

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// modulePath is ax's module path.
const modulePath = "github.com/ax-scheduler/ax"

// checkout is the root of the ax checkout under test.
func checkout(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil || !strings.HasPrefix(string(b), "module "+modulePath+"\n") {
		t.Fatalf("%s is not ax's checkout: %v", dir, err)
	}
	return dir
}

// goCmd runs the go command in dir with env added to the environment,
// bounded by ctx, failing t with its output on an error.
func goCmd(ctx context.Context, t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("go %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out.String())
	}
	return out.String()
}

// snippet is a ```go block of the documentation.
type snippet struct {
	file string // relative to the checkout
	line int    // of the block's first line of code
	code string
}

// goSnippets extracts every ```go block of README.md and docs/*.md.
func goSnippets(t *testing.T, root string) []snippet {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []snippet
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "```go" {
				continue
			}
			s := snippet{file: rel, line: i + 2}
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				s.code += lines[i] + "\n"
			}
			out = append(out, s)
		}
	}
	return out
}

// knownImports are the packages the snippets may use, by the name they
// use: a snippet's file imports those whose name it uses.
var knownImports = map[string]string{
	"context": "context", "fmt": "fmt", "json": "encoding/json", "time": "time", "strconv": "strconv",
	"math": "math", "hmac": "crypto/hmac", "sha256": "crypto/sha256", "hex": "encoding/hex", "http": "net/http",
	"os": "os", "errors": "errors", "strings": "strings",
	"worker": modulePath + "/worker", "client": modulePath + "/client", "model": modulePath + "/model",
	"tlsutil": modulePath + "/tlsutil", "notify": modulePath + "/notify", "embed": modulePath + "/embed",
}

// snippetFile is a Go file of the consumer module holding s verbatim:
// as it is when it declares functions, otherwise as the body of a
// function that has the variables the docs' fragments take as given (ctx,
// a client c, a payload p) and returns an error, each variable the
// fragment declares marked used.
func snippetFile(t *testing.T, s snippet, n int) string {
	t.Helper()
	body := s.code
	if !strings.HasPrefix(strings.TrimSpace(body), "func ") {
		fn := fmt.Sprintf("func snippet%d(ctx context.Context, c *client.Client, p json.RawMessage) error {\n", n)
		src := "package p\n" + fn + body + "}\n"
		f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
		if err != nil {
			t.Fatalf("%s:%d: the Go snippet does not parse as a function body: %v\n%s", s.file, s.line, err, body)
		}
		var used []string
		for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
			if as, ok := st.(*ast.AssignStmt); ok && as.Tok == token.DEFINE {
				for _, l := range as.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
						used = append(used, id.Name)
					}
				}
			}
		}
		body = fn + body
		for _, u := range used {
			body += "\t_ = " + u + "\n"
		}
		body += "\treturn nil\n}\n"
	}
	var imports []string
	for name, path := range knownImports {
		if regexp.MustCompile(`\b` + name + `\.`).MatchString(body) {
			imports = append(imports, fmt.Sprintf("\t%q\n", path))
		}
	}
	return fmt.Sprintf("// From %s:%d.\n\npackage consumer\n\nimport (\n%s)\n\n%s", s.file, s.line, strings.Join(imports, ""), body)
}

// TestConsumerModule: a fresh module that requires ax as a user's go get
// would (a replace to the checkout stands in for the published version,
// nothing else) builds the Go snippets of README.md and docs/*.md,
// copied verbatim: go mod tidy, go vet and go build pass.
func TestConsumerModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command (go mod tidy, vet, build): skipped with -short")
	}
	t.Parallel()
	root := checkout(t)
	snippets := goSnippets(t, root)
	if len(snippets) < 3 {
		t.Fatalf("%d Go snippets in README.md and docs/*.md, want at least 3 (the SDK worker, the Submitter, the webhook check)", len(snippets))
	}
	dir := t.TempDir()
	gomod := "module example.com/consumer\n\ngo 1.26\n\nrequire " + modulePath + " v0.0.0-00010101000000-000000000000\n\nreplace " + modulePath + " => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, s := range snippets {
		name := fmt.Sprintf("snippet%d_%s.go", i, strings.NewReplacer("/", "_", ".md", "").Replace(s.file))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(snippetFile(t, s, i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env := []string{"GOFLAGS=-mod=mod", "GOWORK=off"}
	goCmd(ctx, t, dir, env, "mod", "tidy")
	// The module graph has no replace but the checkout's: ax's go.mod
	// resolves on its own (it had a replace of go-metrics once, which a
	// consumer does not inherit).
	if b, _ := os.ReadFile(filepath.Join(dir, "go.mod")); strings.Count(string(b), "replace") != 1 {
		t.Errorf("go.mod after tidy:\n%s", b)
	}
	goCmd(ctx, t, dir, []string{"GOWORK=off"}, "vet", "./...")
	goCmd(ctx, t, dir, []string{"GOWORK=off"}, "build", "./...")
}

// gitFile is a file of the checkout for zip.Create.
type gitFile struct{ root, path string }

func (f gitFile) Path() string                 { return f.path }
func (f gitFile) Lstat() (os.FileInfo, error)  { return os.Lstat(filepath.Join(f.root, f.path)) }
func (f gitFile) Open() (io.ReadCloser, error) { return os.Open(filepath.Join(f.root, f.path)) }

// moduleZip writes the module zip of the checkout at root as version v:
// the files git tracks or would (not ignored), as they are in the work
// tree; the whole directory when it is not a git work tree.
func moduleZip(t *testing.T, root string, v module.Version, w io.Writer) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Logf("git ls-files: %v; zipping the directory", err)
		if err := zip.CreateFromDir(w, v, root); err != nil {
			t.Fatal(err)
		}
		return
	}
	var files []zip.File
	for _, p := range strings.Split(string(out), "\x00") {
		if p == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
			continue // deleted in the work tree
		}
		files = append(files, gitFile{root: root, path: p})
	}
	if err := zip.Create(w, v, files); err != nil {
		t.Fatal(err)
	}
}

// TestGoInstall: `go install github.com/ax-scheduler/ax/cmd/ax@VERSION`
// from a file-based module proxy that serves the checkout as VERSION (the
// dependencies from this machine's module cache, then its GOPROXY), as a
// user installs a release; the installed ax runs and says its version.
// VERSION is a pseudo-version naming the checkout's content, installed
// into the machine's module cache beside the dependencies (so that their
// compiled packages are reused, as on a user's machine) and removed from
// it when the test ends.
func TestGoInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go install from a module proxy: skipped with -short")
	}
	t.Parallel()
	root := checkout(t)
	var z bytes.Buffer
	moduleZip(t, root, module.Version{Path: modulePath, Version: "v0.0.0"}, &z)
	sum := sha256.Sum256(z.Bytes())
	version := "v0.0.0-20261203000000-" + hex.EncodeToString(sum[:6])
	z.Reset()
	moduleZip(t, root, module.Version{Path: modulePath, Version: version}, &z)
	proxy := t.TempDir()
	vdir := filepath.Join(proxy, modulePath, "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": fmt.Appendf(nil, `{"Version":%q,"Time":"2026-12-03T00:00:00Z"}`, version),
		version + ".mod":  gomod,
		version + ".zip":  z.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("module zip of the checkout: %d KiB, version %s", z.Len()>>10, version)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The dependencies come from this machine's module cache (itself a
	// file-based proxy) when it has them, else from its GOPROXY.
	cache := strings.TrimSpace(goCmd(ctx, t, root, nil, "env", "GOMODCACHE"))
	upstream := strings.TrimSpace(goCmd(ctx, t, root, nil, "env", "GOPROXY"))
	goproxy := "file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(cache, "cache", "download"))
	if upstream != "" && upstream != "off" {
		goproxy += "," + upstream
	}
	t.Cleanup(func() { // the checkout's version leaves the machine's module cache
		for _, p := range []string{
			filepath.Join(cache, modulePath+"@"+version),
			filepath.Join(cache, "cache", "download", modulePath, "@v", version+".zip"),
			filepath.Join(cache, "cache", "download", modulePath, "@v", version+".ziphash"),
			filepath.Join(cache, "cache", "download", modulePath, "@v", version+".mod"),
			filepath.Join(cache, "cache", "download", modulePath, "@v", version+".info"),
			filepath.Join(cache, "cache", "download", modulePath, "@v", version+".lock"),
			filepath.Join(cache, "cache", "download", modulePath, "@v", "list"), // the go command writes it anew
		} {
			if err := os.RemoveAll(p); err != nil {
				t.Errorf("remove the checkout's version from the module cache: %v", err)
			}
		}
	})
	gobin, work := t.TempDir(), t.TempDir()
	env := []string{
		"GOPROXY=" + goproxy,
		"GOBIN=" + gobin,
		"GONOSUMDB=" + modulePath,      // not in the checksum database
		"GOSUMDB=off",                  // the dependencies: no checksum database, no network beyond the proxy
		"GOFLAGS=-mod=mod -modcacherw", // the checkout's version removable at the end
		"GOWORK=off",
	}
	goCmd(ctx, t, work, env, "install", modulePath+"/cmd/ax@"+version)
	out, err := exec.CommandContext(ctx, filepath.Join(gobin, "ax"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ax "+version+" ") {
		t.Fatalf("the installed ax version: %q, %v; want ax %s ...", out, err, version)
	}
	t.Logf("installed: %s", strings.TrimSpace(string(out)))
}
