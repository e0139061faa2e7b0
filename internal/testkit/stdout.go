package testkit

import (
	"io"
	"os"
	"testing"
)

// Stdout runs f with os.Stdout going to a pipe and returns what f printed
// there, with f's error. Not for parallel tests: os.Stdout is the
// process's.
func Stdout(t testing.TB, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	orig := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = orig }()
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	ferr := f()
	w.Close()
	os.Stdout = orig
	return <-done, ferr
}
