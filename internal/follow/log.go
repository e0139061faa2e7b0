package follow

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// Log prints an instance's output on stdout (a new attempt's mark on
// stderr), as ax instance log does; with follow it keeps printing new
// output until the attempt ends.
func Log(ctx context.Context, cl *client.Client, id string, follow bool, stdout, stderr io.Writer) error {
	var offset int64
	attempt := 0
	for {
		l, err := cl.InstanceLog(ctx, id, offset)
		if err != nil {
			return err
		}
		if l.Attempt != attempt {
			// A retry's output starts over at offset 0; this answer was
			// asked from the old attempt's offset.
			if attempt != 0 {
				fmt.Fprintf(stderr, "--- attempt %d\n", l.Attempt)
			}
			resumed := offset > 0
			attempt, offset = l.Attempt, 0
			if resumed {
				continue
			}
		}
		if l.Offset+int64(len(l.Output)) > offset {
			skip := max(offset-l.Offset, 0)
			if skip < int64(len(l.Output)) {
				if _, err := io.WriteString(stdout, l.Output[skip:]); err != nil {
					return err
				}
			}
			offset = l.Offset + int64(len(l.Output))
		}
		if !follow || !l.Live {
			if follow && (l.State == model.StateReady || l.State == model.StateScheduled || l.State == model.StateRetrying) {
				// Not started yet: wait for it.
			} else {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}
