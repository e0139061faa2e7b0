package view

import (
	"io"
	"sort"
	"strings"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
)

// Alerts prints alerts as a table, newest first as given.
func Alerts(w io.Writer, alerts []model.Alert) error {
	tw := newTable(w)
	row(tw, "STATE", "RULE", "SEVERITY", "SUBJECT", "COUNT", "FIRST SEEN", "LAST SEEN", "SUMMARY")
	for _, a := range alerts {
		st := a.State
		if a.Silenced {
			st += " (SILENCED)"
		}
		row(tw, st, a.Rule, a.Severity, subject(a.Subject), a.Count, fmtTime(a.FirstSeen), fmtTime(a.LastSeen), a.Summary)
	}
	return tw.Flush()
}

// Silences prints silences as a table.
func Silences(w io.Writer, silences []model.Silence) error {
	tw := newTable(w)
	row(tw, "ID", "TASK", "RULE", "LABELS", "UNTIL", "BY", "COMMENT")
	for _, s := range silences {
		row(tw, s.ID, orDash(s.Task), orDash(s.Rule), orDash(joinLabels(s.Labels)), fmtTime(s.Until), orDash(s.By), s.Comment)
	}
	return tw.Flush()
}

// subject words what an alert is about.
func subject(s model.AlertSubject) string {
	var parts []string
	for _, p := range [][2]string{{"task", s.Task}, {"instance", s.Instance}, {"node", s.Node}, {"executor", s.Executor}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+p[1])
		}
	}
	return strings.Join(parts, " ")
}

// Channels prints channels as a table (secrets only as set or not).
func Channels(w io.Writer, chans []channel.Channel) error {
	tw := newTable(w)
	row(tw, "NAME", "TYPE", "TO", "MATCH", "MIN SEVERITY", "EVENTS", "SECRET")
	for _, ch := range chans {
		to, secret := ch.URL, "-"
		if ch.Email != nil {
			to = strings.Join(ch.Email.To, ",")
			if ch.Email.PasswordSet {
				secret = "password set"
			}
		}
		if ch.SecretSet {
			secret = "set"
		}
		row(tw, ch.Name, ch.Type, orDash(to), matchText(ch.Match), orDash(ch.MinSeverity), orDash(strings.Join(ch.Events, ",")), secret)
	}
	return tw.Flush()
}

// matchText words a channel's match: the labels an alert's task needs.
func matchText(m map[string]string) string {
	if len(m) == 0 {
		return "(every alert)"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return strings.Join(keys, ",")
}
