package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/model"
)

type completionCommand struct{}

func (*completionCommand) Usage() string {
	return `
Usage: ax completion bash|zsh|fish

Prints a shell completion script: commands, subcommands, flags, some
flag values (-o, -state, -source, -paused, -role) and, for trigger,
submit, backfill and task get|pause|resume|delete|history|events, the
task names of the cluster (-addr / AX_ADDR, asked with a 1s timeout).
The script asks the ax on the PATH (ax __complete), so completions
follow the binary's own commands and flags.

Examples:
	source <(ax completion bash)                          # in ~/.bashrc
	ax completion zsh > "${fpath[1]}/_ax"                 # then restart zsh
	ax completion fish > ~/.config/fish/completions/ax.fish
`
}

func (c *completionCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("completion", c.Usage())
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("completion: want one shell: bash, zsh or fish")
	}
	script, ok := completionScripts[fs.Arg(0)]
	if !ok {
		return fmt.Errorf("completion: unknown shell %q: want bash, zsh or fish", fs.Arg(0))
	}
	fmt.Print(script)
	return nil
}

// completionScripts call "ax __complete -- WORDS", WORDS being the words
// after "ax" up to the cursor, the last one the word being completed;
// with no candidates they fall back to file names.
var completionScripts = map[string]string{
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

type completeCommand struct{}

func (*completeCommand) Usage() string {
	return "Usage: ax __complete -- WORDS...\n\nPrints the completions of the last word (called by the completion scripts).\n"
}

func (c *completeCommand) Run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		args = []string{""}
	}
	cp := completer{flagsOf: helpFlags, tasks: clusterTasks}
	for _, cand := range cp.complete(ctx, args) {
		fmt.Println(cand)
	}
	return nil
}

// flagInfo is a flag as completion needs it: its name and whether it
// takes a value.
type flagInfo struct {
	name  string
	value bool
}

// completer finds the candidates for the last of words (the words after
// "ax"), walking the command table (commands, groups) and the flag set of
// the command named.
type completer struct {
	// flagsOf lists the flags of a command path ("task", "list").
	flagsOf func(ctx context.Context, path []string) ([]flagInfo, error)
	// tasks lists the cluster's task names; args are the command's
	// arguments so far (their -addr, -token...).
	tasks func(ctx context.Context, args []string) []string
}

// taskArg are the command paths whose first argument is a task name.
var taskArg = map[string]bool{"trigger": true, "submit": true, "backfill": true, "task get": true, "task pause": true,
	"task resume": true, "task delete": true, "task history": true, "task events": true}

// flagValues are the values offered for flags that take one of a few.
var flagValues = map[string][]string{
	"o":      {formatTable, formatJSON, formatYAML},
	"state":  {model.StateScheduled, model.StateReady, model.StateRunning, model.StateRetrying, model.StateBlocked, model.StateWaitingApproval, model.StateSuccess, model.StateFailed, model.StateTerminated, model.StateSkipped, model.StateCanceled},
	"source": model.Sources,
	"paused": {"true", "false"},
	"role":   {model.RoleReader, model.RoleOperator, model.RoleWriter, model.RoleAdmin, model.RoleExecutor},
}

func (c completer) complete(ctx context.Context, words []string) []string {
	cur, done := words[len(words)-1], words[:len(words)-1]
	if len(done) == 0 {
		return matching(cur, append(visibleCommands(), "help"))
	}
	name := done[0]
	switch {
	case name == "help" && len(done) == 1:
		return matching(cur, visibleCommands())
	case name == "completion" && len(done) == 1:
		return matching(cur, []string{"bash", "zsh", "fish"})
	case hidden[name]:
		return nil
	}
	if _, ok := commands()[name]; !ok {
		return nil
	}
	path, rest := done[:1], done[1:]
	if _, ok := groups[name]; ok {
		n := subPath(name, rest)
		if n == 0 { // still in the subcommand's words
			var next []string
			for _, sub := range groups[name] {
				w := strings.Fields(sub)
				if len(rest) < len(w) && slices.Equal(rest, w[:len(rest)]) && !slices.Contains(next, w[len(rest)]) {
					next = append(next, w[len(rest)])
				}
			}
			return matching(cur, next)
		}
		path, rest = done[:1+n], rest[n:]
	}
	flags, err := c.flagsOf(ctx, path)
	if err != nil {
		return nil
	}
	byName := map[string]flagInfo{}
	for _, f := range flags {
		byName[f.name] = f
	}
	// The value of the flag before the cursor?
	if len(rest) > 0 {
		if f, ok := byName[flagName(rest[len(rest)-1])]; ok && f.value && !strings.Contains(rest[len(rest)-1], "=") {
			if f.name == "task" {
				return matching(cur, c.tasks(ctx, rest))
			}
			return matching(cur, flagValues[f.name])
		}
	}
	if strings.HasPrefix(cur, "-") {
		names := make([]string, 0, len(flags))
		for _, f := range flags {
			names = append(names, "-"+f.name)
		}
		return matching(cur, names)
	}
	if taskArg[strings.Join(path, " ")] && positionals(rest, byName) == 0 {
		return matching(cur, c.tasks(ctx, rest))
	}
	return nil
}

// flagName is the name of a flag word ("-o", "--addr=x"), "" for an
// argument.
func flagName(w string) string {
	if !strings.HasPrefix(w, "-") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
	return name
}

// positionals counts the arguments among words that are not flags or
// flag values.
func positionals(words []string, flags map[string]flagInfo) int {
	n := 0
	for i := 0; i < len(words); i++ {
		name := flagName(words[i])
		switch {
		case name == "":
			n++
		case flags[name].value && !strings.Contains(words[i], "="):
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

// visibleCommands are the command names the usage lists.
func visibleCommands() []string {
	var names []string
	for name := range commands() {
		if !hidden[name] {
			names = append(names, name)
		}
	}
	return names
}

// helpFlags lists the flags of a command path from its own flag set: it
// runs "ax PATH -h" (this binary) and reads the flag list the flag set
// prints.
func helpFlags(ctx context.Context, path []string) ([]flagInfo, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, completeWithin(2*time.Second))
	defer cancel()
	out, err := exec.CommandContext(hctx, self, append(slices.Clone(path), "-h")...).Output()
	if err != nil {
		return nil, fmt.Errorf("ax %s -h: %w", strings.Join(path, " "), err)
	}
	return parseFlagList(out), nil
}

// parseFlagList reads the flags in the "Flags:" section of a usage, as
// flag.PrintDefaults writes them: "  -name type" for a flag that takes a
// value, "  -name" or "  -x\tusage" for a boolean.
func parseFlagList(usage []byte) []flagInfo {
	_, list, ok := bytes.Cut(usage, []byte("\nFlags:\n"))
	if !ok {
		return nil
	}
	var out []flagInfo
	for _, line := range strings.Split(string(list), "\n") {
		rest, ok := strings.CutPrefix(line, "  -")
		if !ok {
			continue
		}
		end := strings.IndexAny(rest, " \t")
		if end < 0 {
			out = append(out, flagInfo{name: rest})
			continue
		}
		out = append(out, flagInfo{name: rest[:end], value: rest[end] == ' '})
	}
	return out
}

// clusterTasks lists the task names of the cluster that args (-addr,
// -token... or their environment variables) name, within a second; none
// on any failure.
func clusterTasks(ctx context.Context, args []string) []string {
	fs := flag.NewFlagSet("complete", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cf clientFlags
	cf.register(fs)
	// Only the client flags (and their values) of the line.
	var mine []string
	for i := 0; i < len(args); i++ {
		f := fs.Lookup(flagName(args[i]))
		if f == nil {
			continue
		}
		mine = append(mine, args[i])
		if !strings.Contains(args[i], "=") && i+1 < len(args) {
			mine = append(mine, args[i+1])
			i++
		}
	}
	if fs.Parse(mine) != nil {
		return nil
	}
	cl, err := cf.client()
	if err != nil {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, completeWithin(time.Second))
	defer cancel()
	l, err := cl.ListTasks(lctx, model.TaskFilter{Limit: 1000})
	if err != nil {
		return nil
	}
	names := make([]string, len(l.Tasks))
	for i, t := range l.Tasks {
		names[i] = t.Name
	}
	return names
}

// completeWithin is how long a completion step may take: def, so that a
// Tab never hangs, unless AX_COMPLETE_TIMEOUT sets it (a slow or busy
// machine; the tests set it so that CPU contention does not fail them).
func completeWithin(def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv("AX_COMPLETE_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return def
}
