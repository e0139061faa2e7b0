package worker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

type pendingReport struct {
	item model.CompleteItem
	a    *attempt
	done chan struct{}
	size int // the item's JSON, bytes
}

// newPendingReport is the report item of attempt a, with its size.
func newPendingReport(item model.CompleteItem, a *attempt) pendingReport {
	b, _ := json.Marshal(item)
	return pendingReport{item: item, a: a, done: make(chan struct{}), size: len(b)}
}

// maxBatchBytes bounds the JSON of a batch of reports (but for a lone
// report, which is always sent): half the API's body limit (1 MiB), so
// that a batch of attempts that each keep 64 KiB of output and a result
// is not refused as too large.
const maxBatchBytes = 512 << 10

// reporter sends attempt reports in batches (whatever queued while the
// previous batch was in flight), retrying across servers until each is
// recorded or refused (a fenced attempt), or there is no point any more:
// every attempt of the batch lost its lease on this executor's clock
// more than the leader's expiry grace ago (the leader has failed them as
// lost by then), or the worker is shutting down and out of time. It ends
// when the reports channel is closed. A batch holds at most 256 reports
// and maxBatchBytes of JSON.
func (e *Worker) reporter() {
	var next *pendingReport // taken from the queue, for the next batch
	for {
		var first pendingReport
		if next != nil {
			first, next = *next, nil
		} else if p, ok := <-e.reports; ok {
			first = p
		} else {
			return
		}
		batch, size := []pendingReport{first}, first.size
	drain:
		for len(batch) < 256 {
			select {
			case p, ok := <-e.reports:
				if !ok {
					break drain
				}
				if size+p.size > maxBatchBytes {
					next = &p
					break drain
				}
				batch, size = append(batch, p), size+p.size
			default:
				break drain
			}
		}
		e.send(batch)
		for _, p := range batch {
			close(p.done)
		}
	}
}

// send delivers one batch of reports, or gives up (see reporter).
func (e *Worker) send(batch []pendingReport) {
	items := make([]model.CompleteItem, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	key := client.NewRequestID()
	for try := 0; ; try++ {
		lease := e.currentLease()
		deadline := time.Now().Add(lease)
		if at := e.giveUpAt(); !at.IsZero() && at.Before(deadline) {
			deadline = at
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		out, err := e.report.completeBatch(ctx, items, key, max(lease/2, time.Second))
		cancel()
		if err == nil {
			for _, o := range out {
				if o.Error != "" {
					e.log.Warn("attempt report refused", "execution", o.ExecutionID, "error", o.Error)
				}
			}
			return
		}
		var me *model.Error
		if errors.As(err, &me) && me.Code != model.CodeUnavailable && me.Code != model.CodeInternal {
			e.log.Error("reporting attempts failed", "count", len(items), "error", err)
			return
		}
		if why := e.pointless(batch); why != "" {
			e.log.Error("reporting attempts failed; giving up: "+why, "count", len(items), "error", err)
			return
		}
		e.log.Warn("reporting attempts failed; retrying", "count", len(items), "error", err)
		time.Sleep(time.Duration(min(try+1, 10)) * 100 * time.Millisecond)
	}
}

func (e *Worker) giveUpAt() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.giveUp
}

// pointless says why retrying a batch's delivery is no use any more, ""
// while it may be.
func (e *Worker) pointless(batch []pendingReport) string {
	if at := e.giveUpAt(); !at.IsZero() && !time.Now().Before(at) {
		return "the executor is shutting down"
	}
	now := time.Now()
	for _, p := range batch {
		p.a.mu.Lock()
		alive := now.Sub(p.a.renewed) < p.a.lease+p.a.lease/2
		p.a.mu.Unlock()
		if alive {
			return ""
		}
	}
	return "their leases are gone (the cluster fails such attempts as lost)"
}
