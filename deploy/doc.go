// Package deploy holds what operators deploy next to ax rather than Go
// code: Prometheus recording and alerting rules
// (prometheus/ax-rules.yml, unit-tested in prometheus/ax-rules_test.yml)
// and a Grafana dashboard (grafana/ax.json). Its tests run promtool on
// the rules and check the dashboard; agent's TestAgent_OpsMetrics checks
// that every metric they use exists in a real agent's /metrics output.
package deploy
