// Package tasks is the tasks and instances role of an ax node: task
// definitions (api.TaskBackend), instances created, read, explained (why
// an unfinished one waits) and decided (api.InstanceBackend), and, as
// leader, the term's scheduler that fires them and the retention that
// prunes them; the console's reads and live event streams
// (api.ConsoleBackend, api.LiveBackend, type Console); and the metrics of
// tasks and instances. Writes go through the replica, reads to the state
// machine, both through interfaces the package declares.
package tasks
