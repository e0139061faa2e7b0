package notify

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/ax-scheduler/ax/model"
)

// Subject is the one-line summary of a notification, e.g.
// "[ax] FIRING critical: task nightly failing (3 failures)".
func Subject(n *model.AlertNotification) string {
	a := &n.Alert
	if n.Event == model.AlertResolved {
		return fmt.Sprintf("[ax] RESOLVED %s: %s", a.Severity, a.Summary)
	}
	s := fmt.Sprintf("[ax] %s %s: %s", strings.ToUpper(n.Event), a.Severity, a.Summary)
	if a.Rule == model.RuleInstanceFailed && a.Count > 1 {
		s += fmt.Sprintf(" (%d failures)", a.Count)
	}
	return s
}

// Link returns the console page of an alert's subject under consoleURL:
// the instance (/ui/#/instances/ID), else the task (/ui/#/tasks/NAME),
// else the overview (/ui/#/).
func Link(consoleURL string, a *model.Alert) string {
	base := strings.TrimRight(consoleURL, "/") + "/ui/#/"
	switch {
	case a.Subject.Instance != "":
		return base + "instances/" + url.PathEscape(a.Subject.Instance)
	case a.Subject.Task != "":
		return base + "tasks/" + url.PathEscape(a.Subject.Task)
	}
	return base
}

// Text renders the readable message of a notification: what happened,
// and for a failure the instance, when, which attempt, how it failed,
// what to do, the output's last lines and the console link.
func Text(n *model.AlertNotification, f *model.FailureReport, link string) string {
	var b strings.Builder
	a := &n.Alert
	b.WriteString(strings.TrimPrefix(Subject(n), "[ax] "))
	b.WriteString("\n\n")
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-12s %s\n", k+":", v)
		}
	}
	if f != nil && n.Event == model.AlertFiring {
		row("Task", f.Task)
		row("Instance", f.InstanceID)
		row("Failed at", timeText(f.FailedAt))
		row("Attempt", fmt.Sprintf("%d of %d", f.Attempt, f.MaxAttempts))
		row("Failure", ClassText(f))
		row("Error", oneLine(f.Error, 300))
		if f.Executor != "" {
			where := f.Executor
			if f.Host != "" {
				where += " on host " + f.Host
			}
			row("Executor", where)
		}
		b.WriteString("\nWhat to do: " + f.Suggestion + "\n")
		if len(f.LogTail) > 0 {
			fmt.Fprintf(&b, "\nLast %d lines of output:\n", len(f.LogTail))
			for _, l := range f.LogTail {
				b.WriteString("  | " + l + "\n")
			}
		} else {
			b.WriteString("\n(no output)\n")
		}
	} else {
		if a.Subject.Task != "" {
			row("Task", a.Subject.Task)
		}
		row("Instance", a.Subject.Instance)
		row("Node", a.Subject.Node)
		row("Executor", a.Subject.Executor)
		for _, k := range detailKeys(a) {
			row(k, oneLine(a.Details[k], 300))
		}
	}
	b.WriteString("\n")
	row("Open", link)
	row("Alert", a.ID)
	row("Rule", a.Rule)
	for _, r := range alertTimes(n) {
		row(r[0], r[1])
	}
	return b.String()
}

// alertTimes are the last rows of a message: when the alert was first
// seen, when it resolved (or was last seen), and how often it fired.
func alertTimes(n *model.AlertNotification) [][2]string {
	a := &n.Alert
	rows := [][2]string{{"First seen", timeText(a.FirstSeen)}}
	if n.Event == model.AlertResolved && a.ResolvedAt != nil {
		rows = append(rows, [2]string{"Resolved", timeText(*a.ResolvedAt)})
	} else {
		rows = append(rows, [2]string{"Last seen", timeText(a.LastSeen)})
	}
	if a.Count > 1 {
		rows = append(rows, [2]string{"Count", fmt.Sprint(a.Count)})
	}
	return rows
}

// detailKeys are an alert's detail keys, sorted.
func detailKeys(a *model.Alert) []string { return slices.Sorted(maps.Keys(a.Details)) }

// Slack renders the text of a Slack-compatible incoming webhook message:
// a bold subject line, the failure's essentials, what to do, a short log
// tail in a code block and the link.
func Slack(n *model.AlertNotification, f *model.FailureReport, link string) string {
	var b strings.Builder
	a := &n.Alert
	b.WriteString("*" + slackEscape(strings.TrimPrefix(Subject(n), "[ax] ")) + "*\n")
	if f != nil && n.Event == model.AlertFiring {
		fmt.Fprintf(&b, "Instance <%s|%s> of `%s` failed at %s, attempt %d of %d: %s\n", link, f.InstanceID, slackEscape(f.Task),
			timeText(f.FailedAt), f.Attempt, f.MaxAttempts, slackEscape(ClassText(f)))
		if f.Error != "" {
			b.WriteString("Error: " + slackEscape(oneLine(f.Error, 300)) + "\n")
		}
		b.WriteString("*What to do:* " + slackEscape(f.Suggestion) + "\n")
		if tail := f.LogTail; len(tail) > 0 {
			if len(tail) > 10 {
				tail = tail[len(tail)-10:]
			}
			out := strings.Join(tail, "\n")
			if len(out) > 1500 {
				out = "…" + strings.ToValidUTF8(out[len(out)-1500:], "")
			}
			b.WriteString("```\n" + slackEscape(strings.ReplaceAll(out, "```", "'''")) + "\n```\n")
		}
		return b.String()
	}
	if len(a.Details) > 0 {
		for _, k := range detailKeys(a) {
			fmt.Fprintf(&b, "%s: %s\n", slackEscape(k), slackEscape(oneLine(a.Details[k], 200)))
		}
	}
	fmt.Fprintf(&b, "<%s|Open in the console>\n", link)
	return b.String()
}

// slackEscape escapes the three characters Slack's mrkdwn reserves.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// oneLine flattens s to one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// redactURL drops a URL's query and user info (they may carry tokens).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.User, u.Fragment = "", nil, ""
	return u.String()
}
