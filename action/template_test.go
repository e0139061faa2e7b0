package action

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model/tmpl"
)

func TestTemplateData_dates(t *testing.T) {
	tests := []struct {
		name          string
		scheduledAt   string
		tz            string
		wantDate      string
		wantYesterday string
	}{
		{"utc default", "2026-03-01T02:30:00Z", "", "2026-03-01", "2026-02-28"},
		{"behind utc", "2026-03-01T02:30:00Z", "America/New_York", "2026-02-28", "2026-02-27"},
		{"ahead of utc", "2026-02-28T23:30:00Z", "Asia/Tokyo", "2026-03-01", "2026-02-28"},
		{"after spring forward", "2026-03-29T22:30:00Z", "Europe/Berlin", "2026-03-30", "2026-03-29"},
		{"new year", "2026-01-01T00:00:00Z", "UTC", "2026-01-01", "2025-12-31"},
		{"leap day", "2028-03-01T12:00:00Z", "", "2028-03-01", "2028-02-29"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, _ := time.Parse(time.RFC3339, tt.scheduledAt)
			job := Job{ScheduledAt: at, Timezone: tt.tz}
			got, err := expandURL("https://x/{{.Date}}/{{.Yesterday}}", job)
			if err != nil {
				t.Fatal(err)
			}
			if want := "https://x/" + tt.wantDate + "/" + tt.wantYesterday; got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

// templateJob is the job of the expansion tests.
func templateJob() Job {
	return Job{
		InstanceID:  "01J0ABC",
		ExecutionID: "01J0ABC-2",
		Task:        "nightly",
		Attempt:     2,
		ScheduledAt: time.Date(2026, 3, 1, 2, 30, 0, 123456789, time.FixedZone("x", 3600)),
		Params:      map[string]string{"x": "a b&c", "empty": ""},
		Secrets:     map[string]string{"token": "s3cr3t/?#"},
	}
}

// templateJobWith is templateJob with value as Params.v and payload, if
// not "".
func templateJobWith(value, payload string) Job {
	job := templateJob()
	job.Params["v"] = value
	if payload != "" {
		job.Payload = json.RawMessage(payload)
	}
	return job
}

// urlTests are url templates, expanded with templateJob and the value as
// Params.v; TestCheck checks them too.
var urlTests = []struct {
	name    string
	url     string
	value   string
	payload string
	want    string
	wantErr string
	runOnly bool // the error depends on the job, not the template: Check accepts it
}{
	{name: "no template", url: "https://example.com/a?b#c", want: "https://example.com/a?b#c"},
	{name: "ids", url: "https://x/{{.Task}}/{{.InstanceID}}/{{.ExecutionID}}/{{.Attempt}}", want: "https://x/nightly/01J0ABC/01J0ABC-2/2"},
	{name: "scheduledAt utc millis", url: "https://x/?at={{.ScheduledAt}}", want: "https://x/?at=2026-03-01T01:30:00.123Z"},
	{name: "path", url: "https://x/u/{{.Params.x}}/p", want: "https://x/u/a%20b&c/p"},
	{name: "path traversal of the issue", url: "https://x/api/users/{{.Params.v}}/profile", value: "../../admin?x=",
		want: "https://x/api/users/..%2F..%2Fadmin%3Fx=/profile"},
	{name: "path with a hash and percent", url: "https://x/{{.Params.v}}", value: "a#b%c", want: "https://x/a%23b%25c"},
	{name: "value in a segment with text", url: "https://x/file{{.Params.v}}", value: "..", want: "https://x/file.."},
	{name: "query", url: "https://x/q?x={{.Params.x}}&y=1", want: "https://x/q?x=a+b%26c&y=1"},
	{name: "query injection", url: "https://x/q?a={{.Params.v}}&admin=0", value: "1&admin=1", want: "https://x/q?a=1%26admin%3D1&admin=0"},
	{name: "query without path", url: "https://x?q={{.Params.v}}", value: "a/b", want: "https://x?q=a%2Fb"},
	{name: "urlquery is not escaped twice", url: "https://x/q?x={{urlquery .Params.x}}", want: "https://x/q?x=a+b%26c"},
	{name: "urlquery in the path", url: "https://x/{{urlquery .Params.v}}", value: "a/b c", want: "https://x/a%2Fb+c"},
	{name: "fragment", url: "https://x/p#{{.Params.v}}", value: "a b#c", want: "https://x/p#a%20b%23c"},
	{name: "printf of a value", url: `https://x/{{printf "%s-%s" .Params.v .Task}}`, value: "a/b", want: "https://x/a%2Fb-nightly"},
	{name: "html of a value stays escaped", url: "https://x/{{html .Params.v}}", value: "<a/b>", want: "https://x/&lt%3Ba%2Fb&gt%3B"},
	{name: "slice of a value stays escaped", url: "https://x/{{slice .Params.v 0 3}}", value: "a/b/c", want: "https://x/a%2Fb"},
	{name: "eq on a value", url: `https://x/{{if eq .Params.x "a b&c"}}yes{{end}}`, want: "https://x/yes"},
	{name: "object payload", url: "https://x/?p={{.Payload}}", payload: `{"id": 7}`, want: "https://x/?p=%7B%22id%22%3A+7%7D"},
	{name: "string payload", url: "https://x/{{.Payload}}", payload: `"order 7"`, want: "https://x/order%207"},
	{name: "secret", url: `https://x/?k={{secret "token"}}`, want: "https://x/?k=s3cr3t%2F%3F%23"},
	{name: "raw forms the host", url: "https://{{raw .Params.v}}/x", value: "example.com", want: "https://example.com/x"},
	{name: "raw in the path", url: "https://x/{{raw .Params.v}}", value: "a/b?c", want: "https://x/a/b?c"},

	{name: "value as the host", url: "https://{{.Params.v}}/x", value: "evil.com", wantErr: "cannot form the scheme or host"},
	{name: "value after the host", url: "https://example.com{{.Params.v}}", value: ".evil.com", wantErr: "cannot form the scheme or host"},
	{name: "value as the whole url", url: "{{.Params.v}}", value: "https://evil.com/", wantErr: "cannot form the scheme or host"},
	{name: "value in the userinfo", url: "https://{{.Params.v}}@x/", value: "u", wantErr: "cannot form the scheme or host"},
	{name: "value as a dot-dot segment", url: "https://x/a/{{.Params.v}}/b", value: "..", wantErr: `path segment ".."`, runOnly: true},
	{name: "value as an empty segment", url: "https://x/a/{{.Params.v}}/b", value: "", wantErr: `path segment ""`, runOnly: true},
	{name: "missing secret", url: `https://x/?k={{secret "nope"}}`, wantErr: `secret "nope" was not delivered with the job`, runOnly: true},
	{name: "range", url: "https://x/{{range 10000000}}x{{end}}", wantErr: "range is not allowed"},
	{name: "parse error", url: "https://x/{{.Task", wantErr: "bad url template"},
	{name: "unknown field", url: "https://x/{{.Nope}}", wantErr: "can't evaluate field Nope"},
}

func TestExpandURL(t *testing.T) {
	for _, tt := range urlTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := expandURL(tt.url, templateJobWith(tt.value, tt.payload))
			checkExpansion(t, got, err, tt.want, tt.wantErr)
		})
	}
}

// bodyTests are body templates, expanded with templateJob, the value as
// Params.v and the Content-Type ct if set; TestCheck checks them too.
var bodyTests = []struct {
	name    string
	body    string
	ct      string
	value   string
	payload string
	want    string
	wantErr string
	runOnly bool // the error depends on the job, not the template: Check accepts it
}{
	{name: "injection of the issue", body: `{"amount": 5, "note": "{{.Params.v}}"}`, value: `x", "amount": 1000000, "y": "`,
		want: `{"amount": 5, "note": "x\", \"amount\": 1000000, \"y\": \""}`},
	{name: "control characters and html", body: `["{{.Params.v}}"]`, value: "a\n\\<&\x01", want: `["a\n\\\u003c\u0026\u0001"]`},
	{name: "value outside a string", body: `{"note": {{.Params.v}}}`, value: `1, "amount": 1000000`, want: `{"note": "1, \"amount\": 1000000"}`},
	{name: "key", body: `{"{{.Params.v}}": 1}`, value: `a":2,"b`, want: `{"a\":2,\"b": 1}`},
	{name: "escaped quote before a value", body: `{"a": "\"{{.Params.v}}\""}`, value: `"`, want: `{"a": "\"\"\""}`},
	{name: "object payload as a value", body: `{"p": {{.Payload}}}`, payload: ` {"id": 7} `, want: `{"p": {"id": 7}}`},
	{name: "object payload in a string", body: `{"p": "{{.Payload}}"}`, payload: `{"id":7}`, want: `{"p": "{\"id\":7}"}`},
	{name: "string payload as a value", body: `{"p": {{.Payload}}}`, payload: `"a\"b"`, want: `{"p": "a\"b"}`},
	{name: "payload alone", body: `{{.Payload}}`, payload: `[1,2]`, want: `[1,2]`},
	{name: "slice of a payload is a string", body: `{"p": {{slice .Payload 0 6}}}`, payload: `{"a":"\", \"n\": 1"}`, want: `{"p": "{\"a\":\""}`},
	{name: "value alone", body: ` {{.Params.v}}`, value: "hi", want: ` "hi"`},
	{name: "no payload", body: `{"p": {{.Payload}}}`, want: `{"p": ""}`},
	{name: "json content type", body: `note={{.Params.v}}`, ct: "application/vnd.x+json; charset=utf-8", value: "a", want: `note="a"`},
	{name: "raw", body: `{"n": {{raw .Params.v}}}`, value: "5", want: `{"n": 5}`},
	{name: "secret", body: `{"k": "{{secret "token"}}"}`, want: `{"k": "s3cr3t/?#"}`},
	{name: "form", body: `a=1&note={{.Params.v}}`, ct: "application/x-www-form-urlencoded", value: "x&amount=1000000", want: `a=1&note=x%26amount%3D1000000`},
	{name: "form with urlquery", body: `note={{urlquery .Params.v}}`, ct: "application/x-www-form-urlencoded", value: "a b", want: `note=a+b`},
	{name: "xml", body: `<a>{{.Params.v}}</a>`, ct: "application/xml", value: "</a><b>", want: `<a>&lt;/a&gt;&lt;b&gt;</a>`},
	{name: "text/plain as it is", body: `hello {{.Params.v}}`, ct: "text/plain; charset=utf-8", value: `"<x>"`, want: `hello "<x>"`},
	{name: "urlquery in an unknown format", body: `q={{urlquery .Params.v}}`, value: "a b", want: `q=a+b`},
	{name: "no value in an unknown format", body: `hello {{.Task}}`, want: `hello nightly`},

	{name: "value in an untyped text body", body: `note={{.Params.v}}`, value: "a", wantErr: "set a Content-Type header"},
	{name: "value in an unknown format", body: `{{.Params.v}}`, ct: "application/octet-stream", value: "a", wantErr: "set a Content-Type header"},
	{name: "value after a backslash", body: `{"a": "\{{.Params.v}}"}`, value: `"`, wantErr: "right after a backslash"},
	{name: "missing secret", body: `{"k": "{{secret "nope"}}"}`, wantErr: `secret "nope" was not delivered`, runOnly: true},
	{name: "method with an argument", body: `{{.Yesterday 1}}`, wantErr: "wrong number of args for Yesterday"},
}

func TestExpandBody(t *testing.T) {
	for _, tt := range bodyTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := expandBody(tt.body, templateJobWith(tt.value, tt.payload), tt.ct, tt.ct != "")
			checkExpansion(t, got, err, tt.want, tt.wantErr)
			if err == nil && (tt.ct == "" || strings.Contains(tt.ct, "json")) && !json.Valid([]byte(got)) && strings.HasPrefix(tt.body, "{") {
				t.Errorf("expanded body %q is not JSON", got)
			}
		})
	}
}

// checkExpansion checks an expansion's result against want, or its error
// against wantErr.
func checkExpansion(t *testing.T, got string, err error, want, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("got %q, %v; want error containing %q", got, err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestExpand_limits checks the bounds of rendering with the templates of
// the issue and other bombs: each must fail fast, not eat the node.
func TestExpand_limits(t *testing.T) {
	big := strings.Repeat("x", 40<<10)
	tests := []struct {
		name    string
		expand  func(job Job) (string, error)
		wantErr string
	}{
		{"range of the issue", func(job Job) (string, error) { return expandCommand("{{range 10000000}}x{{end}}", job) }, "range is not allowed"},
		{"printf width", func(job Job) (string, error) { return expandCommand(`echo {{printf "%999999999d" 1}}`, job) }, "width or precision above 1024"},
		{"printf of many wide verbs", func(job Job) (string, error) {
			return expandCommand("echo "+strings.Repeat(`{{printf "%1024d" 1}}`, 80), job)
		}, "template output longer than"},
		{"output over the limit", func(job Job) (string, error) {
			return expandURL("https://x/?"+strings.Repeat("{{.Params.big}}", 2), job)
		}, "template output longer than 65536 bytes"},
		{"a quoted value over the limit", func(job Job) (string, error) {
			job.Params["big"] = strings.Repeat("'", 20<<10)
			return expandCommand("echo {{.Params.big}}", job)
		}, "template output longer than 65536 bytes"},
		{"time limit", func(job Job) (string, error) {
			return render("action.command", "echo {{.Task}}", job, false, -time.Second)
		}, "longer than 100ms to render, and 1s on a second try"},
		{"time limit in a function", func(job Job) (string, error) {
			return render("action.command", "{{$x := print 1}}", job, false, -time.Second)
		}, "longer than 100ms to render, and 1s on a second try"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := templateJob()
			job.Params["big"] = big
			got, err := tt.expand(job)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %d bytes, %v; want error containing %q", len(got), err, tt.wantErr)
			}
		})
	}
	// A large value alone is within the limit, though its marker is twice
	// as long.
	job := templateJob()
	job.Payload = json.RawMessage(`"` + big + `"`)
	if got, err := expandBody(`{"p": "{{.Payload}}"}`, job, "", false); err != nil || len(got) != len(big)+9 {
		t.Errorf("40 KiB payload in a body: got %d bytes, %v; want %d bytes", len(got), err, len(big)+9)
	}
}

func TestExpand_badTimezone(t *testing.T) {
	job := Job{Task: "t", Timezone: "Mars/Olympus"}
	if _, err := expandURL("https://x/{{.Date}}", job); err == nil || !strings.Contains(err.Error(), "Mars/Olympus") {
		t.Errorf("got error %v, want one naming the timezone", err)
	}
	if got, err := expandURL("https://x/{{.Task}}", job); err != nil || got != "https://x/t" {
		t.Errorf("without dates: got %q, %v; want %q, nil", got, err, "https://x/t")
	}
}

func TestExpand_errorIsTemplateError(t *testing.T) {
	_, err := expandCommand("echo {{.Nope}}", templateJob())
	var te *templateError
	if !errors.As(err, &te) || te.name != "command" || !strings.HasPrefix(err.Error(), "bad command template: ") {
		t.Errorf("got %v, want a templateError of the command", err)
	}
}

func TestParamEnv(t *testing.T) {
	tests := []struct{ name, want string }{
		{"x", "AX_PARAM_X"},
		{"order-id", "AX_PARAM_ORDER_ID"},
		{"a.b c", "AX_PARAM_A_B_C"},
		{"Already_UP9", "AX_PARAM_ALREADY_UP9"},
	}
	for _, tt := range tests {
		if got := ParamEnv(tt.name); got != tt.want {
			t.Errorf("ParamEnv(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestModelTemplateFuncNames checks that every function model allows is
// one an executor's template can call.
func TestModelTemplateFuncNames(t *testing.T) {
	for _, name := range tmpl.FuncNames() {
		text := "https://x/{{if 0}}{{" + name + " 1}}{{end}}"
		if name == "secret" {
			text = `https://x/{{if 0}}{{secret "a"}}{{end}}`
		}
		if _, err := expandURL(text, templateJob()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRender_stalledOnce: a rendering stalled past the limit once (a
// starved executor) is tried again with a longer limit and succeeds; a
// stall past both limits is the retryable time-limit error.
func TestRender_stalledOnce(t *testing.T) {
	tests := []struct {
		name    string
		stalls  []time.Duration // the clock's jump at each reading
		wantErr bool
	}{
		{"no stall", nil, false},
		{"one stall past the limit", []time.Duration{0, 150 * time.Millisecond}, false},
		{"stalls past both limits", []time.Duration{0, 150 * time.Millisecond, 0, 2 * time.Second}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, reads := time.Unix(1e9, 0), 0
			now = func() time.Time {
				if reads < len(tt.stalls) {
					at = at.Add(tt.stalls[reads])
				}
				reads++
				return at
			}
			defer func() { now = time.Now }()
			got, err := render("action.command", "echo {{.Task}}", templateJob(), false, TemplateTimeLimit)
			if tt.wantErr {
				if !overTime(err) {
					t.Fatalf("got %q, %v; want the time-limit error", got, err)
				}
				return
			}
			if err != nil || !strings.HasPrefix(got, "echo ") {
				t.Fatalf("got %q, %v; want the rendered command", got, err)
			}
		})
	}
}
