package complete

import (
	"context"
	"flag"
	"slices"
	"sort"
	"strings"
)

// Command is a command of a program's command table, as completion walks
// it: a leaf with its flag set, or a group of subcommands.
type Command struct {
	// Name is a top-level command's name, or the words of a subcommand
	// after its group's ("list", "token create").
	Name string
	// Hidden commands are not offered.
	Hidden bool
	// Subs are a group's subcommands; none for a leaf.
	Subs []Command
	// Flags returns a leaf's flag set, built but not run (every leaf has
	// one).
	Flags func() *flag.FlagSet
	// Args, if set, offers the values of a leaf's first argument, given
	// the leaf's words typed so far (its flags: -addr...).
	Args func(ctx context.Context, args []string) []string
}

// Completer completes the command lines of a program: the words after
// its name, as a completion script passes them.
type Completer struct {
	// Commands is the program's command table.
	Commands []Command
	// Values, if set, offers the values of the flag name (one that takes
	// a value), given the leaf's words typed so far.
	Values func(ctx context.Context, name string, args []string) []string
}

// Complete returns the candidates for the last of words (the words after
// the program's name, the last one being typed), sorted: commands (and
// "help", which takes a command's name) and subcommands, a leaf's flags
// from its flag set, the values of a flag (Values) and of a leaf's first
// argument (Args).
func (c Completer) Complete(ctx context.Context, words []string) []string {
	cur, done := words[len(words)-1], words[:len(words)-1]
	if len(done) == 0 {
		return matching(cur, append(c.visible(), "help"))
	}
	if done[0] == "help" {
		if len(done) == 1 {
			return matching(cur, c.visible())
		}
		return nil
	}
	e := c.lookup(done[0])
	if e == nil || e.Hidden {
		return nil
	}
	rest := done[1:]
	if len(e.Subs) > 0 {
		sub, n := e.sub(rest)
		if sub == nil { // still in the subcommand's words
			var next []string
			for _, s := range e.Subs {
				w := strings.Fields(s.Name)
				if len(rest) < len(w) && slices.Equal(rest, w[:len(rest)]) && !slices.Contains(next, w[len(rest)]) {
					next = append(next, w[len(rest)])
				}
			}
			return matching(cur, next)
		}
		e, rest = sub, rest[n:]
	}
	fs := e.Flags()
	// The value of the flag before the cursor?
	if len(rest) > 0 {
		last := rest[len(rest)-1]
		if f := fs.Lookup(FlagName(last)); f != nil && takesValue(f) && !strings.Contains(last, "=") {
			if c.Values == nil {
				return nil
			}
			return matching(cur, c.Values(ctx, f.Name, rest))
		}
	}
	if strings.HasPrefix(cur, "-") {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, "-"+f.Name) })
		return matching(cur, names)
	}
	if positionals(rest, fs) > 0 {
		return nil
	}
	if e.Args == nil {
		return nil
	}
	return matching(cur, e.Args(ctx, rest))
}

// lookup is the top-level command name, nil when there is none.
func (c Completer) lookup(name string) *Command {
	for i := range c.Commands {
		if c.Commands[i].Name == name {
			return &c.Commands[i]
		}
	}
	return nil
}

// sub is the subcommand of group e that the first words of args name,
// with the number of words its name takes; nil when none does.
func (e *Command) sub(args []string) (*Command, int) {
	for i := range e.Subs {
		words := strings.Fields(e.Subs[i].Name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return &e.Subs[i], len(words)
		}
	}
	return nil, 0
}

// visible are the names of the commands that are not hidden.
func (c Completer) visible() []string {
	var names []string
	for _, e := range c.Commands {
		if !e.Hidden {
			names = append(names, e.Name)
		}
	}
	return names
}

// takesValue reports whether f takes a value (-o json), unlike a boolean
// (-w).
func takesValue(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// FlagName is the name of a flag word ("-o", "--addr=x"), "" for an
// argument.
func FlagName(w string) string {
	if !strings.HasPrefix(w, "-") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
	return name
}

// positionals counts the arguments among words that are not flags of fs
// or their values.
func positionals(words []string, fs *flag.FlagSet) int {
	n := 0
	for i := 0; i < len(words); i++ {
		name := FlagName(words[i])
		switch f := fs.Lookup(name); {
		case name == "":
			n++
		case f != nil && takesValue(f) && !strings.Contains(words[i], "="):
			i++ // its value
		}
	}
	return n
}

// matching are the candidates that start with prefix, sorted.
func matching(prefix string, cands []string) []string {
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// Script returns the completion script of shell (bash, zsh or fish), false
// for another shell. The scripts call "ax __complete -- WORDS", WORDS
// being the words after "ax" up to the cursor, the last one the word
// being completed, and print its lines as the candidates; with none they
// fall back to file names.
func Script(shell string) (string, bool) {
	s, ok := scripts[shell]
	return s, ok
}

// scripts are the completion scripts by shell.
var scripts = map[string]string{
	"bash": `# ax completion for bash: source <(ax completion bash)
_ax_complete() {
    local IFS=$'\n'
    COMPREPLY=($(ax __complete -- "${COMP_WORDS[@]:1:$COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _ax_complete ax
`,
	"zsh": `#compdef ax
# ax completion for zsh: ax completion zsh > "${fpath[1]}/_ax"
_ax() {
    local -a cands
    cands=("${(@f)$(ax __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ -n "${cands[1]}" ]]; then
        compadd -- "${cands[@]}"
    else
        _files
    fi
}
if [[ "$funcstack[1]" = "_ax" ]]; then _ax "$@"; else compdef _ax ax; fi
`,
	"fish": `# ax completion for fish: ax completion fish > ~/.config/fish/completions/ax.fish
function __ax_complete
    set -l words (commandline -opc) (commandline -ct)
    set -l cands (ax __complete -- $words[2..-1] 2>/dev/null)
    if test (count $cands) -gt 0
        printf '%s\n' $cands
    else
        __fish_complete_path (commandline -ct)
    end
end
complete -c ax -f -a '(__ax_complete)'
`,
}
