package clustertest

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
)

// TestProxy_CutDropsConnections: the proxy passes bytes both ways; cut
// drops an open connection at once (the client reads EOF, not silence)
// and refuses new ones; open serves again on the same address.
func TestProxy_CutDropsConnections(t *testing.T) {
	p, echo := echoProxy(t, io.Discard)
	addr := p.addr
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
	if err := p.open(echo); err != nil {
		t.Fatalf("open again on %s: %v", addr, err)
	}
	c3, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial after reopening: %v", err)
	}
	c3.Close()
}

// TestProxy_Faults: a blackhole reads what is sent and never passes it
// on nor answers (Heard has it); swallow passes it on and drops the
// answer; changing the fault closes the open connections; pass echoes
// again.
func TestProxy_Faults(t *testing.T) {
	var got testkit.Buffer // what reached the server
	p, _ := echoProxy(t, &got)
	addr := p.addr
	// send writes line on a new connection and returns it with what came
	// back within 300 ms ("" if nothing did).
	send := func(line string) (net.Conn, string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		b := make([]byte, 64)
		n, _ := c.Read(b)
		return c, string(b[:n])
	}

	p.setFault(HTTPBlackhole)
	held, answer := send("GET /blackholed\n")
	if answer != "" {
		t.Fatalf("a blackhole answered %q", answer)
	}
	testkit.Until(t, 5*time.Second, "the blackhole to hear the request", func() bool { return p.heardOf("GET /blackholed") })
	if strings.Contains(got.String(), "blackholed") {
		t.Fatal("a blackholed request reached the server")
	}

	p.setFault(HTTPSwallow)
	_ = held.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := held.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the blackholed connection after the fault changed: %v, want EOF", err)
	}
	if _, answer := send("POST /swallowed\n"); answer != "" {
		t.Fatalf("swallow answered %q", answer)
	}
	testkit.Until(t, 5*time.Second, "the swallowed request to reach the server", func() bool {
		return strings.Contains(got.String(), "POST /swallowed")
	})

	p.setFault(HTTPPass)
	if _, answer := send("ping\n"); answer != "ping\n" {
		t.Fatalf("passing again: %q, want the echo", answer)
	}
}

// echoProxy starts an echo server that also copies what it reads to
// seen, and an open proxy to it, both closed when the test ends; it
// returns the proxy and the server's address.
func echoProxy(t *testing.T, seen io.Writer) (*proxy, string) {
	t.Helper()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.MultiWriter(c, seen), c); c.Close() }()
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
	t.Cleanup(p.cut)
	return p, echo.Addr().String()
}
