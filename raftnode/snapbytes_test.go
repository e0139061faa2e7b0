package raftnode

import "testing"

func TestSnapshotDue(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name    string
		applied uint64
		state   int64
		want    bool
	}{
		{"below the minimum", 31 * mib, 100 * mib, false},
		{"at the minimum, a small state", 32 * mib, 100 * mib, true},
		{"the minimum, but a sixteenth of a large state is more", 32 * mib, 2048 * mib, false},
		{"a sixteenth of a large state", 128 * mib, 2048 * mib, true},
		{"no state file", 32 * mib, 0, true},
		{"nothing applied", 0, 0, false},
	} {
		if got := snapshotDue(c.applied, 32*mib, c.state); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCatchingUp(t *testing.T) {
	for _, c := range []struct {
		name           string
		applied, known uint64
		want           bool
	}{
		{"caught up", 5000, 5000, false},
		{"a few entries behind", 5000, 5010, false},
		{"at the margin", 5000, 5000 + catchUpEntries, false},
		{"joining from the log", 2560, 8844, true},
		{"no commit index known yet", 0, 0, false},
	} {
		if got := catchingUp(c.applied, c.known); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
