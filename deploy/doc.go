// Package deploy holds what operators deploy next to ax rather than Go
// code: Prometheus recording and alerting rules
// (prometheus/ax-rules.yml, unit-tested in prometheus/ax-rules_test.yml)
// and a Grafana dashboard (grafana/ax.json). Its tests run promtool on
// the rules and check the dashboard; agent's TestAgent_OpsMetrics checks
// that every metric they use exists in a real agent's /metrics output.
//
// It also holds the systemd units (systemd/, parsed and run through
// systemd-analyze verify by the tests), the sample agent config file
// ax-agent.hcl (cmd/ax's tests check that it sets every flag of ax agent
// to its default); its tests also check the Dockerfile at the
// repository's root.
package deploy
