package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Names fixed by the cluster's identity scheme.
const (
	// ServerName is the DNS name every node certificate carries; Raft and
	// node-to-node HTTP verify peers against it.
	ServerName = "server.ax"
	// ClientName is the DNS name every client certificate carries.
	ClientName = "client.ax"
	// CACertFile and CAKeyFile are the CA's file names in a directory.
	CACertFile = "ax-ca.pem"
	CAKeyFile  = "ax-ca-key.pem"
	// DefaultCADays and DefaultCertDays are the validity periods used
	// when a create function is given days <= 0.
	DefaultCADays   = 5 * 365
	DefaultCertDays = 365
)

// ErrExists: a file a create function would write is already there.
var ErrExists = errors.New("tlsutil: file exists")

var (
	nodeNameRE   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	clientNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
)

// CertFiles returns the certificate and key paths of NAME in dir:
// dir/NAME.pem and dir/NAME-key.pem.
func CertFiles(dir, name string) (certFile, keyFile string) {
	return filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
}

// CreateCA writes a new cluster CA to dir (ax-ca.pem, and ax-ca-key.pem
// readable by the owner only), creating dir if needed. It refuses to
// overwrite either file. days <= 0 means DefaultCADays.
func CreateCA(dir string, days int) (certFile, keyFile string, err error) {
	if days <= 0 {
		days = DefaultCADays
	}
	certFile, keyFile = filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("tlsutil: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "ax CA " + serial.Text(16)[:8], Organization: []string{"ax"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, days),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", fmt.Errorf("tlsutil: create CA: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("tlsutil: %w", err)
	}
	return certFile, keyFile, writePair(certFile, keyFile, der, key)
}

// CreateNodeCert writes dir/NODE.pem and dir/NODE-key.pem, signed by the
// CA in dir: a certificate for server and client authentication naming
// "server.ax", "NODE.server.ax", "localhost" and 127.0.0.1, plus ips and
// dnsNames (the addresses clients use to reach the node). node must be a
// DNS label (a-z, 0-9, '-'). days <= 0 means DefaultCertDays.
func CreateNodeCert(dir, node string, ips []net.IP, dnsNames []string, days int) (certFile, keyFile string, err error) {
	if !nodeNameRE.MatchString(node) {
		return "", "", fmt.Errorf("tlsutil: node name %q: use 1-63 characters of a-z, 0-9 and '-' (it becomes the DNS name %s.%s)", node, node, ServerName)
	}
	names := []string{ServerName, node + "." + ServerName, "localhost"}
	for _, d := range dnsNames {
		d = strings.ToLower(strings.TrimSpace(d))
		if d == ServerName || d == ClientName || strings.HasSuffix(d, "."+ServerName) || strings.HasSuffix(d, "."+ClientName) {
			return "", "", fmt.Errorf("tlsutil: -dns %q: names under %s and %s are reserved for the cluster's identities", d, ServerName, ClientName)
		}
		if d != "" && !slices.Contains(names, d) {
			names = append(names, d)
		}
	}
	addrs := []net.IP{net.IPv4(127, 0, 0, 1)}
	for _, ip := range ips {
		if !slices.ContainsFunc(addrs, ip.Equal) {
			addrs = append(addrs, ip)
		}
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: node, Organization: []string{"ax"}},
		DNSNames:    names,
		IPAddresses: addrs,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	return issue(dir, node, tmpl, days)
}

// CreateClientCert writes dir/NAME.pem and dir/NAME-key.pem, signed by
// the CA in dir: a client-authentication certificate with CN NAME and the
// DNS name "client.ax". It is not accepted where a node is required.
// days <= 0 means DefaultCertDays.
func CreateClientCert(dir, name string, days int) (certFile, keyFile string, err error) {
	if !clientNameRE.MatchString(name) {
		return "", "", fmt.Errorf("tlsutil: client name %q: use 1-128 characters of a-z, 0-9, '.', '_', '-', starting with a letter or digit", name)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: name, Organization: []string{"ax"}},
		DNSNames:    []string{ClientName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return issue(dir, name, tmpl, days)
}

// issue signs tmpl with the CA in dir and writes dir/NAME.pem and
// dir/NAME-key.pem.
func issue(dir, name string, tmpl *x509.Certificate, days int) (certFile, keyFile string, err error) {
	if name == strings.TrimSuffix(CACertFile, ".pem") {
		return "", "", fmt.Errorf("tlsutil: the name %q is the CA's", name)
	}
	if days <= 0 {
		days = DefaultCertDays
	}
	certFile, keyFile = CertFiles(dir, name)
	for _, f := range []string{certFile, keyFile} {
		if _, err := os.Stat(f); err == nil {
			return "", "", fmt.Errorf("%w: %s; refusing to overwrite it (remove it first to re-issue)", ErrExists, f)
		}
	}
	ca, caKey, err := loadCA(dir)
	if err != nil {
		return "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("tlsutil: %w", err)
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return "", "", err
	}
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Minute), now.AddDate(0, 0, days)
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter // a certificate cannot outlive its CA
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", fmt.Errorf("tlsutil: sign %s: %w", name, err)
	}
	return certFile, keyFile, writePair(certFile, keyFile, der, key)
}

// loadCA reads the CA certificate and key from dir and checks they match.
func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, nil, fmt.Errorf("tlsutil: CA certificate: %w (create one with: ax tls ca create -dir %s)", err, dir)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, nil, fmt.Errorf("tlsutil: CA key: %w", err)
	}
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("tlsutil: %s holds no PEM certificate", CACertFile)
	}
	ca, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsutil: %s: %w", CACertFile, err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, fmt.Errorf("tlsutil: %s holds no PEM key", CAKeyFile)
	}
	var key *ecdsa.PrivateKey
	if k, err := x509.ParsePKCS8PrivateKey(kb.Bytes); err == nil {
		key, _ = k.(*ecdsa.PrivateKey)
	} else if k, err := x509.ParseECPrivateKey(kb.Bytes); err == nil {
		key = k
	}
	if key == nil {
		return nil, nil, fmt.Errorf("tlsutil: %s: not an ECDSA private key", CAKeyFile)
	}
	if pub, ok := ca.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, nil, fmt.Errorf("tlsutil: %s does not belong to %s", CAKeyFile, CACertFile)
	}
	return ca, key, nil
}

// writePair writes the key (0600) then the certificate (0644); neither
// may exist yet.
func writePair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("tlsutil: %w", err)
	}
	if err := writeNew(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	if err := writeNew(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		os.Remove(keyFile)
		return err
	}
	return nil
}

// writeNew creates path, failing if it exists.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s; refusing to overwrite it", ErrExists, path)
	}
	if err != nil {
		return fmt.Errorf("tlsutil: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("tlsutil: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("tlsutil: write %s: %w", path, err)
	}
	return nil
}

// newSerial returns a random positive 128-bit serial number.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("tlsutil: serial: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}
