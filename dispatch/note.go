package dispatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// noteEvery is how often the dispatcher looks for instances that no
// executor can run.
const noteEvery = 5 // reaper ticks (1s)

// note records a no_executor event (command.Note) on every instance that has
// waited READY for NoteAfter while no executor heard from within
// executorTTL could run it (its action, or its executorLabels), once per
// wait; the instance stays READY and is leased as soon as a capable
// executor polls. Nothing is ever failed for want of an executor.
func (d *Dispatcher) note(ctx context.Context) {
	now := d.cfg.Now()
	d.mu.Lock()
	var present []*model.ExecutorStatus
	for _, e := range d.seen {
		if !e.LastSeen.Before(now.Add(-executorTTL)) {
			present = append(present, e)
		}
	}
	waiting := d.ready.unrunnable(now.Add(-d.cfg.NoteAfter).UnixMilli(), func(r *route) bool {
		for _, e := range present {
			if r.servedBy(e.Name, e.Capabilities, e.Labels) {
				return true
			}
		}
		return false
	})
	d.mu.Unlock()
	for q, ids := range waiting {
		msg := fmt.Sprintf("no executor can run it: it needs %s, and none of the %d executor(s) heard from in the last %s has that; it waits READY until one polls",
			q.route.String(), len(present), executorTTL)
		if len(present) == 0 {
			msg = fmt.Sprintf("no executor can run it: it needs %s, and no executor has polled in the last %s; it waits READY until one does",
				q.route.String(), executorTTL)
		}
		d.log.Warn("instances wait READY: no executor can run them", "count", len(ids), "needs", q.route.String(), "executors", len(present))
		for len(ids) > 0 {
			n := min(len(ids), 1024)
			if err := d.proposeNote(ctx, ids[:n], msg); err != nil {
				d.mu.Lock()
				d.ready.unnote(ids)
				d.mu.Unlock()
				if ctx.Err() == nil {
					d.log.Warn("recording why instances wait failed", "count", len(ids), "error", err)
				}
				break
			}
			ids = ids[n:]
		}
	}
}

// proposeNote records msg on ids. A cluster with a member too old for
// the note command (failed_precondition) gets no events: the leader's log
// says it, and the instances are not tried again.
func (d *Dispatcher) proposeNote(ctx context.Context, ids []uint64, msg string) error {
	cmd, err := command.New(command.TypeNote, "", "dispatcher", command.Note{IDs: ids, Type: command.NoteNoExecutor, Message: msg})
	if err != nil {
		return err
	}
	res, err := d.propose(ctx, cmd)
	if err != nil {
		return err
	}
	if err := res.Decode(nil); err != nil {
		if errors.Is(err, model.ErrPrecondition) {
			d.log.Debug("no_executor events need every member at protocol 3", "error", err)
			return nil
		}
		return err
	}
	return nil
}
