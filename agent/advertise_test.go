package agent

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/testkit"
)

func TestCheckAdvertise(t *testing.T) {
	cases := []struct {
		name                   string
		http, raft, advH, advR string
		wantErr                bool
	}{
		{"loopback defaults", "127.0.0.1:7070", "127.0.0.1:7071", "", "", false},
		{"lan ip", "10.0.0.1:7070", "10.0.0.1:7071", "", "", false},
		{"http everywhere", "0.0.0.0:7070", "127.0.0.1:7071", "", "", true},
		{"raft everywhere", "127.0.0.1:7070", "0.0.0.0:7071", "", "", true},
		{"ipv6 everywhere", "[::]:7070", "127.0.0.1:7071", "", "", true},
		{"empty host", ":7070", "127.0.0.1:7071", "", "", true},
		{"both advertised", "0.0.0.0:7070", "0.0.0.0:7071", "ax1:7070", "10.0.0.1:7071", false},
		{"nat", "10.0.0.1:7070", "10.0.0.1:7071", "203.0.113.5:7070", "203.0.113.5:7071", false},
		{"advertise unspecified", "0.0.0.0:7070", "127.0.0.1:7071", "0.0.0.0:7070", "", true},
		{"advertise without port", "0.0.0.0:7070", "127.0.0.1:7071", "ax1", "", true},
		{"advertise port 0", "127.0.0.1:0", "127.0.0.1:7071", "127.0.0.1:0", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkAdvertise(Config{HTTPAddr: c.http, RaftAddr: c.raft, AdvertiseHTTP: c.advH, AdvertiseRaft: c.advR})
			if got := err != nil; got != c.wantErr {
				t.Fatalf("got error %v, want error %v", err, c.wantErr)
			}
			if err != nil && !errors.Is(err, ErrNotAdvertisable) {
				t.Fatalf("got %v, want ErrNotAdvertisable", err)
			}
		})
	}
}

// freePort returns a port nothing listens on just now on 127.0.0.1.
func freePort(t *testing.T) string {
	t.Helper()
	_, port, _ := net.SplitHostPort(testkit.FreeAddr(t))
	return port
}

// TestAgent_Advertise: a node listening on 0.0.0.0 is refused without
// advertise addresses, and with them records and shows those.
func TestAgent_Advertise(t *testing.T) {
	httpPort, raftPort := freePort(t), freePort(t)
	cfg := Config{NodeID: "n1", DataDir: t.TempDir(), Insecure: true,
		HTTPAddr: "0.0.0.0:" + httpPort, RaftAddr: "0.0.0.0:" + raftPort,
		Logger: testkit.Logger(t, "")}
	if _, err := New(cfg); !errors.Is(err, ErrNotAdvertisable) {
		t.Fatalf("New without advertise addresses: got %v, want ErrNotAdvertisable", err)
	}
	cfg.AdvertiseHTTP, cfg.AdvertiseRaft = "127.0.0.1:"+httpPort, "127.0.0.1:"+raftPort
	a := newAgent(t, cfg)
	testkit.Until(t, 20*time.Second, "the node's record", func() bool {
		nodes, err := a.fsm.Nodes()
		return err == nil && nodes["n1"].HTTPAddr != ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := client.New(client.Config{Addrs: []string{cfg.AdvertiseHTTP}}).Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 1 {
		t.Fatalf("got %d nodes, want 1", len(st.Nodes))
	}
	n := st.Nodes[0]
	if n.HTTPAddr != cfg.AdvertiseHTTP || n.RaftAddr != cfg.AdvertiseRaft {
		t.Fatalf("got http %s raft %s, want %s and %s", n.HTTPAddr, n.RaftAddr, cfg.AdvertiseHTTP, cfg.AdvertiseRaft)
	}
	if st.LeaderHTTP != cfg.AdvertiseHTTP {
		t.Fatalf("got leader http %s, want %s", st.LeaderHTTP, cfg.AdvertiseHTTP)
	}
	if n.Status != "ok" {
		t.Fatalf("got member status %q (%s), want ok: the advertised address must answer", n.Status, n.Problem)
	}
}

func TestLoopbackFor(t *testing.T) {
	for addr, want := range map[string]string{
		"0.0.0.0:7070":   "127.0.0.1:7070",
		"[::]:7070":      "127.0.0.1:7070",
		"127.0.0.1:7070": "127.0.0.1:7070",
		"10.0.0.5:7070":  "10.0.0.5:7070",
		"[::1]:7070":     "[::1]:7070",
		"localhost:7070": "localhost:7070",
	} {
		if got := loopbackFor(addr); got != want {
			t.Errorf("loopbackFor(%q) = %q, want %q", addr, got, want)
		}
	}
}
