package notify

import (
	"context"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// RuleTest names the alert of a test send (POST /v1/channels/{name}/test):
// no rule raises it, no alert list holds it.
const RuleTest = "test"

// TestNotification is what a test send delivers to channel name: a firing
// info alert saying who asked for it, when and through which node.
func TestNotification(name, actor, node string, now time.Time) model.AlertNotification {
	at := model.Time{Time: now.UTC()}
	who := actor
	if who == "" {
		who = "anonymous"
	}
	return model.AlertNotification{Event: model.AlertFiring, Alert: model.Alert{
		ID: "test-" + deliveryID(), Rule: RuleTest, Severity: model.SeverityInfo, State: model.AlertFiring,
		Summary: "Test notification to channel " + name + ", sent by " + who + " through node " + node +
			": if you read this, the channel delivers. Nothing is wrong.",
		FirstSeen: at, LastSeen: at, Count: 1,
	}}
}

// SendTest renders n and delivers it to t once, without retries (the
// caller is waiting for the answer): tries is 1, err why it was not
// delivered. It does not count in the delivery metrics.
func (nf *Notifier) SendTest(ctx context.Context, t *Target, n *model.AlertNotification) error {
	msg, err := nf.Render(ctx, n)
	if err != nil {
		return err
	}
	once := *nf.cfg.Sender
	once.Retry = Retry{Tries: 1}
	_, err = once.Deliver(ctx, t, msg)
	return err
}
