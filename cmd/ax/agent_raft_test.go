package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/raftnode"
)

// TestCheckRaftTiming checks the Raft timeouts as flags and config keys
// set them: the defaults pass, and each broken rule is refused naming
// the flag and the value.
func TestCheckRaftTiming(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		file    string // config file contents, "" for none
		wantErr []string
		want    [3]time.Duration // heartbeat, election, lease when accepted
	}{
		{name: "defaults",
			want: [3]time.Duration{raftnode.DefaultHeartbeatTimeout, raftnode.DefaultElectionTimeout, raftnode.DefaultLeaderLeaseTimeout}},
		{name: "scaled together", args: []string{"-raft-heartbeat-timeout", "2s", "-raft-election-timeout", "2s", "-raft-lease-timeout", "1s"},
			want: [3]time.Duration{2 * time.Second, 2 * time.Second, time.Second}},
		{name: "lease equal to heartbeat, election longer", args: []string{"-raft-heartbeat-timeout", "100ms", "-raft-election-timeout", "1s", "-raft-lease-timeout", "100ms"},
			want: [3]time.Duration{100 * time.Millisecond, time.Second, 100 * time.Millisecond}},
		{name: "from the config file", file: "raft_heartbeat_timeout = \"3s\"\nraft_election_timeout = \"4s\"\nraft_lease_timeout = \"1s\"\n",
			want: [3]time.Duration{3 * time.Second, 4 * time.Second, time.Second}},
		{name: "lease over heartbeat", args: []string{"-raft-heartbeat-timeout", "300ms", "-raft-election-timeout", "300ms", "-raft-lease-timeout", "400ms"},
			wantErr: []string{"-raft-lease-timeout 400ms", "-raft-heartbeat-timeout 300ms", "at most"}},
		{name: "lease over heartbeat, from the file", file: "raft_heartbeat_timeout = \"300ms\"\nraft_election_timeout = \"300ms\"\nraft_lease_timeout = \"2s\"\n",
			wantErr: []string{"-raft-lease-timeout 2s", "-raft-heartbeat-timeout 300ms"}},
		{name: "election under heartbeat", args: []string{"-raft-heartbeat-timeout", "2s", "-raft-election-timeout", "1s", "-raft-lease-timeout", "1s"},
			wantErr: []string{"-raft-election-timeout 1s", "-raft-heartbeat-timeout 2s", "at least"}},
		{name: "zero heartbeat", args: []string{"-raft-heartbeat-timeout", "0s", "-raft-election-timeout", "1s", "-raft-lease-timeout", "1ms"},
			wantErr: []string{"-raft-heartbeat-timeout 0s", "below", "5ms"}},
		{name: "election too short", args: []string{"-raft-heartbeat-timeout", "1ms", "-raft-election-timeout", "1ms", "-raft-lease-timeout", "1ms"},
			wantErr: []string{"-raft-heartbeat-timeout 1ms", "below"}},
		{name: "lease too short", args: []string{"-raft-heartbeat-timeout", "100ms", "-raft-election-timeout", "100ms", "-raft-lease-timeout", "4ms"},
			wantErr: []string{"-raft-lease-timeout 4ms", "below"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, cfg := newAgentConfig(t)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			if c.file != "" {
				path := filepath.Join(t.TempDir(), "agent.hcl")
				if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
				if _, err := applyConfigFile(fs, path); err != nil {
					t.Fatal(err)
				}
			}
			err := checkRaftTiming(cfg)
			if c.wantErr != nil {
				if err == nil {
					t.Fatalf("got no error, want one containing %q", c.wantErr)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("got %q, want it to contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := [3]time.Duration{cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout}; got != c.want {
				t.Errorf("heartbeat, election, lease: got %v, want %v", got, c.want)
			}
		})
	}
}
