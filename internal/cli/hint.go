package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// Hint names the fix of a CLI error, or is empty: every hint lives here.
func Hint(err error) string {
	if h := tlsHint(err); h != "" {
		return h
	}
	switch {
	case errors.Is(err, model.ErrUnauthorized) && strings.Contains(err.Error(), model.NeedClientCert):
		return "the cluster has TLS and no tokens: its CA's client certificates are the credential: pass -client-cert and -client-key " +
			"(AX_CLIENT_CERT, AX_CLIENT_KEY); make one with ax tls cert create -dir DIR -client NAME"
	case errors.Is(err, model.ErrUnauthorized):
		return "the cluster wants a token: set -token or AX_TOKEN (or -token-file)"
	case errors.Is(err, model.ErrForbidden):
		if m := neededRole.FindStringSubmatch(err.Error()); m != nil {
			return "use a token of role " + m[1] + " or above (an admin creates one with: ax acl token create -name NAME -role " + m[1] + ")"
		}
		return "use a token whose role allows this (ax acl -h lists the roles)"
	case errors.Is(err, model.ErrUnavailable) && strings.Contains(err.Error(), "?stale=true"):
		return "a read without a leader: -stale reads the node's own state, which may be out of date (ax status -stale, ax cluster status -stale)"
	case errors.Is(err, client.ErrNotSent):
		addrs := givenAddrs(err)
		where := "there"
		if len(addrs) > 0 {
			where = "at " + strings.Join(addrs, ", ")
		}
		return "is an agent running " + where + "? set -addr or AX_ADDR"
	}
	return ""
}

// neededRole finds the role a 403 names ("... it needs role writer").
var neededRole = regexp.MustCompile(`needs role (\w+)`)

// failedURL finds the base of each URL a failed request names
// ("GET http://localhost:7999/v1/tasks: cannot connect: ...").
var failedURL = regexp.MustCompile(`\b(?:GET|HEAD|POST|PUT|PATCH|DELETE) (https?://[^/?#\s]+)`)

// givenAddrs are the addresses of the requests that could not be sent as
// the user gave them (-addr, AX_ADDR: localhost:7999, not the
// 127.0.0.1:7999 it resolved to), from the URLs the error names; else
// the addresses dialed.
func givenAddrs(err error) []string {
	var out []string
	for _, m := range failedURL.FindAllStringSubmatch(err.Error(), -1) {
		u, perr := url.Parse(m[1])
		if perr != nil || u.Host == "" || slices.Contains(out, u.Host) {
			continue
		}
		out = append(out, u.Host)
	}
	if len(out) == 0 {
		return dialedAddrs(err)
	}
	return out
}

// dialedAddrs are the addresses of the failed connections in err's tree.
func dialedAddrs(err error) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(error)
	walk = func(e error) {
		if oe, ok := e.(*net.OpError); ok && oe.Addr != nil && !seen[oe.Addr.String()] {
			seen[oe.Addr.String()] = true
			out = append(out, oe.Addr.String())
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if inner := u.Unwrap(); inner != nil {
				walk(inner)
			}
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				walk(inner)
			}
		}
	}
	walk(err)
	return out
}

// tlsHint explains a certificate error, or is empty.
func tlsHint(err error) string {
	if strings.Contains(err.Error(), "HTTP request to an HTTPS server") {
		return "the server speaks https: pass the cluster CA with -ca-cert or AX_CACERT (host:port then means https)"
	}
	if strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return "the server speaks plain http: use an http:// address, or give it TLS (ax agent -tls-ca, -tls-cert, -tls-key)"
	}
	var cve *tls.CertificateVerificationError
	if !errors.As(err, &cve) {
		return ""
	}
	var hostErr x509.HostnameError
	if errors.As(err, &hostErr) {
		return "the server's certificate does not name the address you used: use an address it names, or re-issue it with ax tls cert create -ip/-dns"
	}
	return "the server's certificate is not trusted: pass the cluster CA with -ca-cert or AX_CACERT"
}

// flagErrorPrefixes begin the errors of the flag package.
var flagErrorPrefixes = []string{"flag provided but not defined", "bad flag syntax", "flag needs an argument",
	"invalid value ", "invalid boolean value ", "invalid boolean flag "}

// IsFlagError reports whether err is a flag parsing error.
func IsFlagError(err error) bool {
	for _, p := range flagErrorPrefixes {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}
