package testkit

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback address ("127.0.0.1:port") where nothing
// listened a moment ago: for a Raft address, or a peer that is down.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
