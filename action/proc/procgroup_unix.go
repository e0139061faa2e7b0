//go:build unix && !linux

package action

import "syscall"

// groupAlive reports whether process group pgid has a member; exited
// members not yet reaped count as alive here.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) != syscall.ESRCH
}
