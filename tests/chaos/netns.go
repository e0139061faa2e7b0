package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// NamePrefix starts the name of every network namespace the suite makes:
// ax-chaos-<pid>-<seq>-<host>, so that a later run can tell its own from
// those a crashed run left behind (the pid is no longer alive).
const NamePrefix = "ax-chaos-"

// linkPrefix starts the name of the one link a Net puts in the root
// namespace: axc<pid>n<seq>.
const linkPrefix = "axc"

// Net is a private IPv4 network made with iproute2 alone: a bridge in a
// namespace of its own, one namespace per host joined to it by a veth
// pair, and a veth from the root namespace so that the test process
// reaches every host. Hosts get 10.213.X.k/24 with X chosen not to clash
// with any address or route of the root namespace.
//
// Faults are made with tc's blackhole qdisc (it drops every packet a
// device would send, silently, like a cut cable or a dead switch port)
// and with ip link set down. Neither needs iptables or netem.
type Net struct {
	Subnet string // e.g. 10.213.7 (no last octet)
	HostIP string // the root namespace's address on the bridge

	id       string // <pid>-<seq>
	bridgeNS string
	rootLink string

	mu    sync.Mutex
	hosts map[string]*Host
	order []string
	cuts  map[cut]bool
}

// Host is one namespace on a Net.
type Host struct {
	Name string // e.g. n1, e1
	NS   string // the namespace's name
	IP   string
	port string // the host's veth end inside the bridge namespace
}

// cut is one blackhole qdisc the Net added: on the host's own end
// (out: the host cannot send) or on the bridge's end (in: it cannot
// receive).
type cut struct {
	host string
	in   bool
}

var netSeq struct {
	sync.Mutex
	n int
}

// Available says why namespaces cannot be made here, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("the chaos suite needs root to create network namespaces (it is root on CI); run it as root or with go test -short to skip it")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("the chaos suite needs iproute2 (%s not found: %v); apt-get install -y iproute2", tool, err)
		}
	}
	return nil
}

// NewNet makes a network with one namespace per host name. On error it
// removes whatever it made.
func NewNet(hosts ...string) (n *Net, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	netSeq.Lock()
	netSeq.n++
	seq := netSeq.n
	netSeq.Unlock()
	pid := os.Getpid()
	n = &Net{
		id:       fmt.Sprintf("%d-%d", pid, seq),
		rootLink: fmt.Sprintf("%s%dn%d", linkPrefix, pid, seq),
		hosts:    map[string]*Host{},
		cuts:     map[cut]bool{},
	}
	n.bridgeNS = NamePrefix + n.id + "-br"
	defer func() {
		if err != nil {
			n.Close()
			n = nil
		}
	}()
	if n.Subnet, err = freeSubnet(pid + seq); err != nil {
		return n, err
	}
	n.HostIP = n.Subnet + ".1"
	steps := [][]string{
		{"ip", "netns", "add", n.bridgeNS},
		{"ip", "-n", n.bridgeNS, "link", "set", "lo", "up"},
		{"ip", "-n", n.bridgeNS, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", n.bridgeNS, "link", "set", "br0", "up"},
		{"ip", "link", "add", n.rootLink, "type", "veth", "peer", "name", "root", "netns", n.bridgeNS},
		{"ip", "-n", n.bridgeNS, "link", "set", "root", "master", "br0", "up"},
		{"ip", "addr", "add", n.HostIP + "/24", "dev", n.rootLink},
		{"ip", "link", "set", n.rootLink, "up"},
	}
	if err := runAll(steps); err != nil {
		return n, err
	}
	for i, name := range hosts {
		if err := n.addHost(name, 11+i); err != nil {
			return n, err
		}
	}
	return n, nil
}

// addHost makes host name's namespace with address .k on the bridge.
func (n *Net) addHost(name string, k int) error {
	h := &Host{Name: name, NS: NamePrefix + n.id + "-" + name, IP: fmt.Sprintf("%s.%d", n.Subnet, k), port: "p-" + name}
	n.mu.Lock()
	n.hosts[name] = h
	n.order = append(n.order, name)
	n.mu.Unlock()
	return runAll([][]string{
		{"ip", "netns", "add", h.NS},
		{"ip", "-n", h.NS, "link", "set", "lo", "up"},
		{"ip", "-n", n.bridgeNS, "link", "add", h.port, "type", "veth", "peer", "name", "eth0", "netns", h.NS},
		{"ip", "-n", n.bridgeNS, "link", "set", h.port, "master", "br0", "up"},
		{"ip", "-n", h.NS, "addr", "add", h.IP + "/24", "dev", "eth0"},
		{"ip", "-n", h.NS, "link", "set", "eth0", "up"},
	})
}

// Host returns the host named name; it panics on an unknown name (a bug
// in the test).
func (n *Net) Host(name string) *Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.hosts[name]
	if h == nil {
		panic("chaos: no host " + name)
	}
	return h
}

// Exec returns the command prefix that runs a program in host name's
// namespace, with env (KEY=VALUE) added to its environment. Both ip netns
// exec and env exec the program, so it keeps the pid they started with.
func (n *Net) Exec(name string, env ...string) []string {
	p := []string{"ip", "netns", "exec", n.Host(name).NS}
	if len(env) > 0 {
		p = append(append(p, "env"), env...)
	}
	return p
}

// CutOut drops every packet host name sends (its own veth end).
func (n *Net) CutOut(name string) error { return n.setCut(cut{host: name}, true) }

// CutIn drops every packet sent to host name (the bridge's veth end).
func (n *Net) CutIn(name string) error { return n.setCut(cut{host: name, in: true}, true) }

// Isolate cuts host name off in both directions.
func (n *Net) Isolate(name string) error {
	return errors.Join(n.CutOut(name), n.CutIn(name))
}

// Heal removes every cut of host name and brings its port up.
func (n *Net) Heal(name string) error {
	return errors.Join(n.setCut(cut{host: name}, false), n.setCut(cut{host: name, in: true}, false), n.PortUp(name, true))
}

// HealAll heals every host.
func (n *Net) HealAll() error {
	n.mu.Lock()
	names := append([]string(nil), n.order...)
	n.mu.Unlock()
	var errs []error
	for _, name := range names {
		errs = append(errs, n.Heal(name))
	}
	return errors.Join(errs...)
}

// PortUp sets host name's switch port (the bridge's veth end) up or down:
// down is a pulled cable, both ways; the host's own interface keeps its
// address and routes, so its packets vanish rather than fail.
func (n *Net) PortUp(name string, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return run("ip", "-n", n.bridgeNS, "link", "set", n.Host(name).port, state)
}

// setCut adds or removes one blackhole qdisc; it is idempotent.
func (n *Net) setCut(c cut, on bool) error {
	h := n.Host(c.host)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cuts[c] == on {
		return nil
	}
	ns, dev := h.NS, "eth0"
	if c.in {
		ns, dev = n.bridgeNS, h.port
	}
	var err error
	if on {
		err = run("tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "blackhole")
	} else {
		err = run("tc", "-n", ns, "qdisc", "del", "dev", dev, "root")
	}
	if err == nil {
		n.cuts[c] = on
	}
	return err
}

// Close kills every process left in the Net's namespaces and deletes
// them; the veth in the root namespace goes with its peer.
func (n *Net) Close() error {
	n.mu.Lock()
	var names []string
	for _, name := range n.order {
		names = append(names, n.hosts[name].NS)
	}
	n.mu.Unlock()
	names = append(names, n.bridgeNS)
	var errs []error
	for _, ns := range names {
		errs = append(errs, removeNS(ns))
	}
	// The root end goes with its peer in the bridge namespace, though
	// not always at once.
	if linkExists(n.rootLink) {
		if err := run("ip", "link", "del", n.rootLink); err != nil && linkExists(n.rootLink) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeNS kills the processes in namespace ns and deletes it; a missing
// namespace is not an error.
func removeNS(ns string) error {
	if _, err := os.Stat("/run/netns/" + ns); err != nil {
		return nil
	}
	killNS(ns)
	return run("ip", "netns", "del", ns)
}

// killNS SIGKILLs every process in namespace ns (agents, executors and
// whatever their actions left running) and waits briefly for them to go.
func killNS(ns string) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond) // the kernel reaps them; poll again
	}
}

// Sweep removes namespaces and root links that runs of this suite left
// behind: those named after a process that no longer exists. It returns
// what it removed.
func Sweep() ([]string, error) {
	var removed []string
	var errs []error
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], NamePrefix) {
			continue
		}
		rest := strings.TrimPrefix(f[0], NamePrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pidAlive(pid) {
			continue
		}
		if err := removeNS(f[0]); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, f[0])
	}
	links, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		return removed, errors.Join(append(errs, err)...)
	}
	for _, line := range strings.Split(string(links), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name := strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0]
		if !strings.HasPrefix(name, linkPrefix) {
			continue
		}
		pidStr, _, ok := strings.Cut(strings.TrimPrefix(name, linkPrefix), "n")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pidAlive(pid) {
			continue
		}
		if err := run("ip", "link", "del", name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

func pidAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func linkExists(name string) bool {
	return exec.Command("ip", "link", "show", "dev", name).Run() == nil
}

// freeSubnet picks X in 10.213.X.0/24 that no root-namespace address or
// route touches, starting from a number derived from seed.
func freeSubnet(seed int) (string, error) {
	out, err := exec.Command("ip", "-4", "-o", "route", "show", "table", "all").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ip route: %v: %s", err, out)
	}
	addrs, err := exec.Command("ip", "-4", "-o", "addr", "show").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ip addr: %v: %s", err, addrs)
	}
	used := string(out) + string(addrs)
	for i := range 254 {
		x := (seed+i)%254 + 1
		s := fmt.Sprintf("10.213.%d", x)
		if !strings.Contains(used, s+".") && !strings.Contains(used, "10.213.0.0/16") {
			return s, nil
		}
	}
	return "", errors.New("no free 10.213.X.0/24 subnet")
}

func runAll(steps [][]string) error {
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
