// Package worker is the executor side of ax's Go SDK: what runs the work
// the cluster hands out. A Worker long-polls any agent for jobs, runs each
// attempt (its registered Go handlers for "sdk" actions, and shell and
// http actions when asked to), never more than Capacity at once, renews
// the attempts' leases with batched heartbeats, streams their output to
// the cluster and reports each attempt's end, batching reports under load.
// Polling, heartbeats and reports use their own HTTP clients and
// goroutines, apart from the work itself, so a slow or stuck action never
// delays a heartbeat. `ax executor` is a Worker; a Go program becomes an
// executor for its own handlers with New and Run:
//
//	w, err := worker.New(worker.Config{Servers: []string{"127.0.0.1:7070"}, Name: "billing-1",
//		Handlers: map[string]worker.Handler{"charge": charge}})
//	...
//	err = w.Run(ctx) // until ctx ends
//
// A handler serves tasks whose action is {"type": "sdk", "handler":
// NAME}. What it writes to Output(ctx) is the attempt's output, kept and
// streamed like a shell action's stdout and stderr (GET
// /v1/instances/{id}/log, `ax instance log`).
//
// Protocol is the executor protocol itself (poll, heartbeat, complete,
// approval requests) over a client.Client, for programs that drive it
// themselves: the agents forwarding to their leader, `ax approval
// request`. The user API (tasks, instances, decisions) is package client.
package worker
