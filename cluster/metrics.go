package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collectors are the cluster role's metrics: Raft contact with the leader
// and, on the leader, with each member; the clock monitor's.
func (c *Cluster) Collectors() []prometheus.Collector {
	c.peers.c = c
	return []prometheus.Collector{&c.peers, c.clock}
}

// peerContact exposes Raft contact: a follower's with the leader, the
// leader's with each member.
type peerContact struct {
	c *Cluster

	mu        sync.Mutex
	failSince map[string]time.Time // members failing with no contact ever, since when
}

var (
	peerContactDesc = prometheus.NewDesc("ax_raft_peer_last_contact_seconds",
		"Seconds since the leader last heard from each other member while its Raft heartbeats fail (since the failures began if it never answered); 0 while they succeed. Leader only.",
		[]string{"peer"}, nil)
	leaderContactDesc = prometheus.NewDesc("ax_raft_leader_last_contact_seconds",
		"Seconds since this follower last heard from the leader (0 on the leader; -1 before it ever did).", nil, nil)
)

// Describe implements prometheus.Collector.
func (s *peerContact) Describe(ch chan<- *prometheus.Desc) {
	ch <- peerContactDesc
	ch <- leaderContactDesc
}

// Collect implements prometheus.Collector.
func (s *peerContact) Collect(ch chan<- prometheus.Metric) {
	c := s.c
	if !c.rep.IsLeader() {
		contact := -1.0
		if last := c.raft().LastContact(); !last.IsZero() {
			contact = time.Since(last).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(leaderContactDesc, prometheus.GaugeValue, contact)
		return
	}
	ch <- prometheus.MustNewConstMetric(leaderContactDesc, prometheus.GaugeValue, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	servers, err := c.raft().Servers(ctx)
	if err != nil {
		return
	}
	failing := c.raft().FailingPeers()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failSince == nil {
		s.failSince = map[string]time.Time{}
	}
	for _, sv := range servers {
		if sv.ID == c.cfg.NodeID {
			continue
		}
		v := 0.0
		if last, ok := failing[sv.ID]; ok {
			if last.IsZero() {
				if _, ok := s.failSince[sv.ID]; !ok {
					s.failSince[sv.ID] = now
				}
				last = s.failSince[sv.ID]
			}
			v = now.Sub(last).Seconds()
		} else {
			delete(s.failSince, sv.ID)
		}
		ch <- prometheus.MustNewConstMetric(peerContactDesc, prometheus.GaugeValue, v, sv.ID)
	}
}
