package action

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
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
			got, err := expandText("url", "{{.Date}} {{.Yesterday}}", job)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.wantDate + " " + tt.wantYesterday; got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

// textTests are url and body templates, expanded with TestExpandText's
// job; TestCheck checks them too.
var textTests = []struct {
	name    string
	text    string
	payload string
	want    string
	wantErr string
}{
	{name: "no template", text: "plain {text}", want: "plain {text}"},
	{name: "scheduledAt utc millis", text: "{{.ScheduledAt}}", want: "2026-03-01T01:30:00.123Z"},
	{name: "ids", text: "{{.Task}}/{{.InstanceID}}/{{.ExecutionID}}/{{.Attempt}}", want: "nightly/01J0ABC/01J0ABC-2/2"},
	{name: "param as is", text: "{{.Params.x}}", want: "a b&c"},
	{name: "param urlquery", text: "q={{urlquery .Params.x}}", want: "q=a+b%26c"},
	{name: "missing param", text: "[{{.Params.nope}}]", want: "[]"},
	{name: "eq on param", text: `{{if eq .Params.x "a b&c"}}yes{{end}}`, want: "yes"},
	{name: "string payload", text: "{{.Payload}}", payload: `"order-7"`, want: "order-7"},
	{name: "object payload", text: "{{.Payload}}", payload: ` {"id": 7} `, want: `{"id": 7}`},
	{name: "number payload", text: "{{.Payload}}", payload: `42`, want: `42`},
	{name: "no payload", text: "[{{.Payload}}]", want: "[]"},
	{name: "parse error", text: "{{.Task", wantErr: "bad url template"},
	{name: "unknown field", text: "{{.Nope}}", wantErr: "can't evaluate field Nope"},
}

func TestExpandText(t *testing.T) {
	at := time.Date(2026, 3, 1, 2, 30, 0, 123456789, time.FixedZone("x", 3600))
	job := Job{
		InstanceID:  "01J0ABC",
		ExecutionID: "01J0ABC-2",
		Task:        "nightly",
		Attempt:     2,
		ScheduledAt: at,
		Params:      map[string]string{"x": "a b&c", "empty": ""},
	}
	for _, tt := range textTests {
		t.Run(tt.name, func(t *testing.T) {
			job := job
			if tt.payload != "" {
				job.Payload = json.RawMessage(tt.payload)
			}
			got, err := expandText("url", tt.text, job)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExpandText_badTimezone(t *testing.T) {
	job := Job{Task: "t", Timezone: "Mars/Olympus"}
	if _, err := expandText("body", "{{.Date}}", job); err == nil || !strings.Contains(err.Error(), "Mars/Olympus") {
		t.Errorf("got error %v, want one naming the timezone", err)
	}
	if got, err := expandText("body", "{{.Task}}", job); err != nil || got != "t" {
		t.Errorf("without dates: got %q, %v; want %q, nil", got, err, "t")
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
