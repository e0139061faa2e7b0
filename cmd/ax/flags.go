package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/agent/config"
)

// parseLogLevel reads -log-level, refusing a level hclog does not know
// (it would silently log at info).
func parseLogLevel(s string) (hclog.Level, error) {
	for _, l := range config.LogLevels {
		if strings.EqualFold(s, l) {
			return hclog.LevelFromString(l), nil
		}
	}
	return hclog.NoLevel, fmt.Errorf("-log-level %q: want one of %s", s, strings.Join(config.LogLevels, ", "))
}
