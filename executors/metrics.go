package executors

import "github.com/prometheus/client_golang/prometheus"

// leaderState exposes what the leader's term knows: READY depth by route
// and executor slots.
type leaderState struct{ e *Executors }

var (
	readyDesc = prometheus.NewDesc("ax_ready_instances",
		"READY instances waiting for an executor on the leader, by route: action type, sdk handler and the task's executor labels (k=v,... sorted). Leader only.",
		[]string{"action", "handler", "executor_labels"}, nil)
	slotsDesc = prometheus.NewDesc("ax_executor_slots",
		"Executor slots by executor heard from in the last minute: state=busy are attempts leased to it now, state=free the free slots it reported in its last poll. Leader only.",
		[]string{"executor", "state"}, nil)
)

// Describe implements prometheus.Collector.
func (s leaderState) Describe(ch chan<- *prometheus.Desc) {
	ch <- readyDesc
	ch <- slotsDesc
}

// Collect implements prometheus.Collector.
func (s leaderState) Collect(ch chan<- prometheus.Metric) {
	d := s.e.Dispatcher()
	if d == nil {
		return
	}
	for _, r := range d.ReadyDepth() {
		ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, float64(r.Ready), r.Action, r.Handler, r.Labels)
	}
	for _, e := range d.Executors() {
		ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(e.Running), e.Name, "busy")
		ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(e.Free), e.Name, "free")
	}
}
