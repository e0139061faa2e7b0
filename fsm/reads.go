package fsm

// The queries of the state, one type per domain, each holding the FSM it
// reads (every query is a read transaction, FSM.view, or a value FSM
// keeps as it applies):
//
//   - taskReads: task definitions, their history, events, schedules,
//     versions and slots in use (tasks.go, queries.go, slots.go);
//   - instanceReads: instances, their attempts, output and leases, the
//     due and active indexes and their counters, retention (queries.go,
//     acl.go, retention.go);
//   - consoleReads: the console's summaries and aggregates, the facts
//     behind an instance's why (console.go, stats.go, lastsuccess.go);
//   - alertReads: alert records, pending notifications, silences,
//     channels, the failures whose alerts wait (alerts.go, channels.go,
//     queries.go);
//   - accessReads: ACL tokens, the authentication state, secrets (acl.go,
//     secrets.go);
//   - clusterReads: the cluster's own records: nodes, the protocol, the
//     member key (nodes.go, proto.go, acl.go).
//
// FSM embeds them, so that their methods are FSM's: the query API other
// packages use, and the State interfaces they declare over it, are
// those of before the split. FSM's own methods are its lifecycle: apply,
// Precheck, snapshots, restore, close.

type (
	taskReads     struct{ f *FSM }
	instanceReads struct{ f *FSM }
	consoleReads  struct{ f *FSM }
	alertReads    struct{ f *FSM }
	accessReads   struct{ f *FSM }
	clusterReads  struct{ f *FSM }
)
