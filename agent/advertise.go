package agent

import (
	"errors"
	"fmt"
	"net"
)

// ErrNotAdvertisable is returned by New when a listen address's host is
// unspecified (0.0.0.0, :: or empty) and no advertise address says where
// the other nodes reach this one: recording 0.0.0.0 would make every
// join, forward and cluster status point at the wrong machine.
var ErrNotAdvertisable = errors.New("agent: listen address is not advertisable")

// checkAdvertise refuses a configuration whose recorded addresses would
// be unspecified, and advertise addresses that are not host:port.
func checkAdvertise(cfg Config) error {
	for _, c := range []struct{ listen, advertise, flag string }{
		{cfg.HTTPAddr, cfg.AdvertiseHTTP, "-advertise-http"},
		{cfg.RaftAddr, cfg.AdvertiseRaft, "-advertise-raft"},
	} {
		if c.advertise == "" {
			if unspecifiedHost(c.listen) {
				return fmt.Errorf("%w: %s listens on every interface; give %s HOST:PORT, the address the other nodes reach this one at",
					ErrNotAdvertisable, c.listen, c.flag)
			}
			continue
		}
		if _, port, err := net.SplitHostPort(c.advertise); err != nil || port == "" || port == "0" {
			return fmt.Errorf("%w: %s %q: want HOST:PORT with a fixed port", ErrNotAdvertisable, c.flag, c.advertise)
		}
		if unspecifiedHost(c.advertise) {
			return fmt.Errorf("%w: %s %q is unspecified; give an address the other nodes can dial", ErrNotAdvertisable, c.flag, c.advertise)
		}
	}
	return nil
}

// unspecifiedHost says whether hostport's host listens on every
// interface: empty, 0.0.0.0 or ::.
func unspecifiedHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}
