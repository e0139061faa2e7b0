package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// Config names the PEM files of a node's TLS identity.
type Config struct {
	CAFile   string // the cluster CA certificate(s)
	CertFile string // this node's certificate (ax tls cert create -node)
	KeyFile  string // its private key
}

// material is one loaded generation of a node's certificate and CA pool.
type material struct {
	cert *tls.Certificate
	pool *x509.CertPool
}

// Holder holds a node's current certificate and CA pool. The tls.Configs
// it builds read them at every handshake, so Reload takes effect for new
// connections without a restart. It is safe for concurrent use.
type Holder struct {
	cfg Config
	cur atomic.Pointer[material]
}

// Load reads cfg's files. The certificate must be a node certificate
// (naming "server.ax", for server and client authentication) signed by
// the CA.
func Load(cfg Config) (*Holder, error) {
	h := &Holder{cfg: cfg}
	if err := h.Reload(); err != nil {
		return nil, err
	}
	return h, nil
}

// Reload reads the files again and, if they are valid, uses them for
// every later handshake; on error the holder keeps what it had.
func (h *Holder) Reload() error {
	m, err := loadMaterial(h.cfg)
	if err != nil {
		return err
	}
	h.cur.Store(m)
	return nil
}

// Certificate returns the node certificate in use.
func (h *Holder) Certificate() *x509.Certificate { return h.cur.Load().cert.Leaf }

func loadMaterial(cfg Config) (*material, error) {
	if cfg.CAFile == "" || cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, errors.New("tlsutil: the CA, certificate and key files are all required")
	}
	pool, err := loadPool(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tlsutil: %w", err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tlsutil: %s: %w", cfg.CertFile, err)
		}
		cert.Leaf = leaf
	}
	if !hasServerName(leaf) || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return nil, fmt.Errorf("tlsutil: %s is not a node certificate (it must name %s and allow client and server authentication): create one with ax tls cert create -node NAME", cfg.CertFile, ServerName)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: intermediates(cert.Certificate[1:]), DNSName: ServerName}); err != nil {
		return nil, fmt.Errorf("tlsutil: %s does not verify against the CA in %s: %w", cfg.CertFile, cfg.CAFile, err)
	}
	return &material{cert: &cert, pool: pool}, nil
}

func loadPool(caFile string) (*x509.CertPool, error) {
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tlsutil: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tlsutil: %s holds no PEM certificate", caFile)
	}
	return pool, nil
}

func intermediates(ders [][]byte) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, d := range ders {
		if c, err := x509.ParseCertificate(d); err == nil {
			pool.AddCert(c)
		}
	}
	return pool
}

// hasServerName says whether c names the cluster server role exactly (a
// wildcard does not count).
func hasServerName(c *x509.Certificate) bool {
	return slices.Contains(c.DNSNames, ServerName)
}

// HTTPServerConfig is the API listener's TLS: this node's certificate; a
// client certificate is optional, and verified against the CA when one is
// presented (PeerNode reads it).
func (h *Holder) HTTPServerConfig() *tls.Config {
	return h.serverConfig(tls.VerifyClientCertIfGiven, nil)
}

// RaftServerConfig is the TLS of accepted Raft connections: the peer must
// present a certificate from the CA that names "server.ax".
func (h *Holder) RaftServerConfig() *tls.Config {
	return h.serverConfig(tls.RequireAndVerifyClientCert, func(cs tls.ConnectionState) error {
		if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
			return errors.New("tlsutil: peer presented no verified certificate")
		}
		if leaf := cs.VerifiedChains[0][0]; !hasServerName(leaf) {
			return fmt.Errorf("tlsutil: certificate %q is not a cluster node certificate (it does not name %s)", leaf.Subject.CommonName, ServerName)
		}
		return nil
	})
}

// serverConfig builds, for every handshake, a config holding the current
// certificate and CA pool. Session tickets are off so that every
// connection is verified against the current pool.
func (h *Holder) serverConfig(auth tls.ClientAuthType, verify func(tls.ConnectionState) error) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := h.cur.Load()
			return &tls.Config{
				MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{*m.cert},
				ClientAuth: auth, ClientCAs: m.pool, VerifyConnection: verify, SessionTicketsDisabled: true,
			}, nil
		},
		SessionTicketsDisabled: true,
	}
}

// PeerClientConfig is the TLS of connections this node opens to other
// nodes (Raft, forwarding, joins, its embedded executor): the server must
// present a certificate from the CA that names "server.ax", whatever
// address was dialled; this node presents its own certificate.
func (h *Holder) PeerClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: ServerName,
		// Go's built-in verification would pin the pool at build time;
		// VerifyConnection below does the full verification against the
		// pool current at each handshake instead.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyServer(cs.PeerCertificates, h.cur.Load().pool)
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return h.cur.Load().cert, nil
		},
	}
}

// verifyServer verifies a server's chain against pool as a cluster node.
func verifyServer(chain []*x509.Certificate, pool *x509.CertPool) error {
	if len(chain) == 0 {
		return errors.New("tlsutil: server presented no certificate")
	}
	leaf := chain[0]
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: ServerName,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return &tls.CertificateVerificationError{UnverifiedCertificates: chain, Err: err}
	}
	if !hasServerName(leaf) {
		return fmt.Errorf("tlsutil: certificate %q is not a cluster node certificate (it does not name %s)", leaf.Subject.CommonName, ServerName)
	}
	return nil
}

// NewClientConfig returns the TLS of a CLI or SDK client. caFile (empty:
// the system's roots) verifies the server by the host name or IP address
// it was reached at, so node certificates must name the addresses clients
// use (-ip, -dns). certFile and keyFile, when set, are presented as a
// client certificate.
func NewClientConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS13}
	if caFile != "" {
		pool, err := loadPool(caFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("tlsutil: a client certificate needs both its certificate and its key file")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("tlsutil: client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// PeerNode says whether the connection's verified client certificate is a
// cluster node's (it names "server.ax") and which node ("NAME.server.ax").
// ok is false without TLS, without a verified client certificate, for a
// client certificate, and for a node certificate naming no single node.
// Use it on (*http.Request).TLS.
func PeerNode(cs *tls.ConnectionState) (node string, ok bool) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", false
	}
	leaf := cs.VerifiedChains[0][0]
	if !hasServerName(leaf) || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return "", false
	}
	for _, d := range leaf.DNSNames {
		n, found := strings.CutSuffix(d, "."+ServerName)
		if !found || !nodeNameRE.MatchString(n) {
			continue
		}
		if node != "" && node != n {
			return "", false
		}
		node = n
	}
	return node, node != ""
}
