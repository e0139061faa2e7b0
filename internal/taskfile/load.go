package taskfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ax-scheduler/ax/internal/yamljson"
	"github.com/ax-scheduler/ax/model"
)

// maxManifest bounds one file (or stdin) read by task apply.
const maxManifest = 16 << 20

// manifestExts are the files task apply reads from a directory.
var manifestExts = []string{".json", ".yaml", ".yml"}

// serverFields are the task fields the server owns: a definition file may
// carry them (a saved `task get`), and apply drops them. version is kept
// only with -check-version, where it is a precondition.
var serverFields = []string{"createdAt", "updatedAt", "updatedBy", "nextFireTimes", "runs", "completed"}

// Doc is one task definition read for task apply.
type Doc struct {
	name string
	body []byte // the JSON sent to PUT /v1/tasks/{name}

	file  string // as given, or <stdin>
	line  int    // where the definition starts (1-based)
	doc   int    // the YAML document (1-based), 0 for JSON
	item  int    // the item of a top-level list (1-based), 0 if none
	tree  *yaml.Node
	delta int // added to tree's lines to make them the file's
}

// pos says where the definition is: "file:line (document 2, item 3)".
func (d *Doc) pos() string { return d.posAt(d.line) }

func (d *Doc) posAt(line int) string {
	var in []string
	if d.doc > 0 {
		in = append(in, "document "+strconv.Itoa(d.doc))
	}
	if d.item > 0 {
		in = append(in, "item "+strconv.Itoa(d.item))
	}
	s := d.file + ":" + strconv.Itoa(line)
	if len(in) > 0 {
		s += " (" + strings.Join(in, ", ") + ")"
	}
	return s
}

// fieldPos says where a field named by an API error ("trigger.expression",
// "policy.onSuccess[0].task") is in the file, or where the definition
// starts if it cannot be found.
func (d *Doc) fieldPos(field string) string {
	if d.tree == nil || field == "" {
		return d.pos()
	}
	if n := findField(d.tree, field); n != nil {
		return d.posAt(n.Line + d.delta)
	}
	return d.pos()
}

// findField returns the node of a dotted path in a mapping (the key node
// for a mapping entry, so that the line is the key's), or the deepest node
// on the path it could follow; nil when not even the first step exists.
// Keys may contain dots (labels), so the longest key matching the path
// wins.
func findField(n *yaml.Node, path string) *yaml.Node {
	var found *yaml.Node
	for path != "" {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.MappingNode:
			best := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if (path == k || strings.HasPrefix(path, k+".") || strings.HasPrefix(path, k+"[")) && (best < 0 || len(k) > len(n.Content[best].Value)) {
					best = i
				}
			}
			if best < 0 {
				return found
			}
			found = n.Content[best]
			path = strings.TrimPrefix(path[len(found.Value):], ".")
			n = n.Content[best+1]
		case yaml.SequenceNode:
			end := strings.IndexByte(path, ']')
			if !strings.HasPrefix(path, "[") || end < 0 {
				return found
			}
			i, err := strconv.Atoi(path[1:end])
			if err != nil || i < 0 || i >= len(n.Content) {
				return found
			}
			n = n.Content[i]
			found = n
			path = strings.TrimPrefix(path[end+1:], ".")
		default:
			return found
		}
	}
	return found
}

// Options say how definitions are read.
type Options struct {
	// KeepVersion keeps a document's version (a precondition) instead of
	// dropping it with the other server fields.
	KeepVersion bool
}

// Load reads the definitions of paths: files, directories (their
// *.json, *.yaml and *.yml files in name order, not their
// subdirectories) and "-" for stdin. It checks what can be checked without
// the server (a name on every definition, valid and not repeated) and
// reports every problem found, each with its file and line; nothing is
// applied unless all of them load.
func Load(paths []string, stdin io.Reader, opts Options) ([]Doc, error) {
	var files []string
	var errs []error
	for _, p := range paths {
		if p == "-" {
			files = append(files, p)
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n := 0
		for _, e := range ents { // ReadDir sorts by name
			if e.Type().IsRegular() && slices.Contains(manifestExts, strings.ToLower(filepath.Ext(e.Name()))) && !strings.HasPrefix(e.Name(), ".") {
				files = append(files, filepath.Join(p, e.Name()))
				n++
			}
		}
		if n == 0 {
			errs = append(errs, fmt.Errorf("%s: no *.json, *.yaml or *.yml files", p))
		}
	}
	var docs []Doc
	for _, f := range files {
		data, name, err := readManifest(f, stdin)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var ds []Doc
		if isJSON(f, data) {
			ds, err = parseJSONDocs(name, data)
		} else {
			ds, err = parseYAMLDocs(name, data)
		}
		if err != nil {
			errs = append(errs, err)
		}
		docs = append(docs, ds...)
	}
	seen := map[string]*Doc{}
	out := docs[:0]
	for i := range docs {
		d := &docs[i]
		if e := prepareDoc(d, opts); e != nil {
			errs = append(errs, e)
			continue
		}
		if first, ok := seen[d.name]; ok {
			errs = append(errs, fmt.Errorf("%s: task %s is defined twice: first at %s", d.pos(), d.name, first.pos()))
			continue
		}
		seen[d.name] = d
		out = append(out, *d)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, errors.New("no task definitions in " + strings.Join(paths, ", "))
	}
	return out, nil
}

// readManifest reads a file (or stdin for "-") and returns it with the
// name errors give it.
func readManifest(path string, stdin io.Reader) ([]byte, string, error) {
	name := path
	var r io.Reader = stdin
	if path == "-" {
		name = "<stdin>"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, name, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxManifest+1))
	if err != nil {
		return nil, name, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxManifest {
		return nil, name, fmt.Errorf("%s: larger than %d MiB", name, maxManifest>>20)
	}
	return data, name, nil
}

// isJSON tells JSON from YAML: by the extension, else (stdin, another
// extension) by the first character.
func isJSON(path string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		return true
	case ".yaml", ".yml":
		return false
	}
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// lineAt returns the 1-based line of a byte offset.
func lineAt(data []byte, off int64) int {
	return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n"))
}

// parseJSONDocs reads a JSON object or an array of them, or several such
// values one after another (a JSON stream, as jq -c writes it: the JSON
// counterpart of YAML's --- documents). Each definition is sent as
// written (less the server fields), so the server judges its unknown
// fields. With more than one value, positions name the document.
func parseJSONDocs(file string, data []byte) ([]Doc, error) {
	jsonErr := func(err error, start int64) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%s:%d: %v", file, lineAt(data, se.Offset), err)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%s:%d: the JSON value that starts here is not closed before the end of the file", file, lineAt(data, start))
		}
		return fmt.Errorf("%s:%d: %v", file, lineAt(data, start), err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []Doc
	docs := 0
	for {
		// The next value starts at its first character after blanks.
		off := dec.InputOffset()
		rest := bytes.TrimLeft(data[off:], " \t\r\n")
		if len(rest) == 0 {
			break
		}
		start := int64(len(data) - len(rest))
		docs++
		if rest[0] != '[' {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, jsonErr(err, start)
			}
			d := jsonDoc(file, data, start, 0, raw)
			d.doc = docs
			out = append(out, d)
			continue
		}
		if _, err := dec.Token(); err != nil {
			return nil, jsonErr(err, start)
		}
		for item := 1; dec.More(); item++ {
			off := dec.InputOffset()
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, jsonErr(err, start)
			}
			// The item starts at its first character after the separator.
			rest := data[off:]
			off += int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n,")))
			d := jsonDoc(file, data, off, item, raw)
			d.doc = docs
			out = append(out, d)
		}
		if _, err := dec.Token(); err != nil { // the closing ]
			return nil, jsonErr(err, start)
		}
	}
	if docs == 0 {
		return nil, fmt.Errorf("%s: empty", file)
	}
	if docs == 1 { // one value: its position needs no document number
		for i := range out {
			out[i].doc = 0
		}
	}
	return out, nil
}

// jsonDoc is the definition raw at offset off of data. JSON is YAML, so
// the YAML parser finds the lines of fields named by the server's errors
// (when it can read it: it is only a help).
func jsonDoc(file string, data []byte, off int64, item int, raw json.RawMessage) Doc {
	d := Doc{file: file, line: lineAt(data, off), item: item, body: raw}
	var n yaml.Node
	if yaml.Unmarshal(raw, &n) == nil && len(n.Content) == 1 {
		d.tree, d.delta = n.Content[0], d.line-1
	}
	return d
}

// parseYAMLDocs reads YAML documents (separated by ---): each a mapping
// (one definition) or a sequence of them; empty documents are skipped.
func parseYAMLDocs(file string, data []byte) ([]Doc, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []Doc
	for doc := 1; ; doc++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, yamlError(file, doc, 0, err)
		}
		if len(n.Content) == 0 {
			continue
		}
		root := n.Content[0]
		switch {
		case root.Kind == yaml.ScalarNode && root.Tag == "!!null":
			continue // an empty document
		case root.Kind == yaml.SequenceNode:
			for i, it := range root.Content {
				d, err := yamlDoc(file, doc, i+1, it)
				if err != nil {
					return out, err
				}
				out = append(out, d)
			}
		default:
			d, err := yamlDoc(file, doc, 0, root)
			if err != nil {
				return out, err
			}
			out = append(out, d)
		}
	}
}

// yamlLine matches the line yaml.v3 puts in its messages.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlError rewrites a YAML error as "file:line (document N): message",
// one line per problem; line is used when the message has none.
func yamlError(file string, doc, line int, err error) error {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	var errs []error
	for _, m := range msgs {
		l, text := line, strings.TrimPrefix(m, "yaml: ")
		if sm := yamlLine.FindStringSubmatch(m); sm != nil {
			l, _ = strconv.Atoi(sm[1])
			text = sm[2]
		}
		where := file
		if l > 0 {
			where += ":" + strconv.Itoa(l)
		}
		errs = append(errs, fmt.Errorf("%s (document %d): %s", where, doc, text))
	}
	return errors.Join(errs...)
}

// yamlDoc converts one YAML definition to the JSON the API takes.
func yamlDoc(file string, doc, item int, n *yaml.Node) (Doc, error) {
	d := Doc{file: file, line: n.Line, doc: doc, item: item, tree: n}
	var v any
	if err := n.Decode(&v); err != nil {
		return d, yamlError(file, doc, n.Line, err)
	}
	j, err := yamljson.Value(v, "")
	if err != nil {
		return d, fmt.Errorf("%s: %v", d.pos(), err)
	}
	if d.body, err = json.Marshal(j); err != nil {
		return d, fmt.Errorf("%s: %v", d.pos(), err)
	}
	return d, nil
}

// prepareDoc checks a definition's name and drops the server's fields
// from its body.
func prepareDoc(d *Doc, opts Options) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(d.body, &obj); err != nil || obj == nil {
		return fmt.Errorf("%s: a task definition must be an object (a mapping)", d.pos())
	}
	raw, ok := obj["name"]
	if !ok {
		return fmt.Errorf("%s: name is required", d.pos())
	}
	if err := json.Unmarshal(raw, &d.name); err != nil {
		return fmt.Errorf("%s: name must be a string", d.fieldPos("name"))
	}
	if err := model.ValidateName("name", d.name); err != nil {
		return fmt.Errorf("%s: %v", d.fieldPos("name"), err)
	}
	drop := serverFields
	if !opts.KeepVersion {
		drop = append(slices.Clip(drop), "version")
	}
	n := len(obj)
	for _, f := range drop {
		delete(obj, f)
	}
	if len(obj) != n {
		b, err := json.Marshal(obj)
		if err != nil {
			return fmt.Errorf("%s: %v", d.pos(), err)
		}
		d.body = b
	}
	return nil
}
