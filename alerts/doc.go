// Package alerts is an ax node's alerting (docs/alerts.md): the leader's
// watchdog, which evaluates the alert rules and proposes what changed;
// the alert records and silences (api.AlertsBackend); failure handling
// (a FAILED instance triggers its task's onFailure tasks and raises
// instance_failed); the notification loop, which sends every pending
// transition and records it sent; this node's quorum watch; and the
// notification channels (api.ChannelBackend), whose values it seals with
// the cluster's encrypt key. Every delivery goes through package notify.
package alerts
