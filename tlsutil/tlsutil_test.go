package tlsutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// cluster is a CA with node and client certificates in one directory.
type cluster struct {
	dir string
	ca  string
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	dir := t.TempDir()
	ca, _, err := CreateCA(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{dir: dir, ca: ca}
}

func (c *cluster) node(t *testing.T, name string) *Holder {
	t.Helper()
	cert, key, err := CreateNodeCert(c.dir, name, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Load(Config{CAFile: c.ca, CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (c *cluster) client(t *testing.T, name string) tls.Certificate {
	t.Helper()
	cert, key, err := CreateClientCert(c.dir, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCreateCA_FilesAndModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	cert, key, err := CreateCA(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := filepath.Base(cert), CACertFile; got != want {
		t.Errorf("cert file %s, want %s", got, want)
	}
	st, err := os.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("key mode %v, want 0600", got)
	}
	ca := readCert(t, cert)
	if !ca.IsCA || ca.NotAfter.Before(time.Now().AddDate(4, 11, 0)) {
		t.Errorf("CA: IsCA %v, NotAfter %v; want a CA valid ~5 years", ca.IsCA, ca.NotAfter)
	}
	if _, _, err := CreateCA(dir, 0); !errors.Is(err, ErrExists) {
		t.Errorf("second CreateCA: got %v, want ErrExists", err)
	}
}

func TestCreateNodeCert_Names(t *testing.T) {
	c := newCluster(t)
	cert, key, err := CreateNodeCert(c.dir, "n1", []net.IP{net.ParseIP("10.1.2.3")}, []string{"ax1.example.com"}, 30)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(key); st.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", st.Mode().Perm())
	}
	leaf := readCert(t, cert)
	for _, want := range []string{"server.ax", "n1.server.ax", "localhost", "ax1.example.com"} {
		if !slices.Contains(leaf.DNSNames, want) {
			t.Errorf("DNS names %v lack %s", leaf.DNSNames, want)
		}
	}
	for _, want := range []string{"127.0.0.1", "10.1.2.3"} {
		if !slices.ContainsFunc(leaf.IPAddresses, net.ParseIP(want).Equal) {
			t.Errorf("IPs %v lack %s", leaf.IPAddresses, want)
		}
	}
	if got := leaf.NotAfter.Sub(leaf.NotBefore); got > 31*24*time.Hour || got < 29*24*time.Hour {
		t.Errorf("validity %s, want ~30 days", got)
	}
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Errorf("ext key usage %v, want server and client", leaf.ExtKeyUsage)
	}
	if _, _, err := CreateNodeCert(c.dir, "n1", nil, nil, 0); !errors.Is(err, ErrExists) {
		t.Errorf("re-create: got %v, want ErrExists", err)
	}
}

func TestCreateClientCert_Names(t *testing.T) {
	c := newCluster(t)
	cert, _, err := CreateClientCert(c.dir, "ops.alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	leaf := readCert(t, cert)
	if leaf.Subject.CommonName != "ops.alice" || !slices.Equal(leaf.DNSNames, []string{ClientName}) {
		t.Errorf("got CN %q DNS %v, want ops.alice [client.ax]", leaf.Subject.CommonName, leaf.DNSNames)
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("ext key usage %v, want client only", leaf.ExtKeyUsage)
	}
}

func TestCreate_Refused(t *testing.T) {
	c := newCluster(t)
	tests := []struct {
		name string
		fn   func() error
		want string
	}{
		{"node name with dot", func() error { _, _, err := CreateNodeCert(c.dir, "a.b", nil, nil, 0); return err }, "node name"},
		{"node name upper case", func() error { _, _, err := CreateNodeCert(c.dir, "N1", nil, nil, 0); return err }, "node name"},
		{"reserved dns", func() error { _, _, err := CreateNodeCert(c.dir, "n1", nil, []string{"n2.server.ax"}, 0); return err }, "reserved"},
		{"client dns", func() error { _, _, err := CreateNodeCert(c.dir, "n1", nil, []string{"client.ax"}, 0); return err }, "reserved"},
		{"client with slash", func() error { _, _, err := CreateClientCert(c.dir, "../x", 0); return err }, "client name"},
		{"the CA's name", func() error { _, _, err := CreateClientCert(c.dir, "ax-ca", 0); return err }, "CA's"},
		{"no CA", func() error { _, _, err := CreateNodeCert(t.TempDir(), "n1", nil, nil, 0); return err }, "ax tls ca create"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.fn()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLoad_RefusesClientCertAndForeignCA(t *testing.T) {
	c, other := newCluster(t), newCluster(t)
	cert, key, _ := CreateClientCert(c.dir, "alice", 0)
	if _, err := Load(Config{CAFile: c.ca, CertFile: cert, KeyFile: key}); err == nil || !strings.Contains(err.Error(), "not a node certificate") {
		t.Errorf("client cert as node cert: got %v", err)
	}
	ncert, nkey, _ := CreateNodeCert(c.dir, "n1", nil, nil, 0)
	if _, err := Load(Config{CAFile: other.ca, CertFile: ncert, KeyFile: nkey}); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("node cert of another CA: got %v", err)
	}
	if _, err := Load(Config{CAFile: c.ca, CertFile: ncert}); err == nil {
		t.Error("missing key file: got nil error")
	}
}

// handshake runs a TLS handshake between srv and cli over loopback TCP and
// returns the client's error, else the server's (with TLS 1.3 a client learns
// that its certificate was refused on its first read), and the server's
// view of the connection.
func handshake(t *testing.T, srv, cli *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	// A real socket, not net.Pipe: a TLS 1.3 server may write its session
	// tickets while the client writes an alert, and a pipe has no buffer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s := tls.Server(a, srv)
	type result struct {
		st  tls.ConnectionState
		err error
	}
	done := make(chan result, 1)
	go func() {
		err := s.HandshakeContext(ctx)
		if err == nil {
			_, err = s.Write([]byte{1})
		}
		if err != nil {
			s.Close()
		}
		done <- result{s.ConnectionState(), err}
	}()
	cl := tls.Client(b, cli)
	cerr := cl.HandshakeContext(ctx)
	if cerr == nil {
		_, cerr = cl.Read(make([]byte, 1))
	}
	if cerr != nil {
		cl.Close()
	}
	r := <-done
	if cerr != nil {
		return r.st, cerr
	}
	return r.st, r.err
}

// withCert is a client config that trusts the node CA as server.ax and
// presents cert.
func withCert(h *Holder, cert *tls.Certificate) *tls.Config {
	c := h.PeerClientConfig()
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if cert == nil {
			return &tls.Certificate{}, nil
		}
		return cert, nil
	}
	return c
}

func TestHolder_RaftHandshakes(t *testing.T) {
	c, other := newCluster(t), newCluster(t)
	n1, n2 := c.node(t, "n1"), c.node(t, "n2")
	stranger := other.node(t, "n2")
	clientCert := c.client(t, "alice")
	tests := []struct {
		name   string
		client *tls.Config
		ok     bool
	}{
		{"node to node", n2.PeerClientConfig(), true},
		{"client certificate", withCert(n2, &clientCert), false},
		{"no certificate", withCert(n2, nil), false},
		{"node of another CA", stranger.PeerClientConfig(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := handshake(t, n1.RaftServerConfig(), tc.client)
			if (err == nil) != tc.ok {
				t.Fatalf("got error %v, want ok=%v", err, tc.ok)
			}
		})
	}
	// The dialling side refuses a server of another CA, and a server that
	// presents a client certificate.
	if _, err := handshake(t, stranger.RaftServerConfig(), n1.PeerClientConfig()); err == nil {
		t.Error("dialling a node of another CA: handshake succeeded")
	}
	fake := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{clientCert}}
	if _, err := handshake(t, fake, n1.PeerClientConfig()); err == nil {
		t.Error("dialling a server with a client certificate: handshake succeeded")
	}
}

func TestHolder_HTTPHandshakesAndPeerNode(t *testing.T) {
	c, other := newCluster(t), newCluster(t)
	n1, n2 := c.node(t, "n1"), c.node(t, "n2")
	clientCert := c.client(t, "alice")
	foreign := other.client(t, "mallory")
	tests := []struct {
		name     string
		client   *tls.Config
		ok       bool
		peerNode string
	}{
		{"no certificate", withCert(n2, nil), true, ""},
		{"client certificate", withCert(n2, &clientCert), true, ""},
		{"node certificate", n2.PeerClientConfig(), true, "n2"},
		{"client of another CA", withCert(n2, &foreign), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := handshake(t, n1.HTTPServerConfig(), tc.client)
			if (err == nil) != tc.ok {
				t.Fatalf("got error %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			node, ok := PeerNode(&st)
			if node != tc.peerNode || ok != (tc.peerNode != "") {
				t.Fatalf("PeerNode = %q, %v; want %q", node, ok, tc.peerNode)
			}
		})
	}
	if node, ok := PeerNode(nil); ok || node != "" {
		t.Errorf("PeerNode(nil) = %q, %v", node, ok)
	}
}

func TestNewClientConfig_VerifiesHost(t *testing.T) {
	c := newCluster(t)
	n1 := c.node(t, "n1")
	cli, err := NewClientConfig(c.ca, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		ok   bool
	}{{"127.0.0.1", true}, {"localhost", true}, {"n1.server.ax", true}, {"10.9.9.9", false}, {"elsewhere.example", false}} {
		cfg := cli.Clone()
		cfg.ServerName = tc.host
		if _, err := handshake(t, n1.HTTPServerConfig(), cfg); (err == nil) != tc.ok {
			t.Errorf("host %s: got %v, want ok=%v", tc.host, err, tc.ok)
		}
	}
	// Without the CA the server is unknown.
	sys, _ := NewClientConfig("", "", "")
	sys.ServerName = "127.0.0.1"
	_, err = handshake(t, n1.HTTPServerConfig(), sys)
	var cve *tls.CertificateVerificationError
	if !errors.As(err, &cve) {
		t.Errorf("without the CA: got %v, want a certificate verification error", err)
	}
	cert, _ := CertFiles(c.dir, "n1")
	if _, err := NewClientConfig(c.ca, cert, ""); err == nil {
		t.Error("certificate without key: got nil error")
	}
}

func TestHolder_ReloadRotatesCA(t *testing.T) {
	old := newCluster(t)
	n1, n2 := old.node(t, "n1"), old.node(t, "n2")
	n1Files := Config{CAFile: old.ca}
	n1Files.CertFile, n1Files.KeyFile = CertFiles(old.dir, "n1")
	server := n1.RaftServerConfig() // built once, like a listener's

	// A new CA and a new n1 certificate replace the files in place.
	fresh := newCluster(t)
	freshN2 := fresh.node(t, "n2")
	nc, nk, err := CreateNodeCert(fresh.dir, "n1", nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{fresh.ca: n1Files.CAFile, nc: n1Files.CertFile, nk: n1Files.KeyFile} {
		b, _ := os.ReadFile(src)
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := handshake(t, server, n2.PeerClientConfig()); err != nil {
		t.Fatalf("before reload, an old-CA peer: %v", err)
	}
	oldSerial := n1.Certificate().SerialNumber
	if err := n1.Reload(); err != nil {
		t.Fatal(err)
	}
	if n1.Certificate().SerialNumber.Cmp(oldSerial) == 0 {
		t.Error("reload kept the old certificate")
	}
	if _, err := handshake(t, server, n2.PeerClientConfig()); err == nil {
		t.Error("after reload, an old-CA peer was accepted")
	}
	if _, err := handshake(t, server, freshN2.PeerClientConfig()); err != nil {
		t.Errorf("after reload, a new-CA peer: %v", err)
	}
	// A failed reload keeps the working material.
	if err := os.WriteFile(n1Files.CertFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := n1.Reload(); err == nil {
		t.Error("reload of a garbage certificate: got nil error")
	}
	if _, err := handshake(t, server, freshN2.PeerClientConfig()); err != nil {
		t.Errorf("after a failed reload: %v", err)
	}
}
