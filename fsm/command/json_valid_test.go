package command

import (
	"encoding/json"
	"strings"
	"testing"
)

var jsonCases = []string{
	`{"order":123456,"action":"close"}`, ` [1, -2.5e+3, 0, -0.0, 1E9, true, false, null, "x\u00e9\n\"", {}] `,
	`{"a":{"b":[[],{}]}}`, `"\ud800"`, "\"\xff\"", `0`, `-`, `01`, `1.`, `1e`, `.5`, `+1`, `[1,]`, `{"a":1,}`,
	`{"a"}`, `{1:2}`, `[1 2]`, `{"a":1}x`, `nul`, `truex`, "\"\x01\"", `"\x"`, `"\u12g4"`, `"abc`, ``, ` `,
	`[`, `]`, `{`, `}`, `{"a":[}`, `[{]}`, `"\/"`, `1 `, "\t\r\n1", `[-]`, `-01`, `1.5e-07`, `{"":""}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
	strings.Repeat("[", 10000) + "{}" + strings.Repeat("]", 10000),
}

func TestValidJSON(t *testing.T) {
	for _, s := range jsonCases {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.40q) = %v, json.Valid says %v", s, got, want)
		}
	}
}

// FuzzValidJSON: validJSON agrees with encoding/json's Valid on any input.
func FuzzValidJSON(f *testing.F) {
	for _, s := range jsonCases {
		if len(s) < 200 {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	p := []byte(`{"order":123456,"action":"close"}`)
	b.Run("validJSON", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if !validJSON(p) {
				b.Fatal()
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if !json.Valid(p) {
				b.Fatal()
			}
		}
	})
}
