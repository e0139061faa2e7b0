package jsonpath

import (
	"strings"
	"testing"
)

func TestPointer(t *testing.T) {
	doc := `{"data": {"rows": 42, "items": [{"id": "a"}, {"id": "b"}], "a/b": 1, "m~n": 2, "": 3}, "s": "x"}`
	tests := []struct {
		name, ptr, want, wantErr string
	}{
		{name: "whole", ptr: "", want: strings.TrimSpace(doc)},
		{name: "member", ptr: "/data/rows", want: "42"},
		{name: "object", ptr: "/data/items/1", want: `{"id": "b"}`},
		{name: "nested", ptr: "/data/items/0/id", want: `"a"`},
		{name: "escaped slash", ptr: "/data/a~1b", want: "1"},
		{name: "escaped tilde", ptr: "/data/m~0n", want: "2"},
		{name: "empty key", ptr: "/data/", want: "3"},
		{name: "no member", ptr: "/data/nope", wantErr: `/data/nope: no member "nope"`},
		{name: "past the end", ptr: "/data/items/2", wantErr: "past the end of an array of 2"},
		{name: "dash", ptr: "/data/items/-", wantErr: `"-" is not an array index`},
		{name: "leading zero", ptr: "/data/items/01", wantErr: `"01" is not an array index`},
		{name: "into a scalar", ptr: "/s/x", wantErr: `/s: "\"x\"" is not an object or an array`},
		{name: "no slash", ptr: "data", wantErr: "must be empty or start with /"},
		{name: "bad tilde", ptr: "/a~2", wantErr: "~ must be followed by 0 or 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Pointer([]byte(doc), tt.ptr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %s, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %s, %v; want %s", got, err, tt.want)
			}
		})
	}
	if _, err := Pointer([]byte("{bad"), ""); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("invalid document: got %v, want it refused", err)
	}
}
