package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The shape of the code (design.md, Packages and layers): bounds on the
// size of a package and of a type's method set, and the layers, checked
// from the sources (non-test files only) so that the design notes and
// the code cannot drift apart. `go test ./docs -run TestShape -v` prints
// the package map: lines per package, and the type with the most
// methods in each.
const (
	maxPackageLines = 3000 // fsm excepted
	maxTypeMethods  = 40
	module          = "github.com/ax-scheduler/ax"
)

// shapeDebts are the known exceptions to the bounds, each with why it
// stands; the test fails on any other excess, and on a debt that is paid
// (so that its entry goes too).
var shapeDebts = map[string]string{}

// goPackage is one directory's non-test Go files.
type goPackage struct {
	dir     string // relative to the repository, slash-separated
	lines   int
	methods map[string]int // receiver type -> methods
	imports map[string]bool
}

// loadPackages parses every non-test Go file of the repository.
func loadPackages(t *testing.T, root string) map[string]*goPackage {
	t.Helper()
	pkgs := map[string]*goPackage{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" && strings.Contains(path, string(filepath.Separator)+"scripts"+string(filepath.Separator)) {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		p := pkgs[rel]
		if p == nil {
			p = &goPackage{dir: rel, methods: map[string]int{}, imports: map[string]bool{}}
			pkgs[rel] = p
		}
		p.lines += strings.Count(string(src), "\n")
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if rest, ok := strings.CutPrefix(path, module+"/"); ok {
				p.imports[rest] = true
			}
		}
		full, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		for _, decl := range full.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
				continue
			}
			p.methods[receiverName(fn.Recv.List[0].Type)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func receiverName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.IndexExpr:
		return receiverName(x.X)
	case *ast.IndexListExpr:
		return receiverName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// layerRow is a row of design.md's layer table: "| N | `pkg`, `pkg/...` |".
var layerRow = regexp.MustCompile(`^\| (\d+) \| (.*) \|`)

// designLayers reads the layer of every package from docs/design.md:
// `dir` names a package, `dir/...` a package and those under it.
func designLayers(t *testing.T, root string) (exact, prefix map[string]int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	exact, prefix = map[string]int{}, map[string]int{}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Layers"
			continue
		}
		m := layerRow.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		cell := strings.SplitN(m[2], " |", 2)[0]
		for _, q := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cell, -1) {
			if dir, ok := strings.CutSuffix(q[1], "/..."); ok {
				prefix[dir] = n
			} else {
				exact[q[1]] = n
			}
		}
	}
	if len(exact) == 0 {
		t.Fatal("docs/design.md has no layer table (## Layers)")
	}
	return exact, prefix
}

func layerOf(dir string, exact, prefix map[string]int) (int, bool) {
	if n, ok := exact[dir]; ok {
		return n, true
	}
	for d := dir; d != "." && d != ""; d = filepath.ToSlash(filepath.Dir(d)) {
		if n, ok := prefix[d]; ok {
			return n, true
		}
	}
	return 0, false
}

// debt reports an excess over the bounds: an error unless shapeDebts
// lists it.
var debt func(t *testing.T, key, format string, args ...any)

// TestShape: no package but fsm holds more than maxPackageLines lines of
// non-test Go, no type has more than maxTypeMethods methods, every
// package has a layer in design.md, and a package imports only packages
// of lower layers (so there is no import cycle by construction).
func TestShape(t *testing.T) {
	paid := map[string]bool{}
	for k := range shapeDebts {
		paid[k] = true
	}
	debt = func(t *testing.T, key, format string, args ...any) {
		t.Helper()
		if _, ok := shapeDebts[key]; ok {
			delete(paid, key)
			t.Logf("known debt: "+format+" (%s)", append(args, shapeDebts[key])...)
			return
		}
		t.Errorf(format, args...)
	}
	defer func() {
		for k := range paid {
			t.Errorf("%s is within the bounds now: remove it from shapeDebts", k)
		}
	}()
	root := repoRoot(t)
	pkgs := loadPackages(t, root)
	exact, prefix := designLayers(t, root)
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		p := pkgs[d]
		top, most := "", 0
		for typ, n := range p.methods {
			if n > most || n == most && typ < top {
				top, most = typ, n
			}
			if n > maxTypeMethods {
				debt(t, d+"."+typ, "%s: type %s has %d methods (at most %d)", d, typ, n, maxTypeMethods)
			}
		}
		layer, ok := layerOf(d, exact, prefix)
		if !ok {
			t.Errorf("%s: no layer in docs/design.md (## Layers)", d)
		}
		t.Logf("%-22s layer %d  %5d lines  most methods: %s (%d)", d, layer, p.lines, top, most)
		if p.lines > maxPackageLines && d != "fsm" {
			debt(t, d, "%s: %d lines of non-test Go (at most %d)", d, p.lines, maxPackageLines)
		}
		for im := range p.imports {
			il, ok := layerOf(im, exact, prefix)
			if ok && il >= layer && im != d {
				t.Errorf("%s (layer %d) imports %s (layer %d): only lower layers may be imported", d, layer, im, il)
			}
		}
	}
}
