package agent

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/tlsutil"
)

// checkTransportSecurity refuses to listen without TLS on an address
// other machines can reach, unless cfg.Insecure; with Insecure it warns
// at every start.
func checkTransportSecurity(cfg Config, log hclog.Logger) error {
	if cfg.TLS != nil {
		return nil
	}
	var exposed []string
	for _, a := range []string{cfg.HTTPAddr, cfg.RaftAddr} {
		if !isLoopback(a) {
			exposed = append(exposed, a)
		}
	}
	if cfg.PprofAddr != "" && !isLoopback(cfg.PprofAddr) {
		exposed = append(exposed, cfg.PprofAddr+" (-pprof)")
	}
	if len(exposed) == 0 {
		return nil
	}
	if !cfg.Insecure {
		return fmt.Errorf("agent: refusing to listen on %s without TLS: anyone who can reach it could take over the cluster "+
			"(its Raft port accepts log entries from any connection). Give every node -tls-ca, -tls-cert and -tls-key "+
			"(make them with ax tls ca create and ax tls cert create), or pass -insecure to run without TLS on a network you trust",
			strings.Join(exposed, " and "))
	}
	log.Warn("running without TLS on a non-loopback address (-insecure): anyone who can reach it can read and write the cluster's state",
		"addresses", strings.Join(exposed, ","))
	return nil
}

// isLoopback says whether a listen address stays on this machine:
// localhost or a loopback IP. An empty host listens everywhere.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	host, _, _ = strings.Cut(host, "%") // an IPv6 zone
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tlsListener serves ln with TLS when the agent has certificates.
func tlsListener(ln net.Listener, h *tlsutil.Holder) net.Listener {
	if h == nil {
		return ln
	}
	return tls.NewListener(ln, h.HTTPServerConfig())
}
