package testkit

import (
	"net"
	"sync"
	"testing"
)

// FreeAddr returns a loopback address ("127.0.0.1:port") where nothing
// listened a moment ago (for a Raft address, or a peer that is down),
// never one it returned before in this process. The kernel may
// hand a just-closed port out again at once, so two calls in a row could
// otherwise name the same address (TestClient_FailFast saw it once).
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		given.Lock()
		_, seen := given.addrs[addr]
		if !seen {
			given.addrs[addr] = struct{}{}
		}
		given.Unlock()
		if !seen {
			return addr
		}
	}
	t.Fatal("testkit: no loopback port not handed out before in 100 tries")
	return ""
}

// given is every address FreeAddr returned.
var given = struct {
	sync.Mutex
	addrs map[string]struct{}
}{addrs: map[string]struct{}{}}
