// Package visible is what a principal may see of the API's answers:
// literal env and header values of tasks, and the path and query of
// channel URLs, are replaced by Redacted for principals below writer
// (those values are often credentials; only writers, who can set them,
// see them); secret references are shown.
package visible

import (
	"slices"

	"github.com/ax-scheduler/ax/api/pages"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
	"github.com/ax-scheduler/ax/model/live"
)

// Redacted replaces what a principal below writer may not see.
const Redacted = channel.RedactedPath

// For returns v as p may see it: tasks, task lists, histories and audits
// with literal env and header values replaced by Redacted for principals
// below writer. v itself is never changed.
func For(p *model.Principal, v any) any {
	if p.Can(model.RoleWriter) {
		return v
	}
	switch x := v.(type) {
	case *model.Task:
		if x == nil {
			return v
		}
		c := *x
		redactAction(&c.Action)
		return &c
	case *model.TaskList:
		if x == nil {
			return v
		}
		c := *x
		c.Tasks = redactTasks(x.Tasks, func(t *model.Task) *model.Action { return &t.Action })
		return &c
	case *live.TaskSummaryList:
		if x == nil {
			return v
		}
		c := *x
		c.Tasks = redactTasks(x.Tasks, func(t *live.SummarizedTask) *model.Action { return &t.Action })
		return &c
	case *channel.Channel:
		if x == nil {
			return v
		}
		c := *x
		c.URL = redactChannelURL(c.URL)
		return &c
	case *channel.List:
		if x == nil {
			return v
		}
		c := *x
		c.Channels = slices.Clone(x.Channels)
		for i := range c.Channels {
			c.Channels[i].URL = redactChannelURL(c.Channels[i].URL)
		}
		return &c
	case *pages.AuditPage:
		if x == nil {
			return v
		}
		c := *x
		c.Entries = slices.Clone(x.Entries)
		for i := range c.Entries {
			c.Entries[i].Definition, _ = For(p, c.Entries[i].Definition).(*model.Task)
			c.Entries[i].Previous, _ = For(p, c.Entries[i].Previous).(*model.Task)
		}
		return &c
	case *model.TaskHistory:
		if x == nil {
			return v
		}
		c := *x
		c.Versions = slices.Clone(x.Versions)
		for i := range c.Versions {
			if t := c.Versions[i].Task; t != nil {
				tc := *t
				redactAction(&tc.Action)
				c.Versions[i].Task = &tc
			}
		}
		return &c
	}
	return v
}

// redactTasks returns a copy of tasks with the action (found by action)
// of each redacted.
func redactTasks[T any](tasks []T, action func(*T) *model.Action) []T {
	out := slices.Clone(tasks)
	for i := range out {
		redactAction(action(&out[i]))
	}
	return out
}

func redactAction(a *model.Action) {
	a.Env, a.Headers = redactValues(a.Env), redactValues(a.Headers)
}

func redactValues(m map[string]model.Value) map[string]model.Value {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]model.Value, len(m))
	for k, v := range m {
		if v.Text != "" {
			v.Text = Redacted
		}
		out[k] = v
	}
	return out
}

// redactChannelURL keeps a channel URL's scheme and host: its path and
// query are often the credential (a Slack incoming webhook's are).
func redactChannelURL(s string) string { return channel.RedactURL(s) }
