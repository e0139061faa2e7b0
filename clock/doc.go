// Package clock keeps an ax node's time base held to the cluster's clock.
// Base is the node's clock as the agent uses it: the injected clock less
// the correction the Monitor sets while this node is off from the
// members' median by more than the bound, with steps of the wall clock
// held (step.go). The Monitor asks every member for its clock once per
// interval (NTP style), reports skew and steps (health, metrics, and to
// the watchdog through Silent, Off, MemberJumps and Stepped), and the
// Guard, a leader's per-term service, hands leadership over while this
// node's clock is off. It knows nothing of Raft: the members and how to
// ask them are functions it is given.
package clock
