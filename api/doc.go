// Package api is ax's HTTP layer: thin handlers that decode and validate a
// request, call the backend role they serve (TaskBackend, InstanceBackend,
// ExecutorBackend, ClusterBackend, ...; Backend composes them), and map
// errors to status codes. Server is the public API, described by
// openapi.json; Internal serves the node-to-node endpoints under
// InternalPrefix to cluster members only. It depends on nothing else of ax
// but the wire types in package model.
package api
