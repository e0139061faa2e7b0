package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/tlsutil"
)

func TestBaseURL_Scheme(t *testing.T) {
	tests := []struct {
		addr  string
		https bool
		want  string
	}{
		{"127.0.0.1:7070", false, "http://127.0.0.1:7070"},
		{"127.0.0.1:7070", true, "https://127.0.0.1:7070"},
		{"http://h:1/", true, "http://h:1"},
		{"https://h:1", false, "https://h:1"},
	}
	for _, tc := range tests {
		if got := baseURL(tc.addr, tc.https); got != tc.want {
			t.Errorf("baseURL(%q, %v) = %q, want %q", tc.addr, tc.https, got, tc.want)
		}
	}
}

// tlsServer serves /healthz over TLS with a node certificate of a new CA
// and returns its address and the CA file.
func tlsServer(t *testing.T) (addr, caFile string) {
	t.Helper()
	dir := t.TempDir()
	caFile, _, err := tlsutil.CreateCA(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := tlsutil.CreateNodeCert(dir, "n1", nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := tlsutil.Load(tlsutil.Config{CAFile: caFile, CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"node":"n1"}`))
	})}
	go func() { _ = srv.Serve(tls.NewListener(ln, h.HTTPServerConfig())) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), filepath.Join(dir, tlsutil.CACertFile)
}

func TestClient_TLS(t *testing.T) {
	addr, caFile := tlsServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := tlsutil.NewClientConfig(caFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Addrs: []string{addr}, TLS: cfg}).Health(ctx)
	if err != nil || h.Node != "n1" {
		t.Fatalf("host:port with TLS: got %+v, %v", h, err)
	}
	// https without the CA: a certificate error at once, not retries
	// until RetryFor.
	start := time.Now()
	_, err = New(Config{Addrs: []string{"https://" + addr}, RetryFor: 5 * time.Second}).ListTasks(ctx, model.TaskFilter{})
	var cve *tls.CertificateVerificationError
	if !errors.As(err, &cve) {
		t.Fatalf("without the CA: got %v, want a certificate verification error", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("certificate error took %s: it was retried", el)
	}
}
