package main

import (
	"strings"
	"testing"
)

// TestParseLogLevel: a level hclog does not know is refused, naming the
// accepted ones.
func TestParseLogLevel(t *testing.T) {
	t.Parallel()
	if _, err := parseLogLevel("DEBUG"); err != nil {
		t.Errorf("DEBUG: %v", err)
	}
	_, err := parseLogLevel("verbose")
	if err == nil || !strings.Contains(err.Error(), "trace, debug, info, warn, error") {
		t.Errorf("verbose: %v", err)
	}
}
