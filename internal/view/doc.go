// Package view is how ax's commands show what they read: the -o flag (a
// table for people, the API's JSON, or the same as YAML), the CLI's one
// YAML encoder (which task export and apply's dry run use too), the
// tables of tasks, instances, the cluster, alerts, channels, tokens and
// secrets, and the loop that redraws a watched table (-w) on every
// change. It reads through a client.Client what a table needs beyond the
// value it is given (a task's recent runs, the leader's executors), and
// writes only to the writers it is handed.
package view
