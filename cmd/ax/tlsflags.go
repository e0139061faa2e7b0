package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/tlsutil"
)

// exportTLS puts a client's TLS flags in the environment that shell tasks
// inherit, so that an ax command they run (ax approval request) reaches
// the cluster the same way.
func exportTLS(f cli.TLSFlags) {
	for k, v := range map[string]string{"AX_CACERT": f.CACert, "AX_CLIENT_CERT": f.ClientCert, "AX_CLIENT_KEY": f.ClientKey} {
		if v != "" {
			_ = os.Setenv(k, v)
		}
	}
}

// agentTLSFlags are ax agent's transport security flags.
type agentTLSFlags struct {
	ca, cert, key string
}

func (f *agentTLSFlags) register(fs *flag.FlagSet, cfg *agent.Config) {
	fs.StringVar(&f.ca, "tls-ca", "", "cluster CA certificate: with -tls-cert and -tls-key, TLS on HTTP and mutual TLS on Raft")
	fs.StringVar(&f.cert, "tls-cert", "", "this node's certificate (ax tls cert create -node NAME)")
	fs.StringVar(&f.key, "tls-key", "", "its private key")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "allow non-loopback HTTP or Raft addresses without TLS")
}

// load reads the certificates into cfg.TLS when the flags are given.
func (f *agentTLSFlags) load(cfg *agent.Config) error {
	set := 0
	for _, v := range []string{f.ca, f.cert, f.key} {
		if v != "" {
			set++
		}
	}
	switch set {
	case 0:
		return nil
	case 3:
		h, err := tlsutil.Load(tlsutil.Config{CAFile: f.ca, CertFile: f.cert, KeyFile: f.key})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		cfg.TLS = h
		// The embedded executor's shell tasks (ax approval request)
		// verify the node with the CA; the node's own key stays out of
		// their environment.
		_ = os.Setenv("AX_CACERT", f.ca)
		return nil
	default:
		return errors.New("agent: -tls-ca, -tls-cert and -tls-key go together: give all three (ax tls -h shows how to make them) or none")
	}
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
