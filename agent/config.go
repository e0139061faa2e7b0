package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/clock"
	"github.com/ax-scheduler/ax/wheel"
)

// prepare fills in cfg's defaults and checks it, before anything opens:
// the settings, transport security (an open listener without TLS is
// refused for that reason before its address is looked at), the
// advertised addresses, and the data dir, pinned to the node id. The
// returned config's Clock is the node's time base (clock.Base) over raw,
// the clock it was given.
func prepare(cfg Config) (_ Config, raw wheel.Clock, _ error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "ax", Level: hclog.Info})
	}
	if cfg.Clock == nil {
		cfg.Clock = wheel.RealClock{}
	}
	if cfg.MaxClockSkew <= 0 {
		cfg.MaxClockSkew = time.Second
	}
	if cfg.ClockInterval <= 0 {
		cfg.ClockInterval = time.Second
	}
	raw = cfg.Clock
	cfg.Clock = clock.NewBase(raw, cfg.MaxClockSkew, clock.StaleAfter(cfg.ClockInterval))
	if cfg.Horizon == 0 {
		cfg.Horizon = time.Hour
	}
	if cfg.LeaderWait == 0 {
		cfg.LeaderWait = 5 * time.Second
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns()
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.WatchInterval, 5 * time.Second}, {&cfg.StuckAfter, 30 * time.Minute}, {&cfg.SilenceGrace, time.Minute},
		{&cfg.OvertimeGrace, time.Minute}, {&cfg.NotifyInterval, time.Second}, {&cfg.MemberGrace, 30 * time.Second},
		{&cfg.AnomalyWindow, time.Hour}, {&cfg.Silence, 10 * time.Minute}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if cfg.DefaultTimeout < 0 {
		return cfg, nil, errors.New("agent: the default timeout must not be negative (0: none)")
	}
	if cfg.NodeID == "" || cfg.DataDir == "" || cfg.HTTPAddr == "" || cfg.RaftAddr == "" {
		return cfg, nil, errors.New("agent: NodeID, DataDir, HTTPAddr and RaftAddr are required")
	}
	if len(cfg.NodeID) > maxNodeID {
		// Every command carries it; the state machine refuses longer ones.
		return cfg, nil, fmt.Errorf("agent: node id longer than %d bytes", maxNodeID)
	}
	if err := checkTransportSecurity(cfg, cfg.Logger.With("node", cfg.NodeID)); err != nil {
		return cfg, nil, err
	}
	if err := checkAdvertise(cfg); err != nil {
		return cfg, nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return cfg, nil, fmt.Errorf("agent: data dir: %w", err)
	}
	if err := checkNodeID(cfg.DataDir, cfg.NodeID); err != nil {
		return cfg, nil, err
	}
	return cfg, raw, nil
}

// maxNodeID bounds a node id (a joining node's id is a valid name, at most
// 128 bytes).
const maxNodeID = 128

// checkNodeID pins a data dir to one node id so that a typo in -node cannot
// make a node pretend to be a different member with another's log.
func checkNodeID(dir, id string) error {
	p := filepath.Join(dir, "node-id")
	b, err := os.ReadFile(p)
	switch {
	case err == nil:
		if got := strings.TrimSpace(string(b)); got != id {
			return fmt.Errorf("agent: data dir %s belongs to node %q, not %q", dir, got, id)
		}
		return nil
	case errors.Is(err, os.ErrNotExist):
		return os.WriteFile(p, []byte(id+"\n"), 0o600)
	default:
		return fmt.Errorf("agent: %w", err)
	}
}
