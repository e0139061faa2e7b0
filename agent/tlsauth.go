package agent

import "net/http"

// tlsOn reports whether this node serves its API over TLS.
// TODO(tls): wired to the TLS configuration when transport security lands.
func (a *Agent) tlsOn() bool { return false }

// peerNode reports whether r carries a verified cluster node certificate.
func peerNode(r *http.Request) (string, bool) { return "", false }

// clientCertName is the name in r's verified client certificate.
func clientCertName(r *http.Request) (string, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return "", false
	}
	return r.TLS.VerifiedChains[0][0].Subject.CommonName, true
}
