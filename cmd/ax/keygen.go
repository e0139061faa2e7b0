package main

import (
	"context"
	"fmt"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/agent"
)

// keygenCmd is ax keygen.
type keygenCmd struct{ command.Base }

// newKeygenCmd makes ax keygen.
func newKeygenCmd(io *command.IO) command.Command {
	c := &keygenCmd{}
	c.Init(io, "keygen", `
Usage: ax keygen

Prints a new random AES-256 key (base64) for ax agent -encrypt-key-file.
Every node of a cluster needs the same key.

Example:
	ax keygen > /etc/ax/encrypt.key && chmod 600 /etc/ax/encrypt.key
`)
	return c
}

func (c *keygenCmd) Run(ctx context.Context, args []string) error {
	if err := c.FS.Parse(args); err != nil {
		return err
	}
	fmt.Fprintln(c.IO.Stdout, agent.NewEncryptKey())
	return nil
}
