package agent

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics is the node's Prometheus registry (no global state): the Go
// runtime's, the API listener's and every role's collectors.
func (a *Agent) metrics() (*prometheus.Registry, http.Handler) {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		gauge("ax_http_connections", "Open connections of the API listener.", func() float64 { return float64(a.conns.open()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ax_http_connections_evicted_total",
			Help: "Idle API connections closed to admit new ones at the connection cap."}, func() float64 { return float64(a.conns.evicted.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ax_http_connections_refused_total",
			Help: "API connections closed at once because every connection at the cap was busy."}, func() float64 { return float64(a.conns.refused.Load()) }),
	)
	for _, cs := range [][]prometheus.Collector{a.rep.Collectors(), a.cl.Collectors(), a.tasks.Collectors(), a.exec.Collectors()} {
		reg.MustRegister(cs...)
	}
	a.chans.Register(reg)
	// OpenMetrics, when a scraper asks for it, carries the histograms'
	// exemplars (a trace id, when tracing).
	return reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}
