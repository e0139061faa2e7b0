package benchkit

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ProcStatus returns a field of /proc/PID/status in kB, -1 if unknown.
func ProcStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == field {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return v
			}
		}
	}
	return -1
}

// DiskUse returns the bytes the files under dir (or the file dir) take on
// disk (du), -1 if it cannot be read.
func DiskUse(dir string) int64 {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a file removed while walking (a snapshot) is not an error
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				total += st.Blocks * 512
			}
		}
		return nil
	})
	if err != nil {
		return -1
	}
	return total
}

// MB formats bytes as megabytes (MiB) with one decimal, "-" if negative
// (unknown).
func MB(bytes int64) string {
	if bytes < 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(bytes)/(1<<20), 'f', 1, 64)
}
