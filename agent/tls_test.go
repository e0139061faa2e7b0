package agent

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestCheckTransportSecurity(t *testing.T) {
	tests := []struct {
		name     string
		http     string
		raft     string
		pprof    string
		insecure bool
		wantErr  string // empty: starts
	}{
		{"loopback defaults", "127.0.0.1:7070", "127.0.0.1:7071", "", false, ""},
		{"localhost and ::1", "localhost:7070", "[::1]:7071", "", false, ""},
		{"other loopback IP", "127.0.0.2:7070", "127.0.0.1:7071", "", false, ""},
		{"all interfaces", "0.0.0.0:7070", "127.0.0.1:7071", "", false, "0.0.0.0:7070"},
		{"empty host", ":7070", "127.0.0.1:7071", "", false, ":7070"},
		{"LAN raft", "127.0.0.1:7070", "10.0.0.5:7071", "", false, "10.0.0.5:7071"},
		{"host name", "ax1.example.com:7070", "127.0.0.1:7071", "", false, "ax1.example.com:7070"},
		{"insecure", "0.0.0.0:7070", "10.0.0.5:7071", "", true, ""},
		{"pprof on loopback", "127.0.0.1:7070", "127.0.0.1:7071", "127.0.0.1:6060", false, ""},
		{"pprof everywhere", "127.0.0.1:7070", "127.0.0.1:7071", ":6060", false, ":6060 (-pprof)"},
		{"pprof everywhere, insecure", "127.0.0.1:7070", "127.0.0.1:7071", "0.0.0.0:6060", true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkTransportSecurity(Config{HTTPAddr: tc.http, RaftAddr: tc.raft, PprofAddr: tc.pprof, Insecure: tc.insecure}, hclog.NewNullLogger())
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "-insecure")):
				t.Fatalf("got %v, want an error naming %s and -insecure", err, tc.wantErr)
			}
		})
	}
}
