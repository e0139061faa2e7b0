// Package clustertest is the cluster harness every test package of ax
// shares, after etcd's tests/framework: a Cluster interface that a
// scenario (a leader kill, a follower restart) is written against once,
// and two implementations to run it on:
//
//   - Processes: real `ax agent` processes on loopback ports
//     (internal/localcluster), started by StartProcesses, the one
//     multi-process cluster starter of the tests/ packages, with its
//     options (WithArgs, WithToken, WithTLS, ...), the checks of every
//     agent's log and the logs printed on failure;
//   - InProcess: agents in the test's process, over loopback, built by a
//     Starter (internal/agenttest's builds them with agent.New).
//
// Main is the TestMain of a multi-process test package: it installs the
// binaries the package runs from a build cache that the packages share
// (localcluster.Install) and fails the run if a process it started
// outlives it.
//
// It imports nothing of the agent, so that package agent's own tests can
// run an in-process cluster of their own agents with it.
//
// Neither implementation can cut a node off the network: the in-process
// one because a node's Raft connections are dialled inside the agent
// (a proxy in front of a node's address sees who it talks to, not who
// talks to it), the processes because that takes network namespaces and
// root. The chaos suite (tests/chaos) has the partitions. The in-process
// one can make a node's API unreachable to its peers and clients while
// Raft goes on (SetHTTPFault: a blackhole, or answers lost).
package clustertest
