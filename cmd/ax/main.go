// Command ax is a replicated job scheduler: one binary for the agent (a
// Raft member that schedules and serves the API) and the CLI that talks to
// it. Main (cli.go) is the program; its command table is commands.go.
package main

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// main runs ax on the process's streams and environment: the one place
// that handles the process's signals and calls os.Exit.
func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value // the signal that stopped the command
	go func() {
		s := <-sigs
		got.Store(s)
		signal.Stop(sigs) // a second Ctrl-C kills at once
		cancel()
	}()
	m := NewMain()
	err := m.Run(ctx, os.Args[1:])
	sig, _ := got.Load().(os.Signal)
	os.Exit(m.Exit(err, sig))
}
