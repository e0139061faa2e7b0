package model

// Node roles as reported by /healthz and /v1/cluster.
const (
	RoleLeader    = "leader"
	RoleFollower  = "follower"
	RoleCandidate = "candidate"
	RoleShutdown  = "shutdown"
)

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

// JoinRequest asks the leader to add a node as a voter.
type JoinRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	HTTPAddr string `json:"httpAddr"`
	// Proto is the protocol the joining node speaks (absent from older
	// nodes, whose leaders refuse the field).
	Proto int `json:"proto,omitempty"`
}

// MemberKey is the answer of POST /v1/cluster/member-key: the key with
// which members of a cluster without TLS authenticate their Raft
// connections, for a node about to join.
type MemberKey struct {
	Key []byte `json:"key"` // base64 in JSON
	// Required: every member requires the handshake (false while members
	// of a release without it may remain).
	Required bool `json:"required"`
}

// TransferRequest asks the leader to hand leadership to a node (or to the
// most up-to-date follower when ID is empty).
type TransferRequest struct {
	ID string `json:"id,omitempty"`
}

// Health is the answer of GET /healthz.
type Health struct {
	// Alerts are the alerts only this node sees (quorum_lost).
	Alerts       []Alert `json:"alerts,omitempty"`
	Node         string  `json:"node"`
	Role         string  `json:"role"`
	Leader       string  `json:"leader"`
	LeaderHTTP   string  `json:"leaderHttp,omitempty"`
	Time         Time    `json:"time"`
	AppliedIndex uint64  `json:"appliedIndex"`
	// CommitIndex is the highest commit index this node knows: its own
	// Raft's, or the highest the leader sent it (higher on a follower
	// whose log cannot keep up).
	CommitIndex uint64 `json:"commitIndex"`
	Term        uint64 `json:"term"`
	Tasks       int    `json:"tasks"`
	// Pending counts SCHEDULED (delayed) instances.
	Pending int `json:"pending"`
	// Active counts READY, RUNNING, RETRYING, BLOCKED and WAITING_APPROVAL
	// instances.
	Active int `json:"active"`
	// LastFired is the id of the instance that became READY last.
	LastFired string `json:"lastFired,omitempty"`
	// WheelSize is the number of timers in this node's timing wheel (only
	// the leader has one).
	WheelSize int `json:"wheelSize"`
	// WheelLoad is how long this leader took to load its wheel when it
	// gained leadership (absent until it has).
	WheelLoad Duration `json:"wheelLoad,omitempty"`
	// Executors counts the executors the leader has heard from (polls and
	// heartbeats) within the last minute; only the leader knows. The list
	// is at GET /v1/executors (it needs a token: /healthz is open and
	// stays small).
	Executors int `json:"executors,omitempty"`
	// Version is the agent's build; Proto the protocol its binary speaks
	// and Protocol the one the cluster has reached.
	Version  string `json:"version"`
	Proto    int    `json:"proto"`
	Protocol int    `json:"protocol"`
	// LastContact is how long ago this follower last heard from the
	// leader (absent on the leader).
	LastContact Duration `json:"lastContact,omitempty"`
	// Problem, when set, says why the node is not healthy: it cannot
	// append to its Raft log (a full disk, an I/O error), knows no
	// leader, has not heard from it for too long, or has applied too few
	// of the committed entries. /healthz then answers 503.
	Problem string `json:"problem,omitempty"`
	// ClockOffset is this node's clock minus the cluster's (the median
	// of the members' clocks), once measured; Clock details every
	// member's (see ClockHealth).
	ClockOffset *Duration    `json:"clockOffset,omitempty"`
	Clock       *ClockHealth `json:"clock,omitempty"`
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
	LastSeen Time `json:"lastSeen"`
	// Capabilities are what it declared in its last poll (nil: an
	// executor older than capabilities, which runs shell and http).
	Capabilities *Capabilities `json:"capabilities,omitempty"`
}
