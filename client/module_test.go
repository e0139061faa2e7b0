package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestModule_ImportableFromAnotherModule: a module outside this repository
// that requires ax (through a replace to this checkout, as a user's go.mod
// would through the module proxy) builds a program with the SDK: an
// executor (package worker) that also uses the API client. It
// resolves every dependency from the local module cache (GOPROXY=off), so
// it talks to no network.
func TestModule_ImportableFromAnotherModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	modLine, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(modLine), "\n", 2)[0], "module"))
	if !strings.Contains(path, ".") {
		t.Fatalf("module path %q has no dot in its first element: go get cannot fetch it", path)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/myworker\n\ngo 1.26\n\nrequire " + path + " v0.0.0\n\nreplace " + path + " => " + root + "\n",
		"main.go": `package main

import (
	"context"
	"fmt"
	"os"

	"` + path + `/client"
	"` + path + `/model"
	"` + path + `/worker"
)

func main() {
	w, err := worker.New(worker.Config{Servers: []string{"127.0.0.1:7070"}, Name: "mine",
		Handlers: map[string]worker.Handler{"hello": func(ctx context.Context, job worker.Job) error {
			fmt.Fprintln(worker.Output(ctx), "hello", job.Params["who"])
			return nil
		}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := client.New(client.Config{Addrs: []string{"127.0.0.1:7070"}})
	_, _ = c.Trigger, model.TriggerRequest{}
	_, _ = c.Decide, client.Approve
	_ = w.Run
}
`,
	}
	// The checkout's go.sum holds the hashes of every dependency, as a
	// user's would after go get; the checksum database is not reachable
	// from tests.
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.sum"] = string(sum)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off")
	// go build -mod=mod records the requirements the build needs (go mod
	// tidy would also want the tests of every dependency's dependencies).
	for _, args := range [][]string{{"build", "-o", filepath.Join(dir, "myworker"), "."}} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "myworker")); err != nil {
		t.Fatal(err)
	}
}
