//go:build !unix

package action

import (
	"context"
	"io"

	"github.com/ax-scheduler/ax/action/redact"
)

// runShell fails: shell actions need Unix process groups.
func (r *Runner) runShell(ctx context.Context, job Job, live io.Writer, red *redact.Masker) Result {
	return Result{ExitCode: -1, Error: "shell actions are not supported on this platform"}
}
