package journeys

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// This file reads the examples out of the documentation for
// TestDocs_ExamplesRun (docs_test.go): the fenced code blocks, their
// markers, and the commands a shell block runs. docs/testing.md
// describes the rules.

// docBlock is a fenced code block of a Markdown file.
type docBlock struct {
	file  string   // relative to the repository root
	line  int      // the opening fence's line (1-based); content line i is line+1+i
	lang  string   // the info string's first word ("sh", "json", "" ...)
	lines []string // the content, without the fences and their indentation
	kind  string   // the marker before it: "run", "illustrative" or ""
	arg   string   // the marker's argument: a deployment, or the reason
}

// where names the block: "README.md:114".
func (b docBlock) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// lineOf is the Markdown line of content line i.
func (b docBlock) lineOf(i int) int { return b.line + 1 + i }

var (
	// docFence opens or closes a fenced block: its indentation, the fence
	// and the info string's first word.
	docFence = regexp.MustCompile("^([ \t]*)(`{3,}|~{3,})[ \t]*([^`\\s]*)")
	// docMarker is the HTML comment that says what the test does with
	// the block after it: <!-- run: single --> or <!-- illustrative: why -->.
	docMarker = regexp.MustCompile(`^\s*<!--\s*(run|illustrative)\s*:\s*(.*?)\s*-->\s*$`)
	// docCommand is a line that runs ax or curl (after a $ prompt, or in
	// a pipe).
	docCommand = regexp.MustCompile(`(^\s*(\$ )?(ax|curl)\s)|(\|\s*ax\s)`)
)

// docScanBlocks returns the fenced code blocks of a Markdown file, with
// the marker on the last non-blank line before each.
func docScanBlocks(file, md string) []docBlock {
	var out []docBlock
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		m := docFence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		b := docBlock{file: file, line: i + 1, lang: strings.ToLower(m[3])}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if mm := docMarker.FindStringSubmatch(lines[j]); mm != nil {
				b.kind, b.arg = mm[1], mm[2]
			}
			break
		}
		indent, fence := m[1], m[2]
		for i++; i < len(lines); i++ {
			l := lines[i]
			if t := strings.TrimSpace(l); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				break
			}
			b.lines = append(b.lines, strings.TrimPrefix(l, indent))
		}
		out = append(out, b)
	}
	return out
}

// isShell reports whether a block is a shell session by its language.
func (b docBlock) isShell() bool {
	switch b.lang {
	case "sh", "bash", "shell", "console", "zsh":
		return true
	}
	return false
}

// hasCommand reports whether the block runs ax or curl somewhere.
func (b docBlock) hasCommand() bool {
	for _, l := range b.lines {
		if docCommand.MatchString(l) {
			return true
		}
	}
	return false
}

// needsMarker: every shell block, and an untagged block that runs ax or
// curl, must say whether the test runs it.
func (b docBlock) needsMarker() bool {
	return b.isShell() || (b.lang == "" && b.hasCommand())
}

// isTranscript: a block of "$ command" lines followed by their output.
func (b docBlock) isTranscript() bool {
	for _, l := range b.lines {
		if strings.HasPrefix(l, "$ ") {
			return true
		}
	}
	return false
}

// docCmd is one command of a shell block.
type docCmd struct {
	first, last int      // its content lines (a command may continue with \)
	text        string   // as written, its lines joined
	kind        string   // "agent", "background", "interrupt" or ""
	args        []string // its words before any # comment
	output      []string // in a transcript, the output shown after it
}

// docScript is what bash runs for a shell block: one line per content
// line, so that a line bash reports is the block's line.
type docScript struct {
	lines []string // the script: commands as written, adjusted (see docPrepareShell)
	cmds  []docCmd // the commands starting with ax, or every $ command of a transcript
}

// docPrepareShell reads a shell block's commands and makes its script:
// "$ " prompts are dropped and a transcript's output lines blanked;
// an `ax agent` command is blanked (the test starts the deployment);
// `ax executor` runs in the background (axdoc_background) and a command
// that watches until Ctrl-C (-w) is interrupted once it has drawn
// (axdoc_interrupt).
func docPrepareShell(b docBlock) docScript {
	s := docScript{lines: make([]string, len(b.lines))}
	transcript := b.isTranscript()
	cur := -1 // the command a line continues, or -1
	for i, l := range b.lines {
		switch {
		case cur >= 0: // a continuation line
			c := &s.cmds[cur]
			c.last, c.text = i, c.text+"\n"+l
			s.lines[i] = l
		case transcript && strings.HasPrefix(l, "$ "):
			s.cmds = append(s.cmds, docCmd{first: i, last: i, text: l[2:]})
			cur = len(s.cmds) - 1
			s.lines[i] = l[2:]
		case transcript:
			if n := len(s.cmds); n > 0 {
				s.cmds[n-1].output = append(s.cmds[n-1].output, l)
			}
			continue
		case strings.HasPrefix(strings.TrimSpace(l), "ax "):
			s.cmds = append(s.cmds, docCmd{first: i, last: i, text: l})
			cur = len(s.cmds) - 1
			s.lines[i] = l
		default:
			s.lines[i] = l
			continue
		}
		if !strings.HasSuffix(strings.TrimRight(l, " \t"), "\\") {
			cur = -1
		}
	}
	for i := range s.cmds {
		c := &s.cmds[i]
		for _, w := range strings.Fields(strings.ReplaceAll(c.text, "\\\n", " ")) {
			if strings.HasPrefix(w, "#") {
				break
			}
			c.args = append(c.args, w)
		}
		switch {
		case len(c.args) >= 2 && c.args[0] == "ax" && c.args[1] == "agent":
			c.kind = "agent"
			for j := c.first; j <= c.last; j++ {
				s.lines[j] = ""
			}
		case len(c.args) >= 2 && c.args[0] == "ax" && c.args[1] == "executor":
			c.kind = "background"
		case len(c.args) >= 1 && c.args[0] == "ax" && slices.Contains(c.args, "-w"):
			c.kind = "interrupt"
		}
		if c.kind == "background" || c.kind == "interrupt" {
			s.lines[c.first] = "axdoc_" + c.kind + " " + strings.TrimLeft(s.lines[c.first], " \t")
		}
	}
	return s
}

// only returns the script with every line outside [first, last] blank.
func (s docScript) only(first, last int) []string {
	out := make([]string, len(s.lines))
	for i := first; i <= last && i < len(s.lines); i++ {
		out[i] = s.lines[i]
	}
	return out
}

// docAgentFlagsOK checks that an `ax agent` command of a block uses only
// flags ax agent has (known: its flag names, without the dash).
func docAgentFlagsOK(c docCmd, known map[string]bool) error {
	var bad []string
	for _, w := range c.args[2:] {
		if !strings.HasPrefix(w, "-") || w == "-" || strings.Trim(w, "-0123456789.") == "" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !known[name] {
			bad = append(bad, w)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("not flags of ax agent: %s", strings.Join(bad, " "))
	}
	return nil
}

// docAgentFileFlags are the ax agent flags that name a file to read.
var docAgentFileFlags = []string{"config", "encrypt-key-file", "restore", "tls-ca", "tls-cert", "tls-key", "token-file"}

// docAgentFiles are the files an `ax agent` command reads, as written.
func docAgentFiles(c docCmd) []string {
	var out []string
	for i := 2; i < len(c.args); i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(c.args[i], "-"), "=")
		if !strings.HasPrefix(c.args[i], "-") || !slices.Contains(docAgentFileFlags, name) {
			continue
		}
		if !hasVal {
			if i+1 >= len(c.args) {
				break
			}
			i++
			val = c.args[i]
		}
		out = append(out, val)
	}
	return out
}

// docAgentFlagRE finds the flags in `ax agent -h`.
var docAgentFlagRE = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)

// docRewriteAddrs replaces each address of the documentation (a key of
// addrs) by the deployment's, where it stands as a whole address: not
// inside a longer host name or port.
func docRewriteAddrs(s string, addrs map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		matched := ""
		if i == 0 || !docIsHostChar(s[i-1]) {
			for from := range addrs {
				if strings.HasPrefix(s[i:], from) && len(from) > len(matched) &&
					(i+len(from) == len(s) || !docIsDigit(s[i+len(from)])) {
					matched = from
				}
			}
		}
		if matched != "" {
			b.WriteString(addrs[matched])
			i += len(matched)
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func docIsDigit(c byte) bool { return c >= '0' && c <= '9' }

func docIsHostChar(c byte) bool {
	return docIsDigit(c) || c == '.' || c == '-' || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// docTableHeader is a line of column names, as a table's first line.
var docTableHeader = regexp.MustCompile(`^[A-Z][A-Z]*( +[A-Z][A-Z]*)+$`)

// docCompareOutput checks what a transcript's command printed (and how it
// ended: runErr) against the output the block shows: "ax: " lines are
// the error the command must fail with, each printed as shown; a table
// header must be the same columns, and a JSON line the same JSON (times,
// ids and ages differ from run to run, so other lines are not compared).
func docCompareOutput(want []string, out docOutput, runErr error) error {
	var errLines []string
	for _, w := range want {
		if strings.HasPrefix(w, "ax: ") {
			errLines = append(errLines, w)
		}
	}
	switch {
	case len(errLines) > 0 && runErr == nil:
		return fmt.Errorf("it succeeded; the documentation shows it failing with %q", errLines[0])
	case len(errLines) == 0 && runErr != nil:
		return runErr
	}
	stderrLines := strings.Split(out.stderr, "\n")
	for _, w := range errLines {
		if !slices.Contains(stderrLines, w) {
			return fmt.Errorf("it did not print %q; it printed:\n%s", w, out.stderr)
		}
	}
	gotLines := strings.Split(strings.TrimRight(out.stdout, "\n"), "\n")
	if len(want) > 0 && docTableHeader.MatchString(strings.TrimSpace(want[0])) {
		if w, g := strings.Join(strings.Fields(want[0]), " "), strings.Join(strings.Fields(gotLines[0]), " "); w != g {
			return fmt.Errorf("the table's header is %q, the documentation shows %q", g, w)
		}
	}
	for _, w := range want {
		if !strings.HasPrefix(strings.TrimSpace(w), "{") {
			continue
		}
		var wv any
		if err := json.Unmarshal([]byte(w), &wv); err != nil {
			return fmt.Errorf("the documentation's output %s is not JSON: %v", w, err)
		}
		found := false
		for _, g := range gotLines {
			var gv any
			if json.Unmarshal([]byte(g), &gv) == nil && reflect.DeepEqual(gv, wv) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("the output has no line equal to the documentation's %s", w)
		}
	}
	return nil
}

// dataDoc is what a JSON or YAML block holds: "task" (definitions ax
// task apply takes), "channel" (a notification channel for ax channel
// apply), or "" (other data, only parsed).
func docDataKind(b docBlock) (string, error) {
	text := strings.Join(b.lines, "\n")
	var dec interface{ Decode(any) error } = yaml.NewDecoder(strings.NewReader(text))
	if b.lang == "json" {
		dec = json.NewDecoder(strings.NewReader(text))
	}
	var vals []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("not %s: %v", strings.ToUpper(b.lang), err)
		}
		vals = append(vals, v)
	}
	var objs []map[string]any
	for _, v := range vals {
		switch x := v.(type) {
		case map[string]any:
			objs = append(objs, x)
		case []any:
			for _, e := range x {
				if o, ok := e.(map[string]any); ok {
					objs = append(objs, o)
				} else {
					return "", nil
				}
			}
		default:
			return "", nil
		}
	}
	if len(objs) == 0 {
		return "", nil
	}
	all := func(f func(map[string]any) bool) bool {
		for _, o := range objs {
			if !f(o) {
				return false
			}
		}
		return true
	}
	switch {
	case all(func(o map[string]any) bool { return o["name"] != nil && o["trigger"] != nil }):
		return "task", nil
	case len(objs) == 1 && all(func(o map[string]any) bool {
		t, _ := o["type"].(string)
		return o["name"] != nil && slices.Contains([]string{"webhook", "slack", "email", "dingtalk", "wecom", "feishu"}, t)
	}):
		return "channel", nil
	}
	return "", nil
}

func TestDocs_ScanBlocks(t *testing.T) {
	md := "# T\n\n<!-- run: single -->\n```sh\nax task list\n```\n\ntext\n<!-- illustrative: needs docker -->\n\n```sh\ndocker run ax\n```\n" +
		"- item:\n\n  ```json\n  {\"a\": 1}\n  ```\n```\n$ ax status\nNODE  ROLE\n```\n"
	got := docScanBlocks("x.md", md)
	want := []docBlock{
		{file: "x.md", line: 4, lang: "sh", lines: []string{"ax task list"}, kind: "run", arg: "single"},
		{file: "x.md", line: 11, lang: "sh", lines: []string{"docker run ax"}, kind: "illustrative", arg: "needs docker"},
		{file: "x.md", line: 16, lang: "json", lines: []string{`{"a": 1}`}},
		{file: "x.md", line: 19, lang: "", lines: []string{"$ ax status", "NODE  ROLE"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	for i, w := range []struct{ needs, transcript bool }{{true, false}, {true, false}, {false, false}, {true, true}} {
		if got[i].needsMarker() != w.needs || got[i].isTranscript() != w.transcript {
			t.Errorf("block %d: needsMarker %v, isTranscript %v; want %v, %v", i, got[i].needsMarker(), got[i].isTranscript(), w.needs, w.transcript)
		}
	}
}

func TestDocs_PrepareShell(t *testing.T) {
	b := docBlock{lang: "sh", lines: []string{
		"ax tls ca create -dir tls   # the CA",
		"ax agent -node n1 -http 10.0.0.1:7070 \\",
		"  -tls-ca tls/ax-ca.pem",
		`echo '{"a":1}' | ax task apply -f -`,
		"ax instance list -w         # until Ctrl-C",
		"ax executor -server a,b -name w1",
		"ax task list -watch-not",
	}}
	s := docPrepareShell(b)
	wantLines := []string{
		"ax tls ca create -dir tls   # the CA", "", "", `echo '{"a":1}' | ax task apply -f -`,
		"axdoc_interrupt ax instance list -w         # until Ctrl-C",
		"axdoc_background ax executor -server a,b -name w1", "ax task list -watch-not",
	}
	if !reflect.DeepEqual(s.lines, wantLines) {
		t.Errorf("script\n%q\nwant\n%q", s.lines, wantLines)
	}
	var kinds []string
	for _, c := range s.cmds {
		kinds = append(kinds, fmt.Sprintf("%d-%d %s", c.first, c.last, c.kind))
	}
	if want := []string{"0-0 ", "1-2 agent", "4-4 interrupt", "5-5 background", "6-6 "}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("commands %q, want %q", kinds, want)
	}
	if err := docAgentFlagsOK(s.cmds[1], map[string]bool{"node": true, "http": true}); err == nil || !strings.Contains(err.Error(), "-tls-ca") {
		t.Errorf("agentFlagsOK = %v, want -tls-ca named", err)
	}
	if got := docAgentFiles(s.cmds[1]); !reflect.DeepEqual(got, []string{"tls/ax-ca.pem"}) {
		t.Errorf("agentFiles = %q", got)
	}
	if got := docAgentFiles(docCmd{args: []string{"ax", "agent", "-token-file=t", "-node", "n1", "--config", "a.hcl", "-tls-key"}}); !reflect.DeepEqual(got, []string{"t", "a.hcl"}) {
		t.Errorf("agentFiles = %q", got)
	}
	if err := docAgentFlagsOK(docCmd{args: []string{"ax", "agent", "...", "-node=n2", "-x", "-5"}}, map[string]bool{"node": true}); err == nil || err.Error() != "not flags of ax agent: -x" {
		t.Errorf("agentFlagsOK = %v, want -x named alone", err)
	}

	tr := docPrepareShell(docBlock{lines: []string{"$ ax task list", "NAME  TRIGGER", "x     cron", "$ curl -s \\", "  127.0.0.1:7070/healthz", `{"role":"leader"}`}})
	if want := []string{"ax task list", "", "", "curl -s \\", "  127.0.0.1:7070/healthz", ""}; !reflect.DeepEqual(tr.lines, want) {
		t.Errorf("transcript script %q, want %q", tr.lines, want)
	}
	if len(tr.cmds) != 2 || !reflect.DeepEqual(tr.cmds[0].output, []string{"NAME  TRIGGER", "x     cron"}) || tr.cmds[1].last != 4 {
		t.Errorf("transcript commands %+v", tr.cmds)
	}
	if got := tr.only(3, 4); !reflect.DeepEqual(got, []string{"", "", "", "curl -s \\", "  127.0.0.1:7070/healthz", ""}) {
		t.Errorf("only(3, 4) = %q", got)
	}
}

func TestDocs_RewriteAddrs(t *testing.T) {
	addrs := map[string]string{"127.0.0.1:7070": "127.0.0.1:20001", "n1:7070": "127.0.0.1:20001", "10.0.0.1:7070": "127.0.0.1:20001"}
	for in, want := range map[string]string{
		"curl -s 127.0.0.1:7070/healthz":           "curl -s 127.0.0.1:20001/healthz",
		"-server n1:7070,n2:7070":                  "-server 127.0.0.1:20001,n2:7070",
		"-addr 10.0.0.1:7070 -x 110.0.0.1:7070":    "-addr 127.0.0.1:20001 -x 110.0.0.1:7070",
		"127.0.0.1:70701 wn1:7070 http://n1:7070/": "127.0.0.1:70701 wn1:7070 http://127.0.0.1:20001/",
	} {
		if got := docRewriteAddrs(in, addrs); got != want {
			t.Errorf("rewriteAddrs(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDocs_CompareOutput(t *testing.T) {
	failed := errors.New("exit status 1")
	for _, tc := range []struct {
		want    []string
		got     docOutput
		runErr  error
		wantErr string
	}{
		{[]string{"NAME          TRIGGER    NEXT FIRE", "x  cron  in 1h"}, docOutput{stdout: "NAME  TRIGGER  NEXT FIRE\ny  cron  in 2h\n"}, nil, ""},
		{[]string{"NAME  TRIGGER  NEXT FIRE"}, docOutput{stdout: "NAME  TRIGGER  LAST RUN\n"}, nil, "the table's header"},
		{[]string{"0000000001400000 READY"}, docOutput{stdout: "0000000001500000 READY\n"}, nil, ""},
		{[]string{"0000000001400000 READY"}, docOutput{}, failed, "exit status 1"},
		{[]string{`{"error":{"code":"x","message":"m"}}`}, docOutput{stdout: `{"error": {"message":"m","code":"x"}}` + "\n"}, nil, ""},
		{[]string{`{"error":{"code":"x","message":"m"}}`}, docOutput{stdout: `{"error":{"code":"x","message":"other"}}`}, nil, "no line equal"},
		{[]string{"ax: hint: is an agent running at localhost:1?"}, docOutput{stderr: "ax: no\nax: hint: is an agent running at localhost:1?\n"}, failed, ""},
		{[]string{"ax: hint: is an agent running at localhost:1?"}, docOutput{stderr: "ax: hint: is an agent running at 127.0.0.1:1?\n"}, failed, "did not print"},
		{[]string{"ax: hint: is an agent running at localhost:1?"}, docOutput{}, nil, "it succeeded"},
	} {
		err := docCompareOutput(tc.want, tc.got, tc.runErr)
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("compareOutput(%q, %+v, %v) = %v, want %q", tc.want, tc.got, tc.runErr, err, tc.wantErr)
		}
	}
}

func TestDocs_DataKind(t *testing.T) {
	for _, tc := range []struct {
		lang, text, want string
	}{
		{"json", `{"name": "a", "trigger": {"type": "event"}}` + "\n" + `{"name": "b", "trigger": {}}`, "task"},
		{"json", `[{"name": "a", "trigger": {"type": "event"}}]`, "task"},
		{"yaml", "name: a\ntrigger: {type: event}\n---\nname: b\ntrigger: {type: event}\n", "task"},
		{"json", `{"name": "ops", "type": "webhook", "url": "https://x"}`, "channel"},
		{"json", `{"event": "firing", "alert": {}}`, ""},
		{"json", `{"name": "a", "trigger": {}} 42`, ""},
	} {
		b := docBlock{lang: tc.lang, lines: strings.Split(tc.text, "\n")}
		if got, err := docDataKind(b); err != nil || got != tc.want {
			t.Errorf("dataKind(%s) = %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
	if _, err := docDataKind(docBlock{lang: "json", lines: []string{`{"a": 1,}`}}); err == nil {
		t.Error("dataKind of bad JSON: no error")
	}
}
