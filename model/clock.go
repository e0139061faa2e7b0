package model

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
	At Time `json:"at"`
	// Step is how far the wall clock moved against the monotonic clock:
	// positive forward, negative back.
	Step Duration `json:"step"`
	// Ago is how long ago, on the node's monotonic clock.
	Ago Duration `json:"ago"`
	// Held is how much the node's time base still adds to its wall clock
	// for the step: positive, a step back it absorbs at half speed (the
	// time base never moves back); negative, a forward step it holds
	// until the members' clocks are compared again. Absent: none.
	Held Duration `json:"held,omitempty"`
	// Reason says it in a sentence.
	Reason string `json:"reason"`
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
	// Jump is this node's latest clock step, for 10 minutes after it and
	// while its time base holds part of it.
	Jump *ClockJump `json:"jump,omitempty"`
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
