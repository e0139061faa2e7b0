// Package proc watches over the processes of shell attempts: whether a
// process group has a live member (GroupAlive), and the reaper, a helper
// process that stops the processes of an executor's running shell
// attempts when the executor is gone, however it went (kill -9 included):
// StartReaper runs it (`ax executor-supervise`, which calls ReaperMain),
// and the action package's Runner registers each shell attempt with it
// (Begin, Started, End). The reaper needs Linux's /proc.
package proc
