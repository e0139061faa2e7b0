package model

// Node is one member of the cluster.
type Node struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	HTTPAddr string `json:"httpAddr,omitempty"`
	Suffrage string `json:"suffrage"` // voter, nonvoter
	Leader   bool   `json:"leader"`
	// Proto is the protocol the member recorded (absent: 1, or unknown).
	Proto int `json:"proto,omitempty"`

	// What the answering node found when it asked the member's /healthz
	// (each within a second). Status is "ok", "unhealthy" (the member's
	// Problem says why) or "unreachable" (Problem says what failed).
	Status  string `json:"status,omitempty"`
	Problem string `json:"problem,omitempty"`
	Role    string `json:"role,omitempty"`
	Version string `json:"version,omitempty"`
	// AppliedIndex is the member's; Lag is how many entries it is behind
	// the highest commit index any member reported, counted to the last
	// entry there the state machine applies (a leader's no-op and
	// barriers are never applied), absent when the member did not answer.
	AppliedIndex uint64  `json:"appliedIndex,omitempty"`
	Lag          *uint64 `json:"lag,omitempty"`
	// LastContact is how long before it answered the member last heard
	// from the leader (absent on the leader). RaftContact, known only when
	// the leader answers, is how long ago the leader last heard from a
	// member whose heartbeats now fail.
	LastContact Duration `json:"lastContact,omitempty"`
	RaftContact Duration `json:"raftContact,omitempty"`
}

// ClusterStatus is the answer of GET /v1/cluster.
type ClusterStatus struct {
	Leader       string `json:"leader"`
	LeaderHTTP   string `json:"leaderHttp,omitempty"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commitIndex"`
	AppliedIndex uint64 `json:"appliedIndex"`
	// Protocol is the protocol the cluster has reached: the lowest its
	// members spoke when a leader last raised it. Features of a newer
	// protocol wait until every member is upgraded.
	Protocol int    `json:"protocol"`
	Nodes    []Node `json:"nodes"`
}

// ExecutorList is the answer of GET /v1/executors.
type ExecutorList struct {
	Executors []ExecutorStatus `json:"executors"`
}

// ExecutorStatus is an executor as the leader sees it.
type ExecutorStatus struct {
	Name   string            `json:"name"`
	Host   string            `json:"host,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Free is the free slots it reported in its last poll; Running the
	// attempts leased to it now.
	Free     int  `json:"free"`
	Running  int  `json:"running"`
	Capacity int  `json:"capacity,omitempty"` // its slots in all, as it declared them (absent: an older executor)
	LastSeen Time `json:"lastSeen"`
	// Capabilities are what it declared in its last poll (nil: an
	// executor older than capabilities, which runs shell and http).
	Capabilities *Capabilities `json:"capabilities,omitempty"`
}
