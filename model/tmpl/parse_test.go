package tmpl_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model/tmpl"
)

// TestParse_Secrets: Parse returns the secrets a template names, in
// order, and asks validName about each literal name; its errors say the
// rule without a field (the caller names it).
func TestParse_Secrets(t *testing.T) {
	t.Parallel()
	lower := func(s string) bool { return s != "" && strings.ToLower(s) == s }
	_, secrets, err := tmpl.Parse("action.url", `{{secret "b"}}{{if 1}}{{secret "a" | urlquery}}{{end}}`, lower)
	if err != nil || !slices.Equal(secrets, []string{"b", "a"}) {
		t.Fatalf("got %q, %v; want [b a]", secrets, err)
	}
	for _, tc := range []struct{ field, text, want string }{
		{"action.url", `{{secret "B"}}`, `bad template: secret "B" is not a valid name`},
		{"action.url", "{{range .Params}}{{end}}", "bad template: range is not allowed: a template may not loop"},
		{"policy.idempotencyKey", `{{secret "k"}}`, "bad template: secret is not allowed here"},
		{"action.body", "a\x00b", "template contains a NUL byte"},
	} {
		if _, _, err := tmpl.Parse(tc.field, tc.text, lower); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%s, %q) = %v, want %q", tc.field, tc.text, err, tc.want)
		}
	}
}
