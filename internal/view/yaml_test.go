package view

import (
	"fmt"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestToYAML_Strings: a string comes out in a form every YAML reader takes
// as that string: quoted when YAML 1.2 or YAML 1.1 (PyYAML, yaml.v2)
// would read a plain scalar as a bool, a number, a time or null; a block
// when it spans lines; and it reads back unchanged.
func TestToYAML_Strings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string // want: the line of {"k": in}, "" to check the round trip only
	}{
		{"plain", `k: plain`},
		{"0 2 * * *", `k: 0 2 * * *`},
		{"12:61", `k: 12:61`}, // not base 60: 61 is no sexagesimal digit
		// Bools and numbers of YAML 1.1 only.
		{"yes", `k: "yes"`},
		{"No", `k: "No"`},
		{"off", `k: "off"`},
		{"ON", `k: "ON"`},
		{"y", `k: "y"`},
		{"N", `k: "N"`},
		{"1:30", `k: "1:30"`},
		{"-190:20:30.15", `k: "-190:20:30.15"`},
		// Bools, numbers, times and null of YAML 1.2 (yaml.v3 quotes them).
		{"true", `k: "true"`},
		{"123", `k: "123"`},
		{"0x1F", `k: "0x1F"`},
		{"1e3", `k: "1e3"`},
		{".inf", `k: ".inf"`},
		{"~", `k: "~"`},
		{"null", `k: "null"`},
		{"", `k: ""`},
		{"2030-01-02", `k: "2030-01-02"`},
		{"<<", `k: "<<"`},
		// Indicators and spaces.
		{"a: b", `k: 'a: b'`},
		{"- x", `k: '- x'`},
		{"#c", `k: '#c'`},
		{"@daily", `k: '@daily'`},
		{" lead", `k: ' lead'`},
		{"trail ", `k: 'trail '`},
		// Lines.
		{"a\nb", "k: |-\n  a\n  b"},
		{"a\n", "k: |\n  a"},
		{"\n", ""},
		{"a\n\n", ""},
		{"x\n\ty", "k: |-\n  x\n  \ty"},
		{" x\ny", `k: " x\ny"`},         // go-yaml issue 399 in a list
		{"\ttab\nx", `k: "\ttab\nx"`},   // go-yaml issue 383
		{"\n  a\n b", `k: "\n  a\n b"`}, // go-yaml issue 76
		{"a \nb", `k: "a \nb"`},
		{"x\r\ny", `k: "x\r\ny"`},
		{"x\x00y", `k: "x\0y"`},
		{"\u2028", ""},
		{"é", `k: é`},
	} {
		out, err := YAML(map[string]string{"k": tc.in})
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if tc.want != "" && string(out) != tc.want+"\n" {
			t.Errorf("%q: got\n%s\nwant\n%s", tc.in, out, tc.want)
		}
		var back map[string]string
		if err := yaml.Unmarshal(out, &back); err != nil || back["k"] != tc.in {
			t.Errorf("%q: read back %q (%v) from\n%s", tc.in, back["k"], err, out)
		}
	}
	// Keys are strings too.
	out, err := YAML(map[string]int{"N": 1, "on": 2, "1:30": 3, "k": 4})
	if err != nil {
		t.Fatal(err)
	}
	if want := "\"1:30\": 3\n\"N\": 1\nk: 4\n\"on\": 2\n"; string(out) != want {
		t.Errorf("keys: got\n%s\nwant\n%s", out, want)
	}
}

// TestToYAML_EveryShortString: every string of up to four characters
// among letters, spaces, tabs, line breaks and YAML indicators reads back
// unchanged, as a value of a mapping, of a list, and of both nested.
func TestToYAML_EveryShortString(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", " ", "\t", "\n", ":", "#"}
	strs := []string{""}
	for prev := strs; len(prev[0]) < 4; {
		var next []string
		for _, p := range prev {
			for _, c := range alphabet {
				next = append(next, p+c)
			}
		}
		strs, prev = append(strs, next...), next
	}
	failed := 0
	for _, s := range strs {
		for _, v := range []any{s, map[string]string{"k": s}, []string{s}, map[string][]string{"k": {s}}, []map[string]string{{"k": s}}} {
			out, err := YAML(v)
			if err != nil {
				t.Fatalf("%q: %v", s, err)
			}
			back := reflect.New(reflect.TypeOf(v))
			if err := yaml.Unmarshal(out, back.Interface()); err != nil || !reflect.DeepEqual(back.Elem().Interface(), v) {
				if failed++; failed <= 10 {
					t.Errorf("%s: read back %v (%v) from\n%s", fmt.Sprintf("%#v", v), back.Elem().Interface(), err, out)
				}
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d strings did not read back", failed, len(strs))
	}
}
