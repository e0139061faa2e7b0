package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Notification results, the values of the result label.
const (
	ResultSuccess = "success" // delivered (a 2xx answer, or the channel's equivalent)
	ResultFailure = "failure" // given up on after the channel's retries
)

// Channel types known today, the values of the channel_type label. A new
// channel type should be passed to Notifications.Init when the agent
// starts, so its series exist at zero before its first notification.
const (
	ChannelWebhook = "webhook"
)

// Alert events known today, the values of the alerts counter's event
// label.
const (
	EventInstanceFailed = "instance_failed"
	// EventDeadlineMissed: the deadline_missed alert of a task raised.
	EventDeadlineMissed = "deadline_missed"
)

// Notifications counts alerts and their notifications on the node that
// raised them (the leader). Its methods are safe for concurrent use.
//
//	ax_alerts_total{event}                       alerts raised (one per failed instance, ...)
//	ax_notifications_total{channel_type,result}  notification deliveries, by outcome
//	ax_notification_duration_seconds{channel_type} time to deliver or give up, retries included
type Notifications struct {
	alerts   *prometheus.CounterVec
	sent     *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewNotifications returns the counters with the known channel types and
// events initialised; register them with Register.
func NewNotifications() *Notifications {
	n := &Notifications{
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ax_alerts_total",
			Help: "Alerts raised by this node while it led, by event (instance_failed: an instance ended FAILED; deadline_missed: a task's instance was not finished by its policy.deadline).",
		}, []string{"event"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ax_notifications_total",
			Help: "Alert notifications this node delivered (result=success) or gave up on after its retries (result=failure), by channel type.",
		}, []string{"channel_type", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ax_notification_duration_seconds",
			Help:    "Time to deliver a notification or give up on it, retries included, by channel type.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"channel_type"}),
	}
	n.Init(ChannelWebhook)
	n.alerts.WithLabelValues(EventInstanceFailed)
	n.alerts.WithLabelValues(EventDeadlineMissed)
	return n
}

// Register registers the counters with reg.
func (n *Notifications) Register(reg prometheus.Registerer) {
	reg.MustRegister(n.alerts, n.sent, n.duration)
}

// Init makes a channel type's series exist (at zero) before its first
// notification.
func (n *Notifications) Init(channelType string) {
	n.sent.WithLabelValues(channelType, ResultSuccess)
	n.sent.WithLabelValues(channelType, ResultFailure)
	n.duration.WithLabelValues(channelType)
}

// Alerted counts one alert raised for event.
func (n *Notifications) Alerted(event string) {
	n.alerts.WithLabelValues(event).Inc()
}

// Notified counts one notification on a channel type: delivered (ok) or
// given up on, after took.
func (n *Notifications) Notified(channelType string, ok bool, took time.Duration) {
	result := ResultFailure
	if ok {
		result = ResultSuccess
	}
	n.sent.WithLabelValues(channelType, result).Inc()
	n.duration.WithLabelValues(channelType).Observe(took.Seconds())
}
