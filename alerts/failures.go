package alerts

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/fsm/command"
	axmetrics "github.com/ax-scheduler/ax/metrics"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/notify"
)

// RunFailures, a leader's per-term service, handles failures: it POSTs the alert
// to the task's notify URLs, triggers its onFailure tasks (idempotency key
// "on_failure:<instanceId>", so a retry never triggers twice), and records
// an "alerted" event, which also removes the failure from the state
// machine's pending-alerts index. Pending alerts left by an earlier leader
// are picked up at start and on a periodic rescan. Failures are handled
// in bursts, up to alertWorkers at once (alertAll), so a storm of them
// shares Raft entries and a slow webhook holds up no other alert. Webhooks
// are delivered at least once: a leader that dies between posting and
// recording leaves the alert pending for the next one.
func (a *Alerts) RunFailures(ctx context.Context) error {
	hc := &http.Client{Timeout: 5 * time.Second}
	scan := func() {
		ids, err := a.state.PendingAlerts()
		if err != nil {
			a.log.Warn("reading pending alerts failed", "error", err)
			return
		}
		for len(ids) > 0 && ctx.Err() == nil {
			n := min(len(ids), alertBatch)
			a.alertAll(ctx, hc, ids[:n])
			ids = ids[n:]
		}
	}
	scan()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case id := <-a.failed:
			// Whatever else has failed meanwhile goes with it.
			ids := []uint64{id}
		drain:
			for len(ids) < alertBatch {
				select {
				case id := <-a.failed:
					ids = append(ids, id)
				default:
					break drain
				}
			}
			a.alertAll(ctx, hc, ids)
		case <-tick.C:
			scan()
		}
	}
}

// alertBatch and alertWorkers bound how many failures are handled at once:
// their proposals meet in the group commit (one Raft entry for many), and
// a slow webhook holds up one worker rather than every alert behind it.
const (
	alertBatch   = 256
	alertWorkers = 128
)

// alertAll handles ids concurrently and returns once each is handled or
// left pending for the next scan. The state machine's pending-alerts index
// is what says a failure was handled (alert checks it first), so an id
// seen twice, here or in a later scan, is handled once.
func (a *Alerts) alertAll(ctx context.Context, hc *http.Client, ids []uint64) {
	slices.Sort(ids)
	ids = slices.Compact(ids)
	work := make(chan uint64)
	var wg sync.WaitGroup
	for range min(alertWorkers, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				a.alert(ctx, hc, id)
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// alert handles one failure; one it could not record stays pending for
// the next scan.
func (a *Alerts) alert(ctx context.Context, hc *http.Client, id uint64) {
	if !a.state.AlertPending(id) {
		return // handled already (perhaps by an earlier leader)
	}
	in, err := a.state.GetInstance(id)
	if err != nil {
		return
	}
	var notes []string
	t, err := a.state.GetTask(in.Task)
	if err == nil {
		for _, name := range t.Policy.OnFailure {
			cmd, err := command.New(command.TypeTrigger, "", "alerts", command.Trigger{Task: name, Key: "on_failure:" + failureKey(in),
				Source: model.SourceOnFailure, Params: map[string]string{model.ParamFailedTask: in.Task, model.ParamFailedInstance: in.ID}})
			if err != nil {
				continue
			}
			res, err := a.rep.Propose(ctx, cmd)
			var s model.Submitted
			if err == nil {
				err = res.Decode(&s)
			}
			if err != nil {
				notes = append(notes, fmt.Sprintf("onFailure %s: %v", name, err))
				continue
			}
			notes = append(notes, fmt.Sprintf("triggered %s (instance %s)", name, s.ID))
		}
		if a.alertsOn() {
			// Protocol 4: the task's instance_failed alert, which the
			// notification loop sends (to policy.notify among others).
			if err := a.proposeAlerts(ctx, []command.AlertChange{failedAlert(in, t)}); err != nil {
				a.log.Warn("raising an instance_failed alert failed", "instance", in.ID, "error", err)
				return
			}
			notes = append(notes, "alert "+model.RuleInstanceFailed+":"+in.Task)
		} else {
			// Below protocol 4 the task's policy.notify URLs take the
			// first release's webhook (notify.LegacyFailure).
			f := notify.LegacyFailure{Event: "instance_failed", Task: in.Task, InstanceID: in.ID, ScheduledAt: in.ScheduledAt,
				Attempts: in.Attempts, Error: in.LastError, Node: a.cfg.NodeID}
			for _, url := range t.Policy.Notify {
				start := time.Now()
				res, ok := notify.PostLegacy(ctx, hc, url, f)
				a.notes.Notified(axmetrics.ChannelWebhook, ok, time.Since(start))
				if !ok {
					a.log.Warn("failure notification failed", "task", in.Task, "instance", in.ID, "url", url, "result", res)
				}
				notes = append(notes, "notify "+url+": "+res)
			}
		}
	} else {
		notes = append(notes, "task no longer exists")
	}
	a.notes.Alerted(axmetrics.EventInstanceFailed)
	cmd, err := command.New(command.TypeAlerted, "", "alerts", command.Alerted{ID: id, Message: strings.Join(notes, "; ")})
	if err != nil {
		return
	}
	if _, err := a.rep.Propose(ctx, cmd); err != nil {
		a.log.Warn("recording an alert failed", "instance", in.ID, "error", err)
		return
	}
	a.log.Info("failure alerted", "task", in.Task, "instance", in.ID, "what", strings.Join(notes, "; "))
}

// failureKey names the failure of instance in that its alerts handle: its
// id, and after a re-run (a failure again of the same instance) the id
// with the number of re-runs, so that a re-run that fails again triggers
// its onFailure tasks and raises its alert again, while a repeat of one
// failure's handling stays a no-op.
func failureKey(in *model.Instance) string {
	n := 0
	for _, e := range in.Events {
		if e.Type == "rerun" {
			n++
		}
	}
	if n == 0 {
		return in.ID
	}
	return fmt.Sprintf("%s/rerun%d", in.ID, n)
}
