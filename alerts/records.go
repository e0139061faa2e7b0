package alerts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Alert records (docs/alerts.md): the leader's watchdog (watchdog.go)
// proposes what its rules see as alert_update commands; the state machine
// keeps the incidents, their history and a pending notification per
// transition that needs one. This file is the API side (list, silences),
// the leader's notification loop and the quorum watch every node runs.

// alertsProto is the protocol the alert records need.
const alertsProto = 4

// alertsOn reports whether the cluster has reached the protocol of the
// alert records: a leader proposes them only then.
func (a *Alerts) alertsOn() bool { return a.state.Proto() >= alertsProto }

// ListAlerts implements api.AlertsBackend.
func (a *Alerts) ListAlerts(ctx context.Context, q model.AlertQuery) (*model.AlertList, error) {
	f := fsm.AlertFilter{State: q.State, Task: q.Task, Rule: q.Rule, Limit: q.Limit}
	if q.Cursor != "" {
		n, err := strconv.ParseUint(q.Cursor, 10, 64)
		if err != nil {
			return nil, model.FieldErrorf("cursor", "%q is not a cursor from a previous page", q.Cursor)
		}
		f.Before = n
	}
	l, err := a.state.ListAlerts(f)
	if err != nil {
		return nil, err
	}
	// What only this node sees (quorum_lost) comes first on the first page.
	if q.Cursor == "" && q.Task == "" && (q.Rule == "" || q.Rule == model.RuleQuorumLost) {
		for _, al := range a.quorum.alerts() {
			if q.State == "" || q.State == al.State {
				l.Alerts = append([]model.Alert{al}, l.Alerts...)
			}
		}
	}
	return l, nil
}

// PutSilence implements api.AlertsBackend.
func (a *Alerts) PutSilence(ctx context.Context, c api.Caller, req model.SilenceRequest) (*model.Silence, error) {
	if !a.alertsOn() {
		return nil, model.Errorf(model.CodePrecondition, "silences need every member at protocol %d (the cluster is at %d)", alertsProto, a.state.Proto())
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	s := model.Silence{ID: hex.EncodeToString(b[:]), Task: req.Task, Rule: req.Rule, Labels: req.Labels, Until: req.Until, Comment: req.Comment}
	if req.For > 0 {
		s.Until = model.Time{Time: a.cfg.Clock.Now().Add(req.For.Std()).UTC()}
	}
	cmd, err := command.New(command.TypePutSilence, c.RequestID, c.Actor, command.PutSilence{Silence: s})
	if err != nil {
		return nil, err
	}
	res, err := a.rep.Propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	var out model.Silence
	if err := res.Decode(&out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSilences implements api.AlertsBackend.
func (a *Alerts) ListSilences(ctx context.Context) (*model.SilenceList, error) {
	ss, err := a.state.Silences(a.cfg.Clock.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	return &model.SilenceList{Silences: ss}, nil
}

// DeleteSilence implements api.AlertsBackend.
func (a *Alerts) DeleteSilence(ctx context.Context, c api.Caller, id string) error {
	if !a.alertsOn() {
		return model.Errorf(model.CodeNotFound, "silence %q not found", id)
	}
	cmd, err := command.New(command.TypeDeleteSilence, c.RequestID, c.Actor, command.SilenceRef{ID: id})
	if err != nil {
		return err
	}
	res, err := a.rep.Propose(ctx, cmd)
	if err != nil {
		return err
	}
	return res.Decode(nil)
}

// RunNotify is the leader's notification loop (a per-term service): it sends every pending
// transition (new firing, resolved) through the notifier and records it
// sent with alert_notified, so a later leader neither loses nor repeats
// it. A leader that dies between the two leaves it pending: delivery is
// at least once. A failed delivery is tried again with a backoff.
func (a *Alerts) RunNotify(ctx context.Context) error {
	type retry struct {
		at    time.Time
		tries int
	}
	failed := map[uint64]retry{}
	tick := time.NewTicker(a.cfg.NotifyInterval)
	defer tick.Stop()
	for {
		if a.alertsOn() {
			pend, err := a.state.PendingNotifications(100)
			if err != nil {
				a.log.Warn("reading pending alert notifications failed", "error", err)
			}
			for _, tr := range pend {
				if r, ok := failed[tr.Seq]; ok && time.Now().Before(r.at) {
					continue
				}
				if ctx.Err() != nil {
					return nil
				}
				if err := a.notifyOne(ctx, tr); err != nil {
					r := failed[tr.Seq]
					r.tries++
					r.at = time.Now().Add(min(time.Duration(1<<min(r.tries, 8))*time.Second, 5*time.Minute))
					failed[tr.Seq] = r
					a.log.Warn("alert notification failed; trying again", "alert", tr.Alert.ID, "event", tr.Event, "tries", r.tries, "error", err)
					continue
				}
				delete(failed, tr.Seq)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// notifyOne sends one transition and records it sent.
func (a *Alerts) notifyOne(ctx context.Context, tr fsm.AlertTransition) error {
	n := model.AlertNotification{Event: tr.Event, Alert: tr.Alert}
	if name := tr.Alert.Subject.Task; name != "" {
		if t, err := a.state.GetTask(name); err == nil {
			n.TaskLabels, n.Notify = t.Labels, t.Policy.Notify
		}
	}
	nctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := a.notifier.Notify(nctx, n)
	cancel()
	if err != nil {
		return err
	}
	cmd, err := command.New(command.TypeAlertNotified, "", "alerts", command.AlertNotified{ID: tr.Alert.ID, Seq: tr.Seq})
	if err != nil {
		return err
	}
	res, err := a.rep.Propose(ctx, cmd)
	if err == nil {
		err = res.Decode(nil)
	}
	if err != nil {
		// Sent but not recorded: the next try (or leader) sends it again.
		a.log.Warn("recording an alert notification failed", "alert", tr.Alert.ID, "error", err)
		return err
	}
	return nil
}

// proposeAlerts proposes the watchdog's findings, a bounded number per
// command.
func (a *Alerts) proposeAlerts(ctx context.Context, items []command.AlertChange) error {
	for len(items) > 0 {
		n := min(len(items), 1024)
		cmd, err := command.New(command.TypeAlertUpdate, "", "watchdog", command.AlertUpdate{Items: items[:n]})
		if err != nil {
			return err
		}
		res, err := a.rep.Propose(ctx, cmd)
		if err == nil {
			err = res.Decode(nil)
		}
		if err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

// quorumWatch raises quorum_lost on this node when it has seen no leader
// for quorumLostAfter. It cannot be written to the state machine without
// a quorum: the node notifies directly (best effort, once per outage) and
// shows it in its /healthz and GET /v1/alerts.
type quorumWatch struct {
	mu       sync.Mutex
	since    time.Time    // when the leader went missing (zero: there is one)
	alert    *model.Alert // the outage's alert once raised
	resolved *model.Alert // the last outage's, once over (shown for a while)
}

// quorumLostAfter is how long a node sees no leader before it raises
// quorum_lost.
const quorumLostAfter = 10 * time.Second

func (q *quorumWatch) alerts() []model.Alert {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []model.Alert
	if q.alert != nil {
		out = append(out, *q.alert)
	} else if q.resolved != nil {
		out = append(out, *q.resolved)
	}
	return out
}

// step looks at the leader once: it returns a notification to send, if
// the outage just crossed the threshold or just ended.
func (q *quorumWatch) step(node string, now time.Time, hasLeader bool) *model.AlertNotification {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case hasLeader && q.alert != nil:
		al := *q.alert
		at := model.Time{Time: now}
		al.State, al.ResolvedAt, al.LastSeen = model.AlertResolved, &at, at
		q.alert, q.resolved, q.since = nil, &al, time.Time{}
		return &model.AlertNotification{Event: model.AlertResolved, Alert: al}
	case hasLeader:
		q.since = time.Time{}
	case q.since.IsZero():
		q.since = now
	case q.alert == nil && now.Sub(q.since) > quorumLostAfter:
		first := model.Time{Time: q.since}
		q.alert = &model.Alert{ID: model.RuleQuorumLost + ":" + node, Rule: model.RuleQuorumLost, Severity: model.SeverityCritical,
			Subject: model.AlertSubject{Node: node}, Summary: "node " + node + " sees no leader: the cluster has lost its quorum or this node is cut off",
			State: model.AlertFiring, FirstSeen: first, LastSeen: model.Time{Time: now}, Count: 1}
		return &model.AlertNotification{Event: model.AlertFiring, Alert: *q.alert}
	case q.alert != nil:
		q.alert.LastSeen = model.Time{Time: now}
	}
	return nil
}

// Run runs the quorum watch until ctx ends.
func (a *Alerts) Run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n := a.quorum.step(a.cfg.NodeID, a.cfg.Clock.Now(), a.rep.LeaderID() != ""); n != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := a.notifier.Notify(ctx, *n); err != nil {
				a.log.Warn("quorum alert notification failed", "event", n.Event, "error", err)
			}
			cancel()
		}
	}
}
