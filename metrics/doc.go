// Package metrics holds the Prometheus metrics that parts of ax outside
// the agent's own metrics code increment: today the alert and
// notification counters, which the alerting code (agent/alert.go and its
// successors) updates through the exported methods of Notifications.
//
// Every vector here is registered, and its known label values
// initialised to zero, before anything is counted, so dashboards and
// alert rules find the series from the agent's start.
package metrics
