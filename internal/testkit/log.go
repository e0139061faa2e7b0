package testkit

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// LogWriter returns a writer that logs each write, less its final
// newline, with t.Log: shown for a failed test or under -v. Nothing may
// write to it once the test has ended (stop what logs in t.Cleanup).
func LogWriter(t testing.TB) io.Writer { return logWriter{t} }

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// Logger returns a logger named name that writes to LogWriter(t) at the
// level of $AX_TEST_LOG (trace, debug, info, warn or error; warn when
// unset or unknown), so AX_TEST_LOG=debug shows more of a failed test.
func Logger(t testing.TB, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: LogLevel(), Output: LogWriter(t)})
}

// LogLevel is the level of $AX_TEST_LOG, warn when unset or unknown.
func LogLevel() hclog.Level {
	if l := hclog.LevelFromString(os.Getenv("AX_TEST_LOG")); l != hclog.NoLevel {
		return l
	}
	return hclog.Warn
}
