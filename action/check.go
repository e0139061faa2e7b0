package action

import (
	"encoding/json"
	"errors"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// Check dry-runs the templates of a, a valid action (see model.Task.Validate),
// the way Run expands them, with the same limits (package tmpl's rules and
// functions, TemplateTimeLimit, tmpl.OutputLimit): a shell
// command through the quoting of caller values, an HTTP url and body
// through their escaping by position. It finds what parsing alone does
// not: an unknown field ({{.Nope}}), a method or function called with
// wrong arguments, a caller value where a shell command cannot quote it,
// in the host of a URL, or in a body whose format is unknown, a template
// too slow or too long. The error is a *model.Error with code
// invalid_argument naming the field (action.command, action.url or
// action.body). Check starts no process and sends nothing.
//
// Each template is expanded twice: as a scheduled fire (no params, no
// payload) and as a submission that gives every param the template names
// and a payload; the secrets the action references get a sample value.
// Branches neither run takes are not checked, and errors that depend on
// how a caller's value looks (an index or slice out of range, a URL path
// segment that a value leaves empty) are not held against a template.
func Check(a *model.Action) error {
	secrets := map[string]string{}
	for _, name := range SecretRefs(a) {
		secrets[name] = "sample-secret"
	}
	switch a.Type {
	case model.ActionShell:
		return checkTemplate("action.command", a.Command, secrets, func(job Job) (string, error) {
			return expandCommand(a.Command, job)
		})
	case model.ActionHTTP:
		err := checkTemplate("action.url", a.URL, secrets, func(job Job) (string, error) {
			return expandURL(a.URL, job)
		})
		if err != nil {
			return err
		}
		ct, typed := contentType(a.Headers)
		return checkTemplate("action.body", a.Body, secrets, func(job Job) (string, error) {
			return expandBody(a.Body, job, ct, typed)
		})
	}
	return nil
}

// checkTemplate expands text, the template of field, with expand for each
// sample job.
func checkTemplate(field, text string, secrets map[string]string, expand func(Job) (string, error)) error {
	for _, job := range sampleJobs(field, text) {
		job.Secrets = secrets
		_, err := expand(job)
		if err != nil && !valueDependent(err) {
			return model.FieldErrorf(field, "%v", err)
		}
	}
	return nil
}

// sampleAt is the fire time of the sample jobs.
var sampleAt = time.Date(2026, time.January, 2, 3, 4, 5, 0, time.UTC)

// sampleJobs returns the jobs text, the template of field, is checked
// with: a scheduled fire, with no params and no payload, and a submission
// with every param text names and a payload.
func sampleJobs(field, text string) []Job {
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
	for name := range paramNames(field, text) {
		submitted.Params[name] = "sample"
	}
	submitted.Payload = json.RawMessage(`{"sample":"sample"}`)
	return []Job{fire, submitted}
}

// paramNames returns the params text, the template of field, names: x in
// .Params.x or $.Params.x, and "x" in index .Params "x". It is empty when
// text does not parse.
func paramNames(field, text string) map[string]bool {
	names := map[string]bool{}
	if !strings.Contains(text, "{{") {
		return names
	}
	t, err := model.ParseTemplate(field, text)
	if err != nil || t.Tree == nil {
		return names
	}
	walkParams(t.Root, names)
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
	case *parse.WithNode:
		walkParams(&n.BranchNode, names)
	case *parse.BranchNode:
		walkParams(n.Pipe, names)
		walkParams(n.List, names)
		walkParams(n.ElseList, names)
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

// valueDependent reports whether err depends on how a caller's value or
// an upstream result looks rather than on the template: an index out of
// range from the index or slice function, reading into an upstream
// result, or a valueError.
func valueDependent(err error) bool {
	var ve *valueError
	if errors.As(err, &ve) {
		return true
	}
	var ee template.ExecError
	if !errors.As(err, &ee) {
		return false
	}
	// The sample jobs have no upstream results: what reads into one
	// (the only values of templates that may be nil) fails.
	if msg := ee.Error(); strings.Contains(msg, "nil pointer evaluating interface {}.") || strings.Contains(msg, "index of untyped nil") ||
		strings.Contains(msg, ".Upstream") && !strings.Contains(msg, "can't evaluate field") {
		return true
	}
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
		err = u
	}
	return strings.HasPrefix(err.Error(), "index out of range")
}
