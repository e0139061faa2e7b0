package action

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/ax-scheduler/ax/internal/testkit"
)

func TestTail_write(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{"nothing", 8, nil, ""},
		{"under limit", 8, []string{"abc", "de"}, "abcde"},
		{"exactly limit", 8, []string{"abcd", "efgh"}, "abcdefgh"},
		{"wraps", 8, []string{"abcdef", "ghijk"}, "defghijk"},
		{"wraps twice", 4, []string{"ab", "cd", "ef", "gh", "i"}, "fghi"},
		{"one big write", 4, []string{"abcdefghij"}, "ghij"},
		{"big write after small", 4, []string{"ab", "cdefgh", "i"}, "fghi"},
		{"write of limit when full", 4, []string{"abcde", "wxyz"}, "wxyz"},
		{"single bytes", 3, []string{"a", "b", "c", "d", "e"}, "cde"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := tail{limit: tt.limit}
			for _, w := range tt.writes {
				tl.write([]byte(w))
			}
			if got := string(tl.bytes()); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTail_writeRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		limit := 1 + r.IntN(50)
		tl := tail{limit: limit}
		var all []byte
		for range r.IntN(30) {
			p := make([]byte, r.IntN(2*limit))
			for i := range p {
				p[i] = byte('a' + r.IntN(26))
			}
			tl.write(p)
			all = append(all, p...)
		}
		want := all[max(0, len(all)-limit):]
		if got := tl.bytes(); !bytes.Equal(got, want) {
			t.Fatalf("limit %d: got %q, want %q", limit, got, want)
		}
	}
}

func TestSink_close(t *testing.T) {
	var live testkit.Buffer
	s := newSink(&live, 4, nil)
	io.WriteString(s, "abcdef")
	got := s.close()
	io.WriteString(s, "late")
	if string(got) != "cdef" {
		t.Errorf("kept %q, want %q", got, "cdef")
	}
	if live.String() != "abcdef" {
		t.Errorf("live got %q, want %q", live.String(), "abcdef")
	}
}

func TestOutput_outsideHandler(t *testing.T) {
	if got := Output(context.Background()); got != io.Discard {
		t.Errorf("Output(background) = %v, want io.Discard", got)
	}
}
