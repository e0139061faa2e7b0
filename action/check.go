package action

import (
	"encoding/json"
	"errors"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"ax/model"
)

// Check dry-runs the templates of a, a valid action (see model.Task.Validate),
// the way Run expands them: a shell command through the same quoting of
// caller values, an HTTP url and body as text. It finds what parsing alone
// does not: an unknown field ({{.Nope}}), a method or function called with
// wrong arguments, a caller value where a shell command cannot quote it.
// The error is a *model.Error with code invalid_argument naming the field
// (action.command, action.url or action.body). Check starts no process and
// sends nothing.
//
// Each template is expanded twice: as a scheduled fire (no params, no
// payload) and as a submission that gives every param the template names
// and a payload. Branches neither run takes are not checked, and an index
// or slice out of range is not held against a template, since it depends on
// how long a caller's value is.
func Check(a *model.Action) error {
	switch a.Type {
	case model.ActionShell:
		return checkTemplate("command", a.Command)
	case model.ActionHTTP:
		if err := checkTemplate("url", a.URL); err != nil {
			return err
		}
		return checkTemplate("body", a.Body)
	}
	return nil
}

// checkTemplate expands text, the action's field name, for each sample job
// as Run would.
func checkTemplate(name, text string) error {
	for _, job := range sampleJobs(text) {
		var err error
		if name == "command" {
			_, err = expandCommand(text, job)
		} else {
			_, err = expandText(name, text, job)
		}
		if err != nil && !outOfRange(err) {
			return model.FieldErrorf("action."+name, "%v", err)
		}
	}
	return nil
}

// sampleAt is the fire time of the sample jobs.
var sampleAt = time.Date(2026, time.January, 2, 3, 4, 5, 0, time.UTC)

// sampleJobs returns the jobs text is checked with: a scheduled fire, with
// no params and no payload, and a submission with every param text names
// and a payload.
func sampleJobs(text string) []Job {
	fire := Job{
		InstanceID:  "00000000000000a1",
		ExecutionID: "00000000000000a1-1",
		Task:        "sample",
		Attempt:     1,
		ScheduledAt: sampleAt,
		Timezone:    "UTC",
	}
	submitted := fire
	submitted.Params = map[string]string{"sample": "sample"}
	for name := range paramNames(text) {
		submitted.Params[name] = "sample"
	}
	submitted.Payload = json.RawMessage(`{"sample":"sample"}`)
	return []Job{fire, submitted}
}

// paramNames returns the params text names: x in .Params.x or
// $.Params.x, and "x" in index .Params "x". It is empty when text does not
// parse.
func paramNames(text string) map[string]bool {
	names := map[string]bool{}
	if !strings.Contains(text, "{{") {
		return names
	}
	t, err := template.New("").Parse(text)
	if err != nil {
		return names
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			walkParams(tt.Root, names)
		}
	}
	return names
}

// walkParams adds the params named under n to names.
func walkParams(n parse.Node, names map[string]bool) {
	ident := func(ident []string) {
		for i := 0; i+1 < len(ident); i++ {
			if ident[i] == "Params" {
				names[ident[i+1]] = true
			}
		}
	}
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			walkEach(n.Nodes, names)
		}
	case *parse.ActionNode:
		walkParams(n.Pipe, names)
	case *parse.IfNode:
		walkParams(&n.BranchNode, names)
	case *parse.RangeNode:
		walkParams(&n.BranchNode, names)
	case *parse.WithNode:
		walkParams(&n.BranchNode, names)
	case *parse.BranchNode:
		walkParams(n.Pipe, names)
		walkParams(n.List, names)
		walkParams(n.ElseList, names)
	case *parse.TemplateNode:
		walkParams(n.Pipe, names)
	case *parse.PipeNode:
		if n != nil {
			walkEach(n.Cmds, names)
		}
	case *parse.ChainNode:
		walkParams(n.Node, names)
	case *parse.CommandNode:
		walkEach(n.Args, names)
		if len(n.Args) >= 3 && n.Args[0].String() == "index" && strings.HasSuffix(n.Args[1].String(), ".Params") {
			if s, ok := n.Args[2].(*parse.StringNode); ok {
				names[s.Text] = true
			}
		}
	case *parse.FieldNode:
		ident(n.Ident)
	case *parse.VariableNode:
		ident(n.Ident)
	}
}

// walkEach walks each of nodes.
func walkEach[N parse.Node](nodes []N, names map[string]bool) {
	for _, n := range nodes {
		walkParams(n, names)
	}
}

// outOfRange reports whether err is an index out of range from the index
// or slice function of a template.
func outOfRange(err error) bool {
	var ee template.ExecError
	if !errors.As(err, &ee) {
		return false
	}
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
		err = u
	}
	return strings.HasPrefix(err.Error(), "index out of range")
}
