package cli

import (
	"flag"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestFlagValues: a repeated flag collects its values; ListFlag also
// splits them at commas; key=value pairs and labels become maps, a pair
// without "=" is refused naming the flag.
func TestFlagValues(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var p MultiFlag
	var l ListFlag
	fs.Var(&p, "p", "")
	fs.Var(&l, "ip", "")
	if err := fs.Parse([]string{"-p", "a=1", "-ip", "10.0.0.1, 10.0.0.2", "-p", "b=x=y", "-ip", "::1"}); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Pairs("-p"); err != nil || !reflect.DeepEqual(got, map[string]string{"a": "1", "b": "x=y"}) {
		t.Errorf("Pairs = %v, %v", got, err)
	}
	if want := (ListFlag{"10.0.0.1", "10.0.0.2", "::1"}); !slices.Equal(l, want) {
		t.Errorf("ListFlag = %q, want %q", l, want)
	}
	if _, err := (MultiFlag{"a"}).Pairs("trigger: -p"); err == nil || !strings.Contains(err.Error(), `trigger: -p wants key=value, got "a"`) {
		t.Errorf("Pairs of a bare word: %v", err)
	}
	if got, err := ParseLabels("pool=gpu,zone=a"); err != nil || !reflect.DeepEqual(got, map[string]string{"pool": "gpu", "zone": "a"}) {
		t.Errorf("ParseLabels = %v, %v", got, err)
	}
	if got, err := ParseLabels(""); got != nil || err != nil {
		t.Errorf("ParseLabels(\"\") = %v, %v; want nil", got, err)
	}
	if _, err := ParseLabels("pool"); err == nil {
		t.Error("ParseLabels(pool) accepted")
	}
}

// TestParseInterspersed: flags may follow the arguments.
func TestParseInterspersed(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "", "")
	w := fs.Bool("w", false, "")
	if err := ParseInterspersed(fs, []string{"one", "-addr", "h:1", "two", "-w"}); err != nil {
		t.Fatal(err)
	}
	if *addr != "h:1" || !*w || !slices.Equal(fs.Args(), []string{"one", "two"}) {
		t.Errorf("addr %q, w %v, args %q", *addr, *w, fs.Args())
	}
}
