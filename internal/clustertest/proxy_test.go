package clustertest

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/localcluster"
)

// TestProxy_CutDropsConnections: the proxy passes bytes both ways; cut
// drops an open connection at once (the client reads EOF, not silence)
// and refuses new ones; open serves again on the same address.
func TestProxy_CutDropsConnections(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	addr, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: addr}
	if err := p.open(echo.Addr().String()); err != nil {
		t.Fatal(err)
	}
	defer p.cut()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("through the proxy: %q %v, want the echo", line, err)
	}
	p.cut()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("read after cut: %v, want EOF at once", err)
	}
	if c2, err := net.Dial("tcp", addr); err == nil {
		c2.Close()
		t.Fatal("a cut proxy accepted a connection")
	}
	if err := p.open(echo.Addr().String()); err != nil {
		t.Fatalf("open again on %s: %v", addr, err)
	}
	c3, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial after reopening: %v", err)
	}
	c3.Close()
}
