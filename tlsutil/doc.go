// Package tlsutil makes and loads the certificates of an ax cluster and
// builds the tls.Configs its transports use.
//
// Identities: every node certificate carries the DNS name "server.ax" (the
// cluster server role) and "NAME.server.ax" (which node), with server and
// client key usage; a client certificate carries "client.ax" and CN = the
// client's name, client key usage only. Raft accepts only peers whose
// verified certificate names "server.ax"; the HTTP API accepts any client,
// verifies a certificate when one is presented, and PeerNode tells whether
// a request came from a cluster node.
//
// A Holder keeps the current certificate and CA pool behind an atomic
// pointer: Reload (on SIGHUP) swaps them, and every tls.Config built from
// the Holder uses the new ones for the next handshake, without a restart.
package tlsutil
