package chaos

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
)

// echoEnv makes the test binary a UDP echo server (see TestMain): it
// listens on the address before the comma, appends every datagram it
// receives to the file after it, and echoes it back.
const echoEnv = "AX_CHAOS_UDP_ECHO"

// serveEcho runs the echo server; it never returns.
func serveEcho(spec string) {
	addr, file, _ := strings.Cut(spec, ",")
	conn, err := net.ListenPacket("udp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	buf := make([]byte, 1500)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			os.Exit(2)
		}
		f, _ := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		fmt.Fprintf(f, "%s\n", buf[:n])
		f.Close()
		_, _ = conn.WriteTo(buf[:n], from)
	}
}

// TestNet_CutsAndHeals checks each fault's direction with a UDP echo
// server in a namespace: a datagram that arrives is logged by the server,
// an echo that arrives back is seen by the test.
func TestNet_CutsAndHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("needs root and network namespaces")
	}
	if err := Available(); err != nil {
		t.Fatal(err)
	}
	n, err := NewNet("h1")
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			n.Close()
		}
	})
	h := n.Host("h1")
	received := filepath.Join(t.TempDir(), "received")
	srv := exec.Command(n.Exec("h1")[0], append(n.Exec("h1")[1:], os.Args[0])...)
	srv.Env = append(os.Environ(), echoEnv+"="+h.IP+":9999,"+received)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	go srv.Wait()
	conn, err := net.ListenPacket("udp", n.HostIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	to := &net.UDPAddr{IP: net.ParseIP(h.IP), Port: 9999}
	// probe sends msg and reports whether the server logged it and
	// whether its echo came back.
	probe := func(msg string) (arrived, echoed bool) {
		_, _ = conn.WriteTo([]byte(msg), to)
		_ = conn.SetReadDeadline(time.Now().Add(400 * time.Millisecond))
		buf := make([]byte, 64)
		for {
			k, _, err := conn.ReadFrom(buf)
			if err != nil {
				break
			}
			if string(buf[:k]) == msg {
				echoed = true
				break
			}
		}
		data, _ := os.ReadFile(received)
		return bytes.Contains(data, []byte(msg+"\n")), echoed
	}
	// The server needs a moment to listen: wait for a first echo.
	tries := 0
	testkit.Until(t, 10*time.Second, "an echo from the namespace", func() bool {
		_, echoed := probe(fmt.Sprintf("hello-%d", tries))
		tries++
		return echoed
	})
	steps := []struct {
		name           string
		fault          func() error
		arrive, echo   bool
		healAfterwards bool
	}{
		{"no fault", func() error { return nil }, true, true, false},
		{"cut outbound: it receives, its answers vanish", func() error { return n.CutOut("h1") }, true, false, true},
		{"cut inbound: nothing reaches it", func() error { return n.CutIn("h1") }, false, false, true},
		{"isolated", func() error { return n.Isolate("h1") }, false, false, true},
		{"port down", func() error { return n.PortUp("h1", false) }, false, false, true},
		{"healed", func() error { return nil }, true, true, false},
	}
	for i, s := range steps {
		if err := s.fault(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		arrived, echoed := probe(fmt.Sprintf("step-%d", i))
		if arrived != s.arrive || echoed != s.echo {
			t.Errorf("%s: arrived %v, echoed %v; want %v, %v", s.name, arrived, echoed, s.arrive, s.echo)
		}
		if s.healAfterwards {
			if err := n.Heal("h1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	pid := srv.Process.Pid
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	waitGone(t, pid)
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), h.NS) {
		t.Errorf("namespace %s still listed after Close", h.NS)
	}
}

// TestSweep_RemovesWhatADeadRunLeft: namespaces named after a process
// that no longer exists are removed, with what runs in them; those of a
// live process are kept.
func TestSweep_RemovesWhatADeadRunLeft(t *testing.T) {
	if testing.Short() {
		t.Skip("needs root and network namespaces")
	}
	if err := Available(); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s%d-1-n1", NamePrefix, dead.Process.Pid)
	live := fmt.Sprintf("%s%d-999-n1", NamePrefix, os.Getpid())
	for _, ns := range []string{stale, live} {
		if err := run("ip", "netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = removeNS(ns) })
	}
	leftover := exec.Command("ip", "netns", "exec", stale, "sleep", "300")
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	go leftover.Wait()
	t.Cleanup(func() { _ = leftover.Process.Kill() })
	// Sweep finds what runs in a namespace: wait until the leftover has
	// entered it (ip netns exec joins it, then runs sleep), as a dead
	// run's processes had long before (a sweep between the two left the
	// sleep running in a namespace no longer listed).
	want := strconv.Itoa(leftover.Process.Pid)
	testkit.Until(t, 10*time.Second, "the leftover in its namespace", func() bool {
		out, _ := exec.Command("ip", "netns", "pids", stale).Output()
		return slices.Contains(strings.Fields(string(out)), want)
	})
	removed, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(removed, " "), stale) {
		t.Errorf("Sweep removed %v, want %s among them", removed, stale)
	}
	if strings.Contains(strings.Join(removed, " "), live) {
		t.Errorf("Sweep removed %s, a live process's namespace", live)
	}
	waitGone(t, leftover.Process.Pid)
}

// waitGone waits until process pid (a child reaped by a goroutine of
// the test) is gone.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	testkit.Until(t, 5*time.Second, fmt.Sprintf("process %d to go with its namespace", pid), func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}
