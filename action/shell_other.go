//go:build !unix

package action

import (
	"context"
	"io"
)

// runShell fails: shell actions need Unix process groups.
func (r *Runner) runShell(ctx context.Context, job Job, live io.Writer, red *Redactor) Result {
	return Result{ExitCode: -1, Error: "shell actions are not supported on this platform"}
}
