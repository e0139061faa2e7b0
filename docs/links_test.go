package docs

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestMarkdown_LinksResolve: every relative link of the repository's
// Markdown files (README.md, docs/*.md, the packages' DESIGN.md) names a
// file or directory inside the repository, and every #anchor a heading of
// the Markdown file it points into. External links (a scheme, or //host)
// are not followed.
func TestMarkdown_LinksResolve(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	for _, want := range []string{"README.md", "docs/performance.md", "fsm/DESIGN.md"} {
		if !slices.Contains(files, want) {
			t.Fatalf("%s not found among the Markdown files %q", want, files)
		}
	}
	scans := map[string]scan{}
	scanOf := func(rel string) scan {
		if s, ok := scans[rel]; ok {
			return s
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		s := scanMarkdown(string(b))
		scans[rel] = s
		return s
	}
	checked := 0
	for _, file := range files {
		for _, l := range scanOf(file).links {
			if isExternal(l.target) {
				continue
			}
			checked++
			if err := resolve(root, file, l.target, scanOf); err != nil {
				t.Errorf("%s:%d: link %q: %v", file, l.line, l.target, err)
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links checked; the scan is missing links", checked)
	}
}

// resolve checks one relative link of file (a path relative to root).
func resolve(root, file, target string, scanOf func(string) scan) error {
	path, frag, _ := strings.Cut(target, "#")
	path, _, _ = strings.Cut(path, "?")
	dest := file
	if path != "" {
		p, err := url.PathUnescape(path)
		if err != nil {
			return err
		}
		if strings.HasPrefix(p, "/") {
			return fmt.Errorf("an absolute path: write it relative to %s", filepath.Dir(file))
		}
		dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), p)))
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return fmt.Errorf("points outside the repository (%s)", dest)
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
			return fmt.Errorf("no such file or directory in the repository: %s", dest)
		}
	}
	if frag == "" || !strings.HasSuffix(dest, ".md") {
		return nil
	}
	if !scanOf(dest).anchors[frag] {
		return fmt.Errorf("%s has no heading with the anchor #%s", dest, frag)
	}
	return nil
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// isExternal reports whether a link leaves the repository: a URL with a
// scheme (https:, mailto:) or a network-path reference (//host/...).
func isExternal(target string) bool {
	return scheme.MatchString(target) || strings.HasPrefix(target, "//")
}

// repoRoot is the directory holding go.mod, above this package's.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// markdownFiles lists the repository's .md files as slash paths relative
// to root, leaving out hidden directories and testdata.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// mdLink is a link destination in a Markdown file and the line it is on.
type mdLink struct {
	line   int
	target string
}

// scan is what a Markdown file links to and the anchors its headings make.
type scan struct {
	links   []mdLink
	anchors map[string]bool
}

var (
	// inlineDest is the destination of an inline link or image,
	// [text](dest) or [text](dest "title").
	inlineDest = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// refDef is a link reference definition, [label]: dest.
	refDef = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// atxHeading is a # heading; group 2 its text.
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	// fence opens or closes a fenced code block (indented ones too: they
	// sit in list items).
	fence = regexp.MustCompile("^[ \t]*(`{3,}|~{3,})")
	// linkText turns [text](dest) into text, for headings.
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// scanMarkdown finds the links and heading anchors of a Markdown document,
// leaving out fenced code blocks and code spans. Headings are ATX (#)
// headings, the only kind ax's documents use.
func scanMarkdown(md string) scan {
	s := scan{anchors: map[string]bool{}}
	seen := map[string]int{}
	open := "" // the fence of the code block the line is in
	for i, line := range strings.Split(md, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
				continue
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line) == m[1]:
				open = ""
				continue
			}
		}
		if open != "" {
			continue
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			slug := slugify(m[2])
			if n := seen[slug]; n > 0 {
				s.anchors[fmt.Sprintf("%s-%d", slug, n)] = true
			} else {
				s.anchors[slug] = true
			}
			seen[slug]++
		}
		text := stripCodeSpans(line)
		if m := refDef.FindStringSubmatch(text); m != nil {
			s.links = append(s.links, mdLink{i + 1, m[1]})
		}
		for _, m := range inlineDest.FindAllStringSubmatch(text, -1) {
			if m[1] != "" {
				s.links = append(s.links, mdLink{i + 1, m[1]})
			}
		}
	}
	return s
}

// slugify is the anchor GitHub gives a heading: its text lowercased,
// without punctuation (code marks, colons, parentheses, dashes other than
// -), each space a hyphen.
func slugify(heading string) string {
	heading = linkText.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// stripCodeSpans blanks the code spans of a line (text between two equal
// runs of backticks), so that what looks like a link inside code is not
// taken for one.
func stripCodeSpans(line string) string {
	b := []byte(line)
	for i := 0; i < len(b); {
		n := backticks(b, i)
		if n == 0 {
			i++
			continue
		}
		end := closingRun(b, i+n, n)
		if end < 0 {
			i += n
			continue
		}
		for j := i; j < end+n; j++ {
			b[j] = ' '
		}
		i = end + n
	}
	return string(b)
}

// closingRun is where the next run of exactly n backticks at or after
// from starts, or -1.
func closingRun(b []byte, from, n int) int {
	for i := from; i < len(b); {
		k := backticks(b, i)
		switch {
		case k == n:
			return i
		case k == 0:
			i++
		default:
			i += k
		}
	}
	return -1
}

// backticks is the length of the run of backticks starting at b[i].
func backticks(b []byte, i int) int {
	n := 0
	for i+n < len(b) && b[i+n] == '`' {
		n++
	}
	return n
}

func TestSlugify(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"The two commands", "the-two-commands"},
		{"Task writes (issue 2)", "task-writes-issue-2"},
		{"GitOps: task definitions in files", "gitops-task-definitions-in-files"},
		{"ax — a replicated job scheduler in one binary", "ax--a-replicated-job-scheduler-in-one-binary"},
		{"`GET /v1/events`, the event stream", "get-v1events-the-event-stream"},
		{"Protocol 5 and [upgrades](#upgrades)", "protocol-5-and-upgrades"},
		{"Soak: flat disk and memory", "soak-flat-disk-and-memory"},
		{"max_queued and TLS 1.3", "max_queued-and-tls-13"},
	} {
		if got := slugify(tc.heading); got != tc.want {
			t.Errorf("slugify(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestScanMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		md      string
		links   []mdLink
		anchors []string
	}{
		{
			name:  "inline links, images, titles, reference definitions",
			md:    "See [a](docs/a.md#x), ![img](shots/o.png \"Overview\") and [b][].\n\n[b]: docs/b.md\n[hr]: https://github.com/hashicorp/raft\n",
			links: []mdLink{{1, "docs/a.md#x"}, {1, "shots/o.png"}, {3, "docs/b.md"}, {4, "https://github.com/hashicorp/raft"}},
		},
		{
			name:  "nothing in code spans or fenced blocks, indented fences too",
			md:    "`[x](no.md)` and ``a ` [y](no2.md)``\n```go\nm := a[i](j)\n# not a heading\n```\n- item:\n  ~~~\n  [z](no3.md)\n  ~~~\n[ok](yes.md)",
			links: []mdLink{{10, "yes.md"}},
		},
		{
			name:    "headings and their duplicates",
			md:      "# Title\n## Usage\ntext\n### Usage\n#### Closing hashes ##\n#nospace",
			anchors: []string{"title", "usage", "usage-1", "closing-hashes"},
		},
		{
			name:    "a longer fence is closed only by one as long",
			md:      "````\n```\n[in](code.md)\n```\n## In code\n````\n## After",
			anchors: []string{"after"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scanMarkdown(tc.md)
			if !reflect.DeepEqual(s.links, tc.links) {
				t.Errorf("links %v, want %v", s.links, tc.links)
			}
			var anchors []string
			for a := range s.anchors {
				anchors = append(anchors, a)
			}
			slices.Sort(anchors)
			want := slices.Clone(tc.anchors)
			slices.Sort(want)
			if !slices.Equal(anchors, want) {
				t.Errorf("anchors %q, want %q", anchors, want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	root := t.TempDir()
	for name, content := range map[string]string{
		"README.md":     "# ax\n## The two commands\n",
		"docs/guide.md": "# Guide\n## Upgrades\n",
		"fsm/DESIGN.md": "# fsm\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scanOf := func(rel string) scan {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return scanMarkdown(string(b))
	}
	for _, tc := range []struct {
		file, target, wantErr string
	}{
		{"README.md", "docs/guide.md", ""},
		{"README.md", "docs/guide.md#upgrades", ""},
		{"README.md", "#the-two-commands", ""},
		{"README.md", "fsm/", ""},
		{"docs/guide.md", "../fsm/DESIGN.md", ""},
		{"docs/guide.md", "../README.md#the-two-commands", ""},
		{"docs/guide.md", "guide.md#nope", "no heading with the anchor #nope"},
		{"README.md", "#upgrades", "no heading with the anchor #upgrades"},
		{"README.md", "docs/missing.md", "no such file"},
		{"README.md", "../shared/DESIGN.md", "outside the repository"},
		{"docs/guide.md", "../../x.md", "outside the repository"},
		{"README.md", "/docs/guide.md", "an absolute path"},
	} {
		err := resolve(root, tc.file, tc.target, scanOf)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s -> %s: %v", tc.file, tc.target, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s -> %s: got %v, want an error containing %q", tc.file, tc.target, err, tc.wantErr)
		}
	}
	for _, tc := range []struct {
		target string
		want   bool
	}{
		{"https://github.com/etcd-io/bbolt", true},
		{"mailto:ops@example.com", true},
		{"//example.com/x", true},
		{"docs/api.md", false},
		{"#performance", false},
	} {
		if got := isExternal(tc.target); got != tc.want {
			t.Errorf("isExternal(%q) = %v, want %v", tc.target, got, tc.want)
		}
	}
}
