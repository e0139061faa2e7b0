package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// leaderWatch polls every node's /healthz and records each change of the
// Raft term (an election: pre-votes do not raise it) and of the leader the
// nodes name. Under a steady load with no faults, each is a spurious
// election: a timeout that fired although the leader was alive.
type leaderWatch struct {
	mu        sync.Mutex
	start     time.Time
	term      uint64   // highest term seen; 0: none yet
	leader    string   // the last leader named with the highest term ("": none yet)
	first     uint64   // the term at the first answer
	elections int      // terms begun since the first answer
	changes   int      // times a different leader was named
	events    []string // when and what, for the report
	polls     int      // rounds in which some node answered
}

// run polls the nodes every period until ctx ends.
func (w *leaderWatch) run(ctx context.Context, nodes []soakNode, every time.Duration) {
	w.start = time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		w.poll(ctx, nodes)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// poll asks every node once and records what changed.
func (w *leaderWatch) poll(ctx context.Context, nodes []soakNode) {
	var term uint64
	leader, answered := "", false
	for _, n := range nodes {
		c, cancel := context.WithTimeout(ctx, time.Second)
		h, err := n.cl.Health(c)
		cancel()
		if err != nil {
			continue
		}
		answered = true
		if h.Term > term || (h.Term == term && leader == "") {
			term, leader = h.Term, h.Leader
		}
	}
	if !answered {
		return
	}
	w.observe(time.Since(w.start), term, leader)
}

// observe records one round's highest term and the leader named with it
// ("": none known, as during an election).
func (w *leaderWatch) observe(at time.Duration, term uint64, leader string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	if w.first == 0 {
		w.first, w.term, w.leader = term, term, leader
		return
	}
	if term > w.term {
		w.elections += int(term - w.term)
		w.events = append(w.events, fmt.Sprintf("%s term %d -> %d", at.Round(time.Second), w.term, term))
		w.term = term
	}
	if term < w.term {
		return // only nodes behind answered this round
	}
	if leader != "" && leader != w.leader {
		if w.leader == "" { // the first leader named: no change
			w.leader = leader
			return
		}
		w.changes++
		w.events = append(w.events, fmt.Sprintf("%s leader %s -> %s", at.Round(time.Second), orNone(w.leader), leader))
		w.leader = leader
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// summary is one line for the sample loop.
func (w *leaderWatch) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("leader %s, term %d: %d elections, %d leader changes", orNone(w.leader), w.term, w.elections, w.changes)
}

// report is the soak's closing paragraph on leadership.
func (w *leaderWatch) report(every time.Duration) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "leadership (every node's /healthz every %s, %d rounds): term %d -> %d, %d elections, %d leader changes\n",
		every, w.polls, w.first, w.term, w.elections, w.changes)
	for _, e := range w.events {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	return b.String()
}
