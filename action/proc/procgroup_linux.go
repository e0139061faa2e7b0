package proc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// GroupAlive reports whether process group pgid has a live member. Members
// that have exited but not yet been reaped (zombies, left to init after
// their parent died) do not count.
func GroupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err == syscall.ESRCH {
		return false
	}
	names, ok := procPIDs()
	if !ok {
		return true
	}
	for _, name := range names {
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces and ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 {
			continue
		}
		if pg, err := strconv.Atoi(string(f[2])); err != nil || pg != pgid {
			continue
		}
		if s := f[0]; len(s) == 1 && (s[0] == 'Z' || s[0] == 'X') {
			continue
		}
		return true
	}
	return false
}

// procPIDs lists the process ids in /proc (as names); ok is false when
// /proc cannot be read.
func procPIDs() (names []string, ok bool) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, false
	}
	defer dir.Close()
	all, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, false
	}
	for _, name := range all {
		if name[0] >= '0' && name[0] <= '9' {
			names = append(names, name)
		}
	}
	return names, true
}
