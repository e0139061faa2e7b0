package model

import (
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
)

// Templates (a shell command, an HTTP url and body, an idempotency key)
// obey static rules that ParseTemplate checks: the API and the state
// machine apply the same ones, without a clock. Together with the bounded
// functions of TemplateFuncs and a writer that stops at
// TemplateOutputLimit, they bound what rendering a template can cost:
//
//   - no range, template, define, block, break or continue: a template
//     runs straight through, without loops or recursion;
//   - it calls only the functions of TemplateFuncNames (text/template's
//     call is refused);
//   - printf refuses a width or precision above TemplateWidthLimit, and the
//     '*' and [n] forms; every function refuses a result longer than
//     TemplateOutputLimit;
//   - the text is at most TemplateOutputLimit bytes and has no NUL byte;
//   - secret takes one literal name ({{secret "db_password"}}), a valid
//     name, as the first command of its pipeline;
//   - a shell command (action.command) may not call raw: a caller value
//     that is not quoted would run as shell code; a script reads
//     "$AX_PARAM_X" instead;
//   - an idempotency key (policy.idempotencyKey) may call neither raw nor
//     secret.

const (
	// TemplateOutputLimit bounds the text of a template, what it renders
	// to (64 KiB) and the result of each function it calls.
	TemplateOutputLimit = 64 << 10
	// TemplateWidthLimit bounds a width or precision in a printf format.
	TemplateWidthLimit = 1024
	// TemplateWorkLimit bounds the bytes the functions of one rendering
	// produce in all, returned or not (1 MiB).
	TemplateWorkLimit = 1 << 20
)

// TemplateFuncNames returns the functions a template may call. The
// comparison and logic builtins of text/template (and, or, not, eq, ne,
// lt, le, gt, ge, len, index, slice) are kept as they are; print, printf,
// println, html, js and urlquery are replaced by the bounded versions of
// TemplateFuncs; raw and secret are ax's (see package action).
func TemplateFuncNames() []string {
	return []string{
		"and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge", "len", "index", "slice",
		"print", "printf", "println", "html", "js", "urlquery", "raw", "secret",
	}
}

var templateFuncSet = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range TemplateFuncNames() {
		m[n] = true
	}
	return m
}()

// templateForbids are the functions a field may not call, and why.
var templateForbids = map[string]map[string]string{
	"action.command": {
		"raw": `a shell command cannot insert a value unquoted; read it from its environment variable ("$AX_PARAM_X") instead`,
	},
	"policy.idempotencyKey": {
		"raw":    "an idempotency key has no caller values",
		"secret": "an idempotency key is stored and shown: it may not hold a secret",
	},
}

// ParseTemplate parses text, the template of field ("action.command",
// "action.url", "action.body", "policy.idempotencyKey"), and checks it
// against the rules above. Its functions are the defaults of
// TemplateFuncs; a renderer replaces them with t.Funcs on a Clone (or a
// template of its own), one TemplateFuncs per rendering. Errors are
// *Error invalid_argument naming field.
func ParseTemplate(field, text string) (*template.Template, error) {
	t, _, err := parseTemplate(field, text)
	return t, err
}

// checkTemplateText checks what the rules say of a template's text as a
// whole: its size and no NUL byte.
func checkTemplateText(field, text string) error {
	if len(text) > TemplateOutputLimit {
		return FieldErrorf(field, "template longer than %d bytes", TemplateOutputLimit)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return FieldErrorf(field, "template contains a NUL byte")
	}
	return nil
}

// parseFuncs are the functions templates are parsed with: parsing needs
// only their names and signatures (RenderTemplate binds a rendering's own
// to a clone), so one map serves every parse.
var parseFuncs = sync.OnceValue(func() template.FuncMap { return new(TemplateFuncs).Map() })

// parseTemplate is ParseTemplate that also returns the secrets the
// template names.
func parseTemplate(field, text string) (*template.Template, []string, error) {
	if err := checkTemplateText(field, text); err != nil {
		return nil, nil, err
	}
	t, err := template.New(field).Funcs(parseFuncs()).Parse(text)
	if err != nil {
		return nil, nil, FieldErrorf(field, "bad template: %v", err)
	}
	for _, tt := range t.Templates() {
		if tt != t {
			return nil, nil, FieldErrorf(field, "bad template: define and block are not allowed")
		}
	}
	c := &templateChecker{forbid: templateForbids[field]}
	if t.Tree != nil {
		if err := c.node(t.Root); err != nil {
			return nil, nil, FieldErrorf(field, "bad template: %v", err)
		}
	}
	return t, c.secrets, nil
}

// templateChecker walks a parse tree for what the rules refuse.
type templateChecker struct {
	forbid  map[string]string
	secrets []string
}

type templateRuleError string

func (e templateRuleError) Error() string { return string(e) }

func (c *templateChecker) node(n parse.Node) error {
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
		return templateRuleError("range is not allowed: a template may not loop")
	case *parse.TemplateNode:
		return templateRuleError("template and block are not allowed")
	case *parse.BreakNode, *parse.ContinueNode:
		return templateRuleError("break and continue are not allowed")
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
		return templateRuleError("unexpected template construct " + n.String())
	}
	return nil
}

func (c *templateChecker) branch(b *parse.BranchNode) error {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if err := c.node(n); err != nil {
			return err
		}
	}
	return nil
}

// command checks one command of a pipeline; first says it is the
// pipeline's first (which receives no piped value).
func (c *templateChecker) command(cmd *parse.CommandNode, first bool) error {
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
func (c *templateChecker) function(name string, called bool, args []parse.Node) error {
	if why, ok := c.forbid[name]; ok {
		return templateRuleError(name + " is not allowed here: " + why)
	}
	if !templateFuncSet[name] {
		return templateRuleError("function " + name + " is not allowed")
	}
	if name != "secret" {
		return nil
	}
	const usage = `secret takes one literal name: {{secret "name"}}`
	if !called || len(args) != 1 {
		return templateRuleError(usage)
	}
	s, ok := args[0].(*parse.StringNode)
	if !ok {
		return templateRuleError(usage)
	}
	if !ValidName(s.Text) {
		return templateRuleError("secret " + s.Quoted + " is not a valid name")
	}
	c.secrets = append(c.secrets, s.Text)
	return nil
}
