package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Alert records (protocol 4). The leader's watchdog evaluates its rules
// and proposes what it sees (alert_update); apply turns that into
// incidents: one current record per alert id while it fires, a capped
// history of transitions (firing, resolved), and a pending notification
// per transition that needs one, until the leader records it sent
// (alert_notified). Silences are records too, matched inside apply against
// the command's leader time, so every replica decides alike.

var (
	// bktAlertsCur: alert id -> alertRecord JSON (firing alerts only).
	bktAlertsCur = []byte("alert_records")
	// bktAlertHistory: u64 transition seq -> alertTransition JSON, the
	// newest alertHistoryCap.
	bktAlertHistory = []byte("alert_history")
	// bktAlertPending: u64 transition seq -> alertTransition JSON: the
	// transitions whose notification is not recorded as sent.
	bktAlertPending = []byte("alert_pending")
	// bktSilences: silence id -> model.Silence JSON.
	bktSilences = []byte("silences")

	keyAlertSeq     = []byte("alert_seq")     // u64 last transition seq
	keyAlertHistory = []byte("alert_history") // u64 key count of bktAlertHistory
	keyAlertPending = []byte("alert_pending") // u64 key count of bktAlertPending
)

// Bounds of the alert buckets.
const (
	alertHistoryCap = 10_000
	alertPendingCap = 1_000
	maxSilences     = 10_000
)

// alertRecord is a stored current alert.
type alertRecord struct {
	model.Alert
	Seq uint64 `json:"seq"` // the transition that raised it
	Key string `json:"key,omitempty"`
}

// AlertTransition is a transition of an alert: the history's entries and
// the pending notifications.
type AlertTransition struct {
	Seq   uint64      `json:"seq"`
	Event string      `json:"event"` // firing | resolved
	Alert model.Alert `json:"alert"`
}

// alertUpdate applies the watchdog's findings in order.
func (w alertWrites) alertUpdate(u *command.AlertUpdate) *Result {
	var out struct {
		Raised    int `json:"raised"`
		Refreshed int `json:"refreshed"`
		Resolved  int `json:"resolved"`
	}
	silences := w.activeSilences(w.cmd.Now)
	for _, it := range u.Items {
		cur, ok := w.loadAlert(it.ID)
		if w.err != nil {
			return nil
		}
		switch {
		case it.Op == command.AlertResolve && ok:
			w.resolve(cur, silences)
			out.Resolved++
		case it.Op == command.AlertResolve:
		case ok:
			if it.Key != "" && it.Key == cur.Key {
				continue
			}
			cur.Key = it.Key
			w.again(cur, model.Alert{Severity: it.Severity, Subject: it.Subject, Summary: it.Summary, Details: it.Details}, silences)
			out.Refreshed++
		default:
			w.raiseNew(&alertRecord{Alert: model.Alert{ID: it.ID, Rule: it.Rule, Severity: it.Severity, Subject: it.Subject,
				Summary: it.Summary, Details: it.Details}, Key: it.Key}, silences)
			out.Raised++
		}
	}
	if w.err != nil {
		return nil
	}
	return okResult(out)
}

// resolve resolves a firing alert; its resolution is announced only if
// its firing was.
func (w alertWrites) resolve(cur *alertRecord, silences []model.Silence) {
	now := model.UnixMilli(w.cmd.Now)
	cur.State = model.AlertResolved
	cur.ResolvedAt = &now
	w.del(bktAlertsCur, []byte(cur.ID))
	w.transition(model.AlertResolved, cur.Alert, !cur.Silenced && !w.silenced(silences, &cur.Alert))
}

// raiseNew records rec, an alert not firing, as firing from now.
func (w alertWrites) raiseNew(rec *alertRecord, silences []model.Silence) {
	now := model.UnixMilli(w.cmd.Now)
	rec.State, rec.FirstSeen, rec.LastSeen, rec.Count = model.AlertFiring, now, now, 1
	rec.Silenced = w.silenced(silences, &rec.Alert)
	rec.Seq = w.transition(model.AlertFiring, rec.Alert, !rec.Silenced)
	w.putAlert(rec)
}

// raise raises alert id from apply (a rollback's): a new incident, or
// one more occurrence of the firing one, with the words of this one.
func (w alertWrites) raise(id, rule, severity string, subject model.AlertSubject, summary string, details map[string]string) {
	a := model.Alert{ID: id, Rule: rule, Severity: severity, Subject: subject, Summary: summary, Details: details}
	cur, ok := w.loadAlert(id)
	if w.err != nil {
		return
	}
	silences := w.activeSilences(w.cmd.Now)
	if !ok {
		w.raiseNew(&alertRecord{Alert: a}, silences)
		return
	}
	w.again(cur, a, silences)
}

// again records one more occurrence of the firing alert cur, with a's
// severity, subject and words.
func (w alertWrites) again(cur *alertRecord, a model.Alert, silences []model.Silence) {
	cur.LastSeen = model.UnixMilli(w.cmd.Now)
	cur.Count++
	cur.Severity, cur.Subject, cur.Summary, cur.Details = a.Severity, a.Subject, a.Summary, a.Details
	cur.Silenced = w.silenced(silences, &cur.Alert)
	w.putAlert(cur)
}

func (w alertWrites) loadAlert(id string) (*alertRecord, bool) {
	v := w.tx.Bucket(bktAlertsCur).Get([]byte(id))
	if v == nil {
		return nil, false
	}
	var r alertRecord
	if err := json.Unmarshal(v, &r); err != nil {
		w.err = err
		return nil, false
	}
	return &r, true
}

func (w alertWrites) putAlert(r *alertRecord) {
	b, err := json.Marshal(r)
	if err != nil {
		w.err = err
		return
	}
	w.put(bktAlertsCur, []byte(r.ID), b)
}

// transition records a transition in the history (and as pending if it
// needs a notification) and returns its seq.
func (w alertWrites) transition(event string, a model.Alert, notify bool) uint64 {
	seq := metaU64(w.tx, keyAlertSeq) + 1
	w.put(bktMeta, keyAlertSeq, u64key(seq))
	b, err := json.Marshal(AlertTransition{Seq: seq, Event: event, Alert: a})
	if err != nil {
		w.err = err
		return seq
	}
	w.putCappedOne(bktAlertHistory, keyAlertHistory, u64key(seq), b, alertHistoryCap)
	if notify {
		w.putCappedOne(bktAlertPending, keyAlertPending, u64key(seq), b, alertPendingCap)
	}
	return seq
}

// putCappedOne adds a key to a bucket of at most limit keys, dropping the
// lowest.
func (w alertWrites) putCappedOne(bkt, countKey, k, v []byte, limit uint64) {
	if w.err != nil {
		return
	}
	b := w.tx.Bucket(bkt)
	n := metaU64(w.tx, countKey)
	if b.Get(k) == nil {
		n++
	}
	w.put(bkt, k, v)
	c := b.Cursor()
	for k, _ := c.First(); k != nil && n > limit && w.err == nil; k, _ = c.First() {
		w.err = c.Delete()
		n--
	}
	w.put(bktMeta, countKey, u64key(n))
}

// activeSilences lists the silences in force at nowMs, in id order.
func (w alertWrites) activeSilences(nowMs int64) []model.Silence {
	var out []model.Silence
	w.tx.Bucket(bktSilences).ForEach(func(_, v []byte) error {
		var s model.Silence
		if json.Unmarshal(v, &s) == nil && s.Until.Millis() > nowMs {
			out = append(out, s)
		}
		return nil
	})
	return out
}

// silenced reports whether a silence matches the alert: every field it
// names matches (labels: the alert's task has each of them).
func (w alertWrites) silenced(ss []model.Silence, a *model.Alert) bool {
	var labels map[string]string
	loaded := false
	for _, s := range ss {
		if s.Task != "" && s.Task != a.Subject.Task || s.Rule != "" && s.Rule != a.Rule {
			continue
		}
		if len(s.Labels) > 0 {
			if !loaded {
				loaded = true
				if a.Subject.Task != "" {
					if t, ok := w.tasks().loadTask(a.Subject.Task); ok && !t.Deleted {
						labels = t.Labels
					}
				}
			}
			match := true
			for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
				if v, ok := labels[k]; !ok || v != s.Labels[k] {
					match = false
					break
				}
			}
			if !match {
				continue
			}
		}
		return true
	}
	return false
}

// alertNotified records that a transition's notification was sent.
func (w alertWrites) alertNotified(n *command.AlertNotified) *Result {
	b := w.tx.Bucket(bktAlertPending)
	v := b.Get(u64key(n.Seq))
	recorded := false
	if v != nil {
		var t AlertTransition
		if json.Unmarshal(v, &t) == nil && t.Alert.ID == n.ID {
			w.del(bktAlertPending, u64key(n.Seq))
			w.put(bktMeta, keyAlertPending, u64key(metaU64(w.tx, keyAlertPending)-1))
			recorded = true
		}
	}
	return okResult(struct {
		Recorded bool `json:"recorded"`
	}{recorded})
}

// putSilence stores a silence (replacing one of the same id) and drops
// those expired by the command's time.
func (w alertWrites) putSilence(p *command.PutSilence) *Result {
	b := w.tx.Bucket(bktSilences)
	var expired [][]byte
	n := 0
	b.ForEach(func(k, v []byte) error {
		var s model.Silence
		if json.Unmarshal(v, &s) == nil && s.Until.Millis() <= w.cmd.Now {
			expired = append(expired, bytes.Clone(k))
		} else {
			n++
		}
		return nil
	})
	if n >= maxSilences && b.Get([]byte(p.Silence.ID)) == nil {
		return errResult(model.Errorf(model.CodeTooMany, "more than %d silences", maxSilences))
	}
	for _, k := range expired {
		w.del(bktSilences, k)
	}
	s := p.Silence
	s.Created = model.UnixMilli(w.cmd.Now)
	s.By = w.cmd.Actor
	v, err := json.Marshal(s)
	if err != nil {
		w.err = err
		return nil
	}
	w.put(bktSilences, []byte(s.ID), v)
	return okResult(s)
}

// silenceCheck is delete_silence's check: the silence must exist.
func (w alertWrites) silenceCheck(r *command.SilenceRef) (none, *Result) {
	if w.tx.Bucket(bktSilences).Get([]byte(r.ID)) == nil {
		return none{}, errResult(model.Errorf(model.CodeNotFound, "silence %q not found", r.ID))
	}
	return none{}, nil
}

func (w alertWrites) deleteSilence(r *command.SilenceRef) *Result {
	w.del(bktSilences, []byte(r.ID))
	return okResult(struct{}{})
}

// FiringAlerts returns the firing alerts, by id.
func (q alertReads) FiringAlerts() ([]model.Alert, error) {
	var out []model.Alert
	err := q.f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktAlertsCur).ForEach(func(_, v []byte) error {
			var r alertRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			out = append(out, r.Alert)
			return nil
		})
	})
	return out, err
}

// NotificationsPending counts the alert transitions whose notification
// is not recorded as sent.
func (q alertReads) NotificationsPending() int {
	var n uint64
	q.f.view(func(tx *bolt.Tx) error {
		n = metaU64(tx, keyAlertPending)
		return nil
	})
	return int(n)
}

// FiringAlert returns a firing alert by id.
func (q alertReads) FiringAlert(id string) (*model.Alert, bool) {
	var out *model.Alert
	q.f.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bktAlertsCur).Get([]byte(id)); v != nil {
			var r alertRecord
			if json.Unmarshal(v, &r) == nil {
				out = &r.Alert
			}
		}
		return nil
	})
	return out, out != nil
}

// PendingNotifications returns the transitions whose notification is not
// recorded as sent, oldest first, at most limit.
func (q alertReads) PendingNotifications(limit int) ([]AlertTransition, error) {
	var out []AlertTransition
	err := q.f.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bktAlertPending).Cursor()
		for k, v := c.First(); k != nil && len(out) < limit; k, v = c.Next() {
			var t AlertTransition
			if err := json.Unmarshal(v, &t); err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// AlertFilter selects alerts for ListAlerts.
type AlertFilter struct {
	State  string // firing | resolved | "" (both)
	Task   string
	Rule   string
	Limit  int
	Before uint64 // cursor: only transitions before this seq (0: from the newest)
}

// ListAlerts lists incidents newest first: the firing alerts (each by the
// transition that raised it) and the resolved ones kept in the history
// (each by its resolution), with the cursor of the next page.
func (q alertReads) ListAlerts(flt AlertFilter) (*model.AlertList, error) {
	if flt.Limit <= 0 {
		flt.Limit = 100
	}
	type item struct {
		seq uint64
		a   model.Alert
	}
	var items []item
	match := func(a *model.Alert) bool {
		return (flt.Task == "" || a.Subject.Task == flt.Task) && (flt.Rule == "" || a.Rule == flt.Rule)
	}
	err := q.f.view(func(tx *bolt.Tx) error {
		if flt.State != model.AlertResolved {
			err := tx.Bucket(bktAlertsCur).ForEach(func(_, v []byte) error {
				var r alertRecord
				if err := json.Unmarshal(v, &r); err != nil {
					return err
				}
				if match(&r.Alert) && (flt.Before == 0 || r.Seq < flt.Before) {
					items = append(items, item{r.Seq, r.Alert})
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if flt.State == model.AlertFiring {
			return nil
		}
		c := tx.Bucket(bktAlertHistory).Cursor()
		var k, v []byte
		if flt.Before == 0 {
			k, v = c.Last()
		} else {
			c.Seek(u64key(flt.Before))
			k, v = c.Prev()
			if k == nil {
				// Seek past the end leaves the cursor invalid.
				if lk, _ := c.Last(); lk != nil && binary.BigEndian.Uint64(lk) < flt.Before {
					k, v = c.Last()
				}
			}
		}
		resolved := 0
		for ; k != nil && resolved <= flt.Limit; k, v = c.Prev() {
			if !bytes.Contains(v, []byte(`"event":"resolved"`)) {
				continue
			}
			var t AlertTransition
			if err := json.Unmarshal(v, &t); err != nil {
				return err
			}
			if match(&t.Alert) {
				items = append(items, item{t.Seq, t.Alert})
				resolved++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(items, func(i, j int) bool { return items[i].seq > items[j].seq })
	out := &model.AlertList{Alerts: []model.Alert{}}
	for i, it := range items {
		if i == flt.Limit {
			out.NextCursor = strconv.FormatUint(items[i-1].seq, 10)
			break
		}
		out.Alerts = append(out.Alerts, it.a)
	}
	return out, nil
}

// Silences returns the silences in force at nowMs, by id.
func (q alertReads) Silences(nowMs int64) ([]model.Silence, error) {
	out := []model.Silence{}
	err := q.f.view(func(tx *bolt.Tx) error {
		out = append(out, (&writer{tx: tx}).alerts().activeSilences(nowMs)...)
		return nil
	})
	return out, err
}

func (w alertWrites) alerted(a *command.Alerted) *Result {
	if w.tx.Bucket(bktAlerts).Get(u64key(a.ID)) == nil {
		return okResult(struct{}{}) // already recorded
	}
	w.del(bktAlerts, u64key(a.ID))
	w.instances().event(a.ID, "alerted", a.Message)
	return okResult(struct{}{})
}
