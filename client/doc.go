// Package client is ax's Go SDK: a small HTTP client for the /v1 API used
// by the ax CLI, by agents forwarding to their leader, and by tests.
//
// A Client holds one or more server addresses. A request that cannot reach
// a server, or that gets 503 (no leader yet), moves on to the next address
// and retries until its context ends. Every write carries an
// Idempotency-Key chosen once per call, so a retried write whose first try
// did commit is answered with that first result instead of applying twice.
package client
