package tmpl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model/tmpl"
)

// missingArg is a format with more verbs than the call gives arguments
// (a variable, so that vet lets it through).
var missingArg = "%d %d"

func TestFuncs_limits(t *testing.T) {
	big := strings.Repeat("x", tmpl.OutputLimit)
	tests := []struct {
		name    string
		call    func(f *tmpl.Funcs) (string, error)
		want    string
		wantErr string
	}{
		{"printf", func(f *tmpl.Funcs) (string, error) { return f.Printf("%05d-%s-%.2f-%q", 7, "a", 1.5, "b") }, `00007-a-1.50-"b"`, ""},
		{"printf width at the limit", func(f *tmpl.Funcs) (string, error) { return f.Printf("%1024d", 1) }, strings.Repeat(" ", 1023) + "1", ""},
		{"printf width above the limit", func(f *tmpl.Funcs) (string, error) { return f.Printf("%1025d", 1) }, "", "width or precision above 1024"},
		{"printf huge width", func(f *tmpl.Funcs) (string, error) { return f.Printf("%999999999d", 1) }, "", "width or precision above 1024"},
		{"printf precision above the limit", func(f *tmpl.Funcs) (string, error) { return f.Printf("%.2000f", 1.0) }, "", "width or precision above 1024"},
		{"printf star width", func(f *tmpl.Funcs) (string, error) { return f.Printf("%*d", 100000000, 1) }, "", "'*' and [n] are not allowed"},
		{"printf star precision", func(f *tmpl.Funcs) (string, error) { return f.Printf("%.*f", 100000000, 1.0) }, "", "'*' and [n] are not allowed"},
		{"printf argument index", func(f *tmpl.Funcs) (string, error) { return f.Printf("%[1]s%[1]s", big) }, "", "'*' and [n] are not allowed"},
		{"printf many wide verbs", func(f *tmpl.Funcs) (string, error) {
			return f.Printf(strings.Repeat("%1024d", 100), make([]any, 100)...)
		}, "", "template output longer than"},
		{"printf of a long argument", func(f *tmpl.Funcs) (string, error) { return f.Printf("%s!", big) }, "", "template output longer than"},
		{"printf hex of a long argument", func(f *tmpl.Funcs) (string, error) { return f.Printf("% x", big[:20000]) }, "", "template output longer than"},
		{"printf missing and extra arguments", func(f *tmpl.Funcs) (string, error) { return f.Printf(missingArg, 1) }, "1 %!d(MISSING)", ""},
		{"print", func(f *tmpl.Funcs) (string, error) { return f.Print("a", 1, 2, "b") }, "a1 2b", ""},
		{"print too long", func(f *tmpl.Funcs) (string, error) { return f.Print(big, "x") }, "", "template output longer than"},
		{"println too long", func(f *tmpl.Funcs) (string, error) { return f.Println(big) }, "", "template output longer than"},
		{"html", func(f *tmpl.Funcs) (string, error) { return f.HTML(`<a href="x">`) }, "&lt;a href=&#34;x&#34;&gt;", ""},
		{"html that grows too long", func(f *tmpl.Funcs) (string, error) { return f.HTML(strings.Repeat(`"`, 20000)) }, "", "template output longer than"},
		{"js", func(f *tmpl.Funcs) (string, error) { return f.JS(`it's`) }, `it\'s`, ""},
		{"js that grows too long", func(f *tmpl.Funcs) (string, error) { return f.JS(strings.Repeat(`<`, 20000)) }, "", "template output longer than"},
		{"urlquery of several", func(f *tmpl.Funcs) (string, error) { return f.URLQuery("a b", "&") }, "a+b%26", ""},
		{"work limit", func(f *tmpl.Funcs) (string, error) {
			half := big[:tmpl.OutputLimit/2]
			for range 2 * tmpl.WorkLimit / len(half) {
				if _, err := f.Print(half); err != nil {
					return "", err
				}
			}
			return "", nil
		}, "", "template functions produced more than"},
		{"check", func(f *tmpl.Funcs) (string, error) {
			f.Check = func() error { return errors.New("too slow") }
			return f.Print("x")
		}, "", "too slow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.call(new(tmpl.Funcs))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %d bytes, %v; want error containing %q", len(got), err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestWriter(t *testing.T) {
	w := &tmpl.Writer{Limit: 5}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("def")); !errors.Is(err, tmpl.ErrOutput) {
		t.Errorf("write past the limit: got %v, want ErrTemplateOutput", err)
	}
	if got := w.String(); got != "abc" {
		t.Errorf("got %q, want %q", got, "abc")
	}
	stop := errors.New("stop")
	w = &tmpl.Writer{Check: func() error { return stop }}
	if _, err := w.Write([]byte("x")); !errors.Is(err, stop) {
		t.Errorf("got %v, want Check's error", err)
	}
}
