//go:build unix && !linux

package proc

import "syscall"

// GroupAlive reports whether process group pgid has a member; exited
// members not yet reaped count as alive here.
func GroupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) != syscall.ESRCH
}
