package view

import (
	"fmt"
	"io"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// Tokens prints ACL tokens as a table (never their secrets); now marks
// the expired ones.
func Tokens(w io.Writer, tokens []model.ACLToken, now time.Time) error {
	tw := newTable(w)
	row(tw, "NAME", "ROLE", "EXECUTOR", "LABELS", "CREATED", "BY", "EXPIRES")
	for _, t := range tokens {
		exp := "never"
		if t.ExpiresAt != nil {
			exp = fmtTime(*t.ExpiresAt)
			if t.ExpiresAt.Before(now) {
				exp += " (expired)"
			}
		}
		row(tw, t.Name, t.Role, orDash(t.Executor), orDash(joinLabels(t.Labels)), fmtTime(t.CreatedAt), orDash(t.CreatedBy), exp)
	}
	return tw.Flush()
}

// Token prints a new token: as a table, its secret alone on stdout (so
// that it can be piped into a file) and what it is on stderr.
func Token(stdout, stderr io.Writer, t *model.ACLToken, out Output) error {
	if out.format != FormatTable {
		return out.Print(stdout, t, nil)
	}
	desc := fmt.Sprintf("token %s, role %s", t.Name, t.Role)
	if t.Executor != "" {
		desc += ", executor " + t.Executor
	}
	if len(t.Labels) > 0 {
		desc += ", labels " + joinLabels(t.Labels)
	}
	if t.ExpiresAt != nil {
		desc += ", expires " + t.ExpiresAt.Format(time.RFC3339)
	}
	fmt.Fprintln(stderr, desc+" (the secret below is shown once; keep it)")
	fmt.Fprintln(stdout, t.Secret)
	return nil
}

// Secrets prints secrets as a table: names and versions, never values.
func Secrets(w io.Writer, secrets []model.Secret) error {
	tw := newTable(w)
	row(tw, "NAME", "VERSION", "ENCRYPTED", "UPDATED", "BY")
	for _, s := range secrets {
		row(tw, s.Name, s.Version, s.Encrypted, fmtTime(s.UpdatedAt), orDash(s.UpdatedBy))
	}
	return tw.Flush()
}
