package result

import (
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/action/redact"
)

func TestCompact(t *testing.T) {
	red := redact.New("hunter22")
	tests := []struct {
		name, in, want, wantErr string
	}{
		{name: "object", in: " {\"a\": [1, 2],\n \"b\": \"x y\"}\n", want: `{"a":[1,2],"b":"x y"}`},
		{name: "nothing", in: " \n"},
		{name: "scalar", in: "42", want: "42"},
		{name: "not JSON", in: "{a: 1}", wantErr: "not JSON: invalid character 'a'"},
		{name: "two values", in: "1 2", wantErr: "not JSON"},
		{name: "at the limit", in: `"` + strings.Repeat("x", Max-2) + `"`, want: `"` + strings.Repeat("x", Max-2) + `"`},
		{name: "over the limit", in: `"` + strings.Repeat("x", Max-1) + `"`, wantErr: "65537 bytes, over the limit of 65536 (64 KiB)"},
		{name: "compacted under the limit", in: "[" + strings.Repeat(" ", Max) + "1]", want: "[1]"},
		{name: "a secret", in: `{"pw": "hunter22"}`, wantErr: "it holds the value of a secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compact([]byte(tt.in), red)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %.40q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %.40q, %v; want %.40q", got, err, tt.want)
			}
		})
	}
}
