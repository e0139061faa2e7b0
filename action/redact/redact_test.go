package redact

import (
	"bytes"
	"testing"
)

func TestMasker_Redact(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		in     string
		want   string
	}{
		{"none", nil, "hunter22", "hunter22"},
		{"value", []string{"hunter22"}, "pw=hunter22; again hunter22", "pw=***; again ***"},
		{"too short to mask", []string{"abc", ""}, "abc abc", "abc abc"},
		{"longest wins", []string{"abcd", "abcdefgh"}, "xabcdefghx abcdx", "x***x ***x"},
		{"adjacent", []string{"abcd"}, "abcdabcd", "******"},
		{"each line", []string{"line-one\r\nline-two"}, "got line-two only", "got *** only"},
		{"json escaped", []string{`pa"ss\word`}, `{"pw":"pa\"ss\\word"}`, `{"pw":"***"}`},
		{"query escaped", []string{"a b&c=d"}, "https://x/?k=a+b%26c%3Dd", "https://x/?k=***"},
		{"path escaped", []string{"a b/c"}, "https://x/a%20b%2Fc", "https://x/***"},
		{"go quoted", []string{"tab\there"}, `bad value "tab\there"`, `bad value "***"`},
		{"several", []string{"alpha1", "beta22"}, "alpha1beta22", "******"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.values...).Redact(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestWriter_splits writes text in two and three chunks at every
// split point: a value split across writes is masked all the same.
func TestWriter_splits(t *testing.T) {
	r := New("hunter22", "s3cret-longer-value")
	in := "a hunter22 b s3cret-longer-value c hunter22s3cret-longer-value hunter2"
	want := r.Redact(in)
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in); j += 3 {
			var out bytes.Buffer
			w := r.Writer(&out)
			for _, chunk := range []string{in[:i], in[i:j], in[j:]} {
				if n, err := w.Write([]byte(chunk)); err != nil || n != len(chunk) {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Fatalf("split at %d, %d: got %q, want %q", i, j, out.String(), want)
			}
		}
	}
}

func TestWriter_holdsBackOnlyATail(t *testing.T) {
	r := New("hunter22")
	var out bytes.Buffer
	w := r.Writer(&out)
	w.Write([]byte("0123456789hunt"))
	if got, want := out.String(), "0123456"; got != want {
		t.Errorf("after a partial value: wrote %q, want %q (the rest held back)", got, want)
	}
	w.Write([]byte("er22!"))
	w.Flush()
	if got, want := out.String(), "0123456789***!"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var plain bytes.Buffer
	(*Masker)(nil).Writer(&plain).Write([]byte("as is"))
	if plain.String() != "as is" {
		t.Errorf("nil Masker: got %q, want the text as is", plain.String())
	}
}
