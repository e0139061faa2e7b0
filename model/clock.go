package model

// ClockReading is a node's answer to GET /v1/internal/time: its wall
// clock, uncorrected, in Unix milliseconds.
type ClockReading struct {
	UnixMs int64 `json:"unixMs"`
}

// ClockHealth is how a node sees the cluster's clocks (in /healthz): each
// member's offset from the cluster's clock, the median of the members'
// clocks this node measured (itself included), and which are off by more
// than MaxSkew.
type ClockHealth struct {
	MaxSkew Duration `json:"maxSkew"`
	// Quorum: enough members answered recently to tell whose clock is off
	// (this node and the others measured are a majority of the voters, and
	// do not split evenly between two clocks). Without it, offsets are
	// from this node's clock.
	Quorum bool `json:"quorum"`
	// Corrected is how much this node takes off its own clock to keep to
	// the cluster's while it is off by more than MaxSkew (absent: none).
	Corrected Duration `json:"corrected,omitempty"`
	// Skewed lists the members off by more than MaxSkew (this node
	// included), worst first.
	Skewed []ClockOffset `json:"skewed,omitempty"`
	// Members are every member measured, this node included, by id.
	Members []ClockOffset `json:"members"`
}

// ClockOffset is one member's clock as a node measured it.
type ClockOffset struct {
	Node string `json:"node"`
	// Offset is its clock minus the cluster's (positive: ahead).
	Offset Duration `json:"offset"`
	// RTT is the round trip of the measurement; Age how long ago it was
	// taken. Both are absent for the node itself.
	RTT Duration `json:"rtt,omitempty"`
	Age Duration `json:"age,omitempty"`
}
