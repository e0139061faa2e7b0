package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/command"
	"github.com/ax-scheduler/ax/tlsutil"
)

// exportTLS puts a client's TLS flags in the environment that shell tasks
// inherit, so that an ax command they run (ax approval request) reaches
// the cluster the same way.
func exportTLS(io *command.IO, f cli.TLSFlags) error {
	for k, v := range map[string]string{"AX_CACERT": f.CACert, "AX_CLIENT_CERT": f.ClientCert, "AX_CLIENT_KEY": f.ClientKey} {
		if v != "" {
			if err := io.Setenv(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// reloadOnSIGHUP reloads the agent's certificates on every SIGHUP until
// ctx ends; a failed reload keeps the old ones.
func reloadOnSIGHUP(ctx context.Context, h *tlsutil.Holder, log hclog.Logger) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
			}
			if h == nil {
				log.Info("SIGHUP: no TLS certificates to reload")
				continue
			}
			if err := h.Reload(); err != nil {
				log.Error("reloading TLS certificates failed; keeping the old ones", "error", err)
				continue
			}
			c := h.Certificate()
			log.Info("reloaded TLS certificates", "serial", c.SerialNumber.Text(16), "not_after", c.NotAfter.UTC())
		}
	}()
}
