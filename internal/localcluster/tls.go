package localcluster

import (
	"crypto/tls"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ax-scheduler/ax/tlsutil"
)

// CAFile is the cluster CA certificate in a TLS directory.
func CAFile(dir string) string { return filepath.Join(dir, tlsutil.CACertFile) }

// ClientName is the client certificate the cluster's clients and
// executors present (NAME.pem, NAME-key.pem in the TLS directory).
const ClientName = "localcluster"

// ClientCert returns the paths of the clients' certificate and key in a
// TLS directory.
func ClientCert(dir string) (certFile, keyFile string) { return tlsutil.CertFiles(dir, ClientName) }

// setupTLS makes sure dir holds a CA and the clients' certificate, and
// returns the clients' TLS configuration: it trusts the CA and presents
// that certificate (a TLS node without tokens admits clients by it).
func setupTLS(dir string) (*tls.Config, error) {
	if _, err := os.Stat(CAFile(dir)); errors.Is(err, fs.ErrNotExist) {
		if _, _, err := tlsutil.CreateCA(dir, 0); err != nil {
			return nil, err
		}
	}
	cert, key := ClientCert(dir)
	if _, err := os.Stat(cert); errors.Is(err, fs.ErrNotExist) {
		if _, _, err := tlsutil.CreateClientCert(dir, ClientName, 0); err != nil {
			return nil, err
		}
	}
	return tlsutil.NewClientConfig(CAFile(dir), cert, key)
}

// nodeTLSArgs makes sure dir holds node id's certificate and returns the
// agent flags that use it.
func nodeTLSArgs(dir, id string) ([]string, error) {
	cert, key := tlsutil.CertFiles(dir, id)
	if _, err := os.Stat(cert); errors.Is(err, fs.ErrNotExist) {
		if _, _, err := tlsutil.CreateNodeCert(dir, id, nil, nil, 0); err != nil {
			return nil, err
		}
	}
	return []string{"-tls-ca", CAFile(dir), "-tls-cert", cert, "-tls-key", key}, nil
}

// TLS is the clients' TLS configuration (trusting the cluster CA), nil
// for a cluster without TLS.
func (c *Cluster) TLS() *tls.Config { return c.tls }
