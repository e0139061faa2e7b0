package client

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
)

// baseURL turns "host:port" into an http:// URL, or https:// when the
// client has a TLS configuration; URLs pass through.
func baseURL(addr string, https bool) string {
	if https && !strings.Contains(addr, "://") {
		return "https://" + strings.TrimRight(addr, "/")
	}
	return BaseURL(addr)
}

// tlsFailure says whether err is a TLS setup problem (an unknown or wrong
// server certificate, a refused client certificate, https to a plain HTTP
// server), which another try or another server will not cure.
func tlsFailure(err error) bool {
	var cve *tls.CertificateVerificationError
	var rhe tls.RecordHeaderError
	var ope *net.OpError
	return errors.As(err, &cve) || errors.As(err, &rhe) ||
		(errors.As(err, &ope) && ope.Op == "remote error") ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}
