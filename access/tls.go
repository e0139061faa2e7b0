package access

import (
	"net/http"

	"github.com/ax-scheduler/ax/tlsutil"
)

// peerNode reports whether r carries a verified cluster node certificate,
// and which node's.
func peerNode(r *http.Request) (string, bool) { return tlsutil.PeerNode(r.TLS) }

// clientCertName is the name in r's verified client certificate (not a
// node's: nodes are members, see peerNode).
func clientCertName(r *http.Request) (string, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return "", false
	}
	if _, node := peerNode(r); node {
		return "", false
	}
	return r.TLS.VerifiedChains[0][0].Subject.CommonName, true
}
