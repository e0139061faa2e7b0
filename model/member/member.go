// Package member holds the wire types of a cluster's members: a node's
// health (GET /healthz) and roles, its clock as the members measure it,
// joining, the member key and a leadership transfer.
package member

import "github.com/ax-scheduler/ax/model"

// Node roles as reported by /healthz and /v1/cluster.
const (
	RoleLeader    = "leader"
	RoleFollower  = "follower"
	RoleCandidate = "candidate"
	RoleShutdown  = "shutdown"
)

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
	Alerts       []model.Alert `json:"alerts,omitempty"`
	Node         string        `json:"node"`
	Role         string        `json:"role"`
	Leader       string        `json:"leader"`
	LeaderHTTP   string        `json:"leaderHttp,omitempty"`
	Time         model.Time    `json:"time"`
	AppliedIndex uint64        `json:"appliedIndex"`
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
	WheelLoad model.Duration `json:"wheelLoad,omitempty"`
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
	LastContact model.Duration `json:"lastContact,omitempty"`
	// Problem, when set, says why the node is not healthy: it cannot
	// append to its Raft log (a full disk, an I/O error), knows no
	// leader, has not heard from it for too long, or has applied too few
	// of the committed entries. /healthz then answers 503.
	Problem string `json:"problem,omitempty"`
	// ClockOffset is this node's clock minus the cluster's (the median
	// of the members' clocks), once measured; Clock details every
	// member's (see ClockHealth).
	ClockOffset *model.Duration `json:"clockOffset,omitempty"`
	Clock       *ClockHealth    `json:"clock,omitempty"`
}

// ClockReading is a node's answer to GET /v1/internal/time: its wall
// clock, uncorrected, in Unix milliseconds, and its latest clock step
// while it reports one.
type ClockReading struct {
	UnixMs int64      `json:"unixMs"`
	Jump   *ClockJump `json:"jump,omitempty"`
}

// ClockJump is a step of a node's wall clock against its monotonic clock
// (NTP or an operator setting the time, a VM restored or suspended: a
// suspend looks like a forward step of its length), reported for 10
// minutes after it and while the node's time base holds part of it.
type ClockJump struct {
	// At is the node's wall clock just after the step.
	At model.Time `json:"at"`
	// Step is how far the wall clock moved against the monotonic clock:
	// positive forward, negative back.
	Step model.Duration `json:"step"`
	// Ago is how long ago, on the node's monotonic clock.
	Ago model.Duration `json:"ago"`
	// Held is how much the node's time base still adds to its wall clock
	// for the step: positive, a step back it absorbs at half speed (the
	// time base never moves back); negative, a forward step it holds
	// until the members' clocks are compared again. Absent: none.
	Held model.Duration `json:"held,omitempty"`
	// Reason says it in a sentence.
	Reason string `json:"reason"`
}

// ClockHealth is how a node sees the cluster's clocks (in /healthz): each
// member's offset from the cluster's clock, the median of the members'
// clocks this node measured (itself included), and which are off by more
// than MaxSkew.
type ClockHealth struct {
	MaxSkew model.Duration `json:"maxSkew"`
	// Quorum: enough members answered recently to tell whose clock is off
	// (this node and the others measured are a majority of the voters, and
	// do not split evenly between two clocks). Without it, offsets are
	// from this node's clock.
	Quorum bool `json:"quorum"`
	// Corrected is how much this node takes off its own clock to keep to
	// the cluster's while it is off by more than MaxSkew (absent: none).
	Corrected model.Duration `json:"corrected,omitempty"`
	// Skewed lists the members off by more than MaxSkew (this node
	// included), worst first.
	Skewed []ClockOffset `json:"skewed,omitempty"`
	// Members are every member measured, this node included, by id.
	Members []ClockOffset `json:"members"`
	// Jump is this node's latest clock step, for 10 minutes after it and
	// while its time base holds part of it.
	Jump *ClockJump `json:"jump,omitempty"`
}

// ClockOffset is one member's clock as a node measured it.
type ClockOffset struct {
	Node string `json:"node"`
	// Offset is its clock minus the cluster's (positive: ahead).
	Offset model.Duration `json:"offset"`
	// RTT is the round trip of the measurement; Age how long ago it was
	// taken. Both are absent for the node itself.
	RTT model.Duration `json:"rtt,omitempty"`
	Age model.Duration `json:"age,omitempty"`
}
