package tmpl

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
)

// The bounds of a template.
const (
	// OutputLimit bounds the text of a template, what it renders to (64
	// KiB) and the result of each function it calls.
	OutputLimit = 64 << 10
	// WidthLimit bounds a width or precision in a printf format.
	WidthLimit = 1024
	// WorkLimit bounds the bytes the functions of one rendering produce
	// in all, returned or not (1 MiB).
	WorkLimit = 1 << 20
)

// FuncNames returns the functions a template may call. The comparison
// and logic builtins of text/template (and, or, not, eq, ne, lt, le, gt,
// ge, len, index, slice) are kept as they are; print, printf, println,
// html, js and urlquery are replaced by the bounded versions of Funcs;
// raw and secret are ax's (see package action).
func FuncNames() []string {
	return []string{
		"and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge", "len", "index", "slice",
		"print", "printf", "println", "html", "js", "urlquery", "raw", "secret",
	}
}

var funcSet = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range FuncNames() {
		m[n] = true
	}
	return m
}()

// forbids are the functions a field may not call, and why.
var forbids = map[string]map[string]string{
	"action.command": {
		"raw": `a shell command cannot insert a value unquoted; read it from its environment variable ("$AX_PARAM_X") instead`,
	},
	"policy.idempotencyKey": {
		"raw":    "an idempotency key has no caller values",
		"secret": "an idempotency key is stored and shown: it may not hold a secret",
	},
}

// CheckText checks what the rules say of a template's text as a whole:
// its size and no NUL byte.
func CheckText(text string) error {
	if len(text) > OutputLimit {
		return fmt.Errorf("template longer than %d bytes", OutputLimit)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return errors.New("template contains a NUL byte")
	}
	return nil
}

// parseFuncs are the functions templates are parsed with: parsing needs
// only their names and signatures (Render binds a rendering's own to a
// clone), so one map serves every parse.
var parseFuncs = sync.OnceValue(func() template.FuncMap { return new(Funcs).Map() })

// Parse parses text, the template of field ("action.command",
// "action.url", "action.body", "policy.idempotencyKey"), checks it against
// the rules (see the package's doc), validName saying which literal
// names secret may take, and returns it with the secrets it names. Its functions are the
// defaults of Funcs; a renderer replaces them with t.Funcs on a Clone (or
// a template of its own), one Funcs per rendering. An error says which
// rule the template breaks.
func Parse(field, text string, validName func(string) bool) (*template.Template, []string, error) {
	if err := CheckText(text); err != nil {
		return nil, nil, err
	}
	t, err := template.New(field).Funcs(parseFuncs()).Parse(text)
	if err != nil {
		return nil, nil, fmt.Errorf("bad template: %v", err)
	}
	for _, tt := range t.Templates() {
		if tt != t {
			return nil, nil, errors.New("bad template: define and block are not allowed")
		}
	}
	c := &checker{forbid: forbids[field], validName: validName}
	if t.Tree != nil {
		if err := c.node(t.Root); err != nil {
			return nil, nil, fmt.Errorf("bad template: %v", err)
		}
	}
	return t, c.secrets, nil
}

// checker walks a parse tree for what the rules refuse.
type checker struct {
	forbid    map[string]string
	validName func(string) bool
	secrets   []string
}

type ruleError string

func (e ruleError) Error() string { return string(e) }

func (c *checker) node(n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, m := range n.Nodes {
			if err := c.node(m); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return c.node(n.Pipe)
	case *parse.IfNode:
		return c.branch(&n.BranchNode)
	case *parse.WithNode:
		return c.branch(&n.BranchNode)
	case *parse.RangeNode:
		return ruleError("range is not allowed: a template may not loop")
	case *parse.TemplateNode:
		return ruleError("template and block are not allowed")
	case *parse.BreakNode, *parse.ContinueNode:
		return ruleError("break and continue are not allowed")
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		for i, cmd := range n.Cmds {
			if err := c.command(cmd, i == 0); err != nil {
				return err
			}
		}
	case *parse.ChainNode:
		return c.node(n.Node)
	case *parse.IdentifierNode:
		return c.function(n.Ident, false, nil)
	case *parse.TextNode, *parse.CommentNode, *parse.FieldNode, *parse.VariableNode, *parse.DotNode,
		*parse.NilNode, *parse.BoolNode, *parse.NumberNode, *parse.StringNode:
	default:
		return ruleError("unexpected template construct " + n.String())
	}
	return nil
}

func (c *checker) branch(b *parse.BranchNode) error {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if err := c.node(n); err != nil {
			return err
		}
	}
	return nil
}

// command checks one command of a pipeline; first says it is the
// pipeline's first (which receives no piped value).
func (c *checker) command(cmd *parse.CommandNode, first bool) error {
	for i, arg := range cmd.Args {
		if id, ok := arg.(*parse.IdentifierNode); ok && i == 0 {
			if err := c.function(id.Ident, first, cmd.Args[1:]); err != nil {
				return err
			}
			continue
		}
		if err := c.node(arg); err != nil {
			return err
		}
	}
	return nil
}

// function checks a call of name; called says it is the head of a command
// that is the first of its pipeline, with args.
func (c *checker) function(name string, called bool, args []parse.Node) error {
	if why, ok := c.forbid[name]; ok {
		return ruleError(name + " is not allowed here: " + why)
	}
	if !funcSet[name] {
		return ruleError("function " + name + " is not allowed")
	}
	if name != "secret" {
		return nil
	}
	const usage = `secret takes one literal name: {{secret "name"}}`
	if !called || len(args) != 1 {
		return ruleError(usage)
	}
	s, ok := args[0].(*parse.StringNode)
	if !ok {
		return ruleError(usage)
	}
	if !c.validName(s.Text) {
		return ruleError("secret " + s.Quoted + " is not a valid name")
	}
	c.secrets = append(c.secrets, s.Text)
	return nil
}
