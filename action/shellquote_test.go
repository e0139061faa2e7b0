package action

import (
	"strings"
	"testing"
)

// commandTests are shell command templates, expanded with the value as
// Params.v and the payload {"k":"v'"}; TestCheck checks them too.
var commandTests = []struct {
	name    string
	command string
	value   string
	want    string
	wantErr string
}{
	{name: "unquoted", command: "echo {{.Params.v}}", value: "it's", want: `echo 'it'\''s'`},
	{name: "empty value", command: "echo {{.Params.v}}", value: "", want: "echo ''"},
	{name: "missing param", command: "echo {{.Params.nope}}", want: "echo ''"},
	{name: "injection", command: "echo {{.Params.v}}", value: "'; rm -rf /", want: `echo ''\''; rm -rf /'`},
	{name: "double quotes", command: `echo "a {{.Params.v}} b"`, value: "$(x) `y` \"z\" \\", want: "echo \"a \\$(x) \\`y\\` \\\"z\\\" \\\\ b\""},
	{name: "single quotes", command: `echo 'a {{.Params.v}} b'`, value: "it's", want: `echo 'a it'\''s b'`},
	{name: "comment", command: "# {{.Params.v}}\necho ok", value: "x\nrm -rf /", want: "# x rm -rf /\necho ok"},
	{name: "hash inside a word", command: "echo a#{{.Params.v}}", value: "b c", want: "echo a#'b c'"},
	{name: "length expansion is no comment", command: "x=1; echo ${#x} {{.Params.v}}", value: "b c", want: "x=1; echo ${#x} 'b c'"},
	{name: "command substitution in double quotes", command: `echo "$(echo {{.Params.v}})"`, value: "a;b", want: `echo "$(echo 'a;b')"`},
	{name: "double quotes inside command substitution", command: `echo $(echo "{{.Params.v}}")`, value: "$x", want: `echo $(echo "\$x")`},
	{name: "after here-document", command: "cat <<EOF\nhi\nEOF\necho {{.Params.v}}", value: "a b", want: "cat <<EOF\nhi\nEOF\necho 'a b'"},
	{name: "after <<- here-document", command: "cat <<-'EOF'\n\thi\n\tEOF\necho {{.Params.v}}", value: "a b", want: "cat <<-'EOF'\n\thi\n\tEOF\necho 'a b'"},
	{name: "after arithmetic shift", command: "echo $((1 << 2)) {{.Params.v}}", value: "a b", want: "echo $((1 << 2)) 'a b'"},
	{name: "escaped dollar", command: `echo \${{.Params.v}}`, value: "a b", want: `echo \$'a b'`},
	{name: "payload", command: "echo {{.Payload}}", want: `echo '{"k":"v'\''"}'`},
	{name: "printf of a value", command: `echo {{printf "%s-x" .Params.v}}`, value: "a b", want: `echo 'a b'-x`},
	{name: "eq compares the value", command: `{{if eq .Params.v "full"}}echo full{{end}}`, value: "full", want: "echo full"},
	{name: "after ansi-c string", command: `echo $'a\tb' {{.Params.v}}`, value: "x y", want: `echo $'a\tb' 'x y'`},
	{name: "case at top level", command: "case a in a) echo {{.Params.v}};; esac", value: "x y", want: "case a in a) echo 'x y';; esac"},
	{name: "ax values are not quoted", command: "echo {{.Task}}", want: "echo t"},

	{name: "backquotes", command: "echo `echo {{.Params.v}}`", value: "x", wantErr: "inside `...`"},
	{name: "backquotes in double quotes", command: "echo \"`echo {{.Params.v}}`\"", value: "x", wantErr: "inside `...`"},
	{name: "parameter expansion", command: "echo ${x:-{{.Params.v}}}", value: "x", wantErr: "inside ${...}"},
	{name: "arithmetic", command: "echo $(( {{.Params.v}} + 1 ))", value: "1", wantErr: "inside $((...))"},
	{name: "here-document", command: "cat <<EOF\n{{.Params.v}}\nEOF", value: "x", wantErr: "here-document"},
	{name: "quoted here-document", command: "cat <<'EOF'\na {{.Params.v}}\nEOF", value: "x", wantErr: "here-document"},
	{name: "here-document delimiter", command: "cat <<{{.Params.v}}\nx\n", value: "x", wantErr: "here-document delimiter"},
	{name: "after backslash", command: `echo \{{.Params.v}}`, value: "x", wantErr: "after a backslash"},
	{name: "after backslash in double quotes", command: `echo "\{{.Params.v}}"`, value: "x", wantErr: "after a backslash"},
	{name: "after dollar", command: `echo ${{.Params.v}}`, value: "x", wantErr: "after a $"},
	{name: "after dollar in double quotes", command: `echo "${{.Params.v}}"`, value: "(x)", wantErr: "after a $"},
	{name: "ansi-c string", command: "echo $'a {{.Params.v}}'", value: "x", wantErr: "inside $'...'"},
	{name: "after ansi-c string with escaped quote", command: `echo $'it\'s' {{.Params.v}}`, value: "x", wantErr: "after a $'...' string"},
	{name: "case inside command substitution", command: "echo \"$(case a in a) echo {{.Params.v}};; esac)\"", value: "x", wantErr: "after a case statement"},
	{name: "NUL in value", command: "echo {{.Params.v}}", value: "a\x00b", wantErr: "NUL"},
	{name: "NUL in command", command: "echo a\x00b", wantErr: "NUL"},
	{name: "parse error", command: "echo {{.Params.v", wantErr: "bad command template"},
}

func TestExpandCommand(t *testing.T) {
	for _, tt := range commandTests {
		t.Run(tt.name, func(t *testing.T) {
			job := Job{Task: "t", Params: map[string]string{"v": tt.value}, Payload: []byte(`{"k":"v'"}`)}
			got, err := expandCommand(tt.command, job)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestExpandCommand_noStrayNUL checks the places after a backslash where
// a NUL byte (a value's marker, or one in the command) used to be copied
// into the command.
func TestExpandCommand_noStrayNUL(t *testing.T) {
	for _, command := range []string{
		"`\\\x00",
		"`echo \\{{.Params.v}}`",
		"echo $'\\{{.Params.v}}'",
		"cat <<\\{{.Params.v}}\nx\n",
		"echo \\\x00",
	} {
		got, err := expandCommand(command, Job{Params: map[string]string{"v": "x"}})
		if err == nil {
			t.Errorf("%q: got %q, want an error", command, got)
		}
	}
}
