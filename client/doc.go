// Package client is ax's Go SDK for the /v1 API: tasks, submissions and
// triggers, instances and their logs, decisions (approve, reject, cancel,
// terminate), the cluster, ACL tokens, secrets and notification channels.
// The ax CLI, agents forwarding to their leader and the tests use it too.
// The executor side (running handlers, the executor protocol) is package
// github.com/ax-scheduler/ax/worker, built on a Client.
//
// A Client holds one or more server addresses. A request that cannot reach
// a server, or that gets 503 (no leader yet), moves on to the next address
// and retries until its context ends. Every write carries an
// Idempotency-Key chosen once per call, so a retried write whose first try
// did commit is answered with that first result instead of applying twice.
// An error answer is a *model.Error: its Code (errors.Is with
// model.ErrNotFound, model.ErrInvalid...), its Message and, for bad input,
// the Field at fault.
package client
