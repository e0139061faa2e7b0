#!/bin/sh
# tracing-ab.sh: the overhead of tracing (issue 26), as an A/B in one run.
# It alternates runs of the same load (ax-bench run, sdk no-op handlers,
# against a temporary one-node cluster) with tracing off and on, every
# instance traced (the agent's OTEL_EXPORTER_OTLP_ENDPOINT pointing at a
# local OTLP/HTTP sink), in the order off on on off ..., and prints each
# run's throughput, dispatch p50/p99 and CPU time per instance, and the
# on/off ratios of the medians.
#
# CPU is counted apart for the node (the ax agent: user+sys of its
# process, /proc/PID/stat sampled every 0.1 s to its end) and for the
# node and ax-bench together (the load and the SDK workers; /usr/bin/time). The sink is not ax: it stands in
# for a collector on another host, so it is made as cheap as it can be
# (a Go server that reads each request's body and discards it, without
# decoding it) and its CPU is reported on its own, not counted.
# On a shared machine throughput swings with the other load; CPU per
# instance much less.
# Usage: scripts/tracing-ab.sh [pairs (default 4)] [instances per run (default 20000)]
# AB_RATE and AB_SECONDS set the paced part (default 500/s for 5 s):
# AB_RATE=4000 AB_SECONDS=20 scripts/tracing-ab.sh 6 1000 measures at a
# steady rate the node keeps up with, where no backlog of queued
# instances forms (a backlog costs CPU of its own: the alert watchdog
# reads every active instance every -watch-interval, so the slower mode
# of a saturated A/B pays more of it per instance).
# AB_AT_ONCE=1 runs each pair's two arms at the same time, each its own
# one-node cluster and load, rather than one after the other: on a VM
# whose speed drifts over minutes (the same run's CPU per instance swung
# ±10-20% one after the other here), the drift then falls on both arms
# alike; give each arm half the rate the machine takes:
# AB_AT_ONCE=1 AB_RATE=1500 AB_SECONDS=40 scripts/tracing-ab.sh 12 1000
# (extra OTEL_* variables in the environment apply to the "on" runs' agent:
# OTEL_TRACES_SAMPLER=traceidratio OTEL_TRACES_SAMPLER_ARG=0.1 samples.)
set -eu
pairs=${1:-4}
n=${2:-20000}
rate=${AB_RATE:-500}
seconds=${AB_SECONDS:-5}
dir=$(mktemp -d)
sink=
trap '[ -z "$sink" ] || kill $sink 2>/dev/null; rm -rf "$dir"' EXIT
go build -o "$dir/ax" ./cmd/ax
go build -o "$dir/ax-bench" ./cmd/ax-bench
mkdir "$dir/sink"
cat > "$dir/sink/main.go" <<'GO'
// The OTLP/HTTP sink: answers 200 to every request after reading its
// body, which it does not decode; on SIGTERM it prints the requests, the
// bytes and its own CPU time.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	var reqs, bytes atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		reqs.Add(1)
		bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	if err := os.WriteFile(os.Args[1], []byte(fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)), 0o644); err != nil {
		panic(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Fprintf(os.Stderr, "sink received %d requests, %.1f MB; its CPU %.2f s (not counted)\n", reqs.Load(), float64(bytes.Load())/1e6, cpu.Seconds())
}
GO
(cd "$dir/sink" && go mod init sink >/dev/null 2>&1 && go build -o "$dir/otlp-sink" .)
"$dir/otlp-sink" "$dir/port" &
sink=$!
while [ ! -s "$dir/port" ]; do sleep 0.1; done
endpoint="http://127.0.0.1:$(cat "$dir/port")"
# axw runs ax in place of ax-bench's agent (exec: the same process),
# noting its pid; sample keeps the latest user+sys CPU ticks of each
# noted process (/proc/PID/stat) until ax-bench ends (it SIGKILLs its
# agents after its last measurement: what is lost is at most the last
# 0.1 s, idle).
cat > "$dir/axw" <<SH
#!/bin/sh
echo \$\$ >> "\$AXW_PIDS"
exec "$dir/ax" "\$@"
SH
chmod +x "$dir/axw"
sample() { # $@: the ax-bench pids to outlive; keeps each noted agent's latest ticks
	benches="$*"
	while :; do
		alive=
		for b in $benches; do kill -0 "$b" 2>/dev/null && alive=1; done
		[ -n "$alive" ] || break
		for p in $(cat "$dir"/pids.*); do
			if { read -r line < "/proc/$p/stat"; } 2>/dev/null; then
				# shellcheck disable=SC2086
				set -- $line
				echo $((${14} + ${15})) > "$dir/ticks.$p"
			fi
		done
		sleep 0.1
	done
}
hz=$(getconf CLK_TCK)
total=$((n + rate * seconds))
start() { # $1: off or on; starts its ax-bench (its pid in bench_$1)
	if [ "$1" = on ]; then set -- on env OTEL_EXPORTER_OTLP_ENDPOINT="$endpoint"; else set -- off env -u OTEL_EXPORTER_OTLP_ENDPOINT; fi
	mode=$1
	shift
	: > "$dir/pids.$mode"
	AXW_PIDS="$dir/pids.$mode" /usr/bin/time -f "cpu %U %S" -o "$dir/time.$mode" "$@" "$dir/ax-bench" run -ax "$dir/axw" -nodes 1 -kinds sdk -n "$n" -rate "$rate" -seconds "$seconds" > "$dir/out.$mode" &
	eval "bench_$mode=\$!"
}
finish() { # $1: off or on, its ax-bench waited for; prints its run's line
	mode=$1
	cat "$dir/time.$mode" >> "$dir/out.$mode"
	for p in $(cat "$dir/pids.$mode"); do cat "$dir/ticks.$p" 2>/dev/null; done | awk -v hz="$hz" '{t += $1} END {printf "node %.2f\n", t / hz}' >> "$dir/out.$mode"
	awk -v mode="$mode" -v n="$total" '
		/^machine: load/ {load=$4}
		/^sdk,/ {tput=$NF}
		/^dispatch latency/ {for (i=1;i<=NF;i++) {if ($i=="p50") p50=$(i+1); if ($i=="p99") p99=$(i+1)}}
		/^cpu / {cpu=($2+$3)*1e6/n}
		/^node / {node=$2*1e6/n}
		END {printf "%-3s %8s/s %6.0f node-cpu-us/instance %6.0f all-cpu-us/instance  p50 %-6s p99 %-6s load %s\n", mode, tput, node, cpu, p50, p99, load}' "$dir/out.$mode"
	rm -f "$dir/pids.$mode"
}
i=0
: > "$dir/runs"
while [ $i -lt "$pairs" ]; do
	rm -f "$dir"/ticks.*
	if [ -n "${AB_AT_ONCE:-}" ]; then
		# Both arms at once, each its own one-node cluster and load: the
		# machine's drift in speed (minutes of it on a shared VM) falls
		# on both alike.
		start off
		start on
		sample "$bench_off" "$bench_on"
		wait "$bench_off" "$bench_on"
		for m in off on; do finish $m | tee -a "$dir/runs"; done
	else
		if [ $((i % 2)) -eq 0 ]; then order="off on"; else order="on off"; fi
		for m in $order; do
			start $m
			eval "sample \$bench_$m; wait \$bench_$m"
			finish $m | tee -a "$dir/runs"
		done
	fi
	i=$((i + 1))
done
kill $sink
wait $sink || :
sink=
awk '
	{c[$1]++; v[$1, c[$1]] = $2 + 0; u[$1, c[$1]] = $3 + 0; a[$1, c[$1]] = $5 + 0}
	function median(m, col,   n, i, j, t, x) { n = c[m]
		for (i = 1; i <= n; i++) x[i] = col == 1 ? v[m, i] : col == 2 ? u[m, i] : a[m, i]
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
		return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
	END { off = median("off", 1); on = median("on", 1)
		printf "median throughput: off %.0f/s, on %.0f/s, on/off %.3f\n", off, on, on / off
		off = median("off", 2); on = median("on", 2)
		printf "median node CPU per instance: off %.0f us, on %.0f us, on/off %.3f (overhead %.1f%%)\n", off, on, on / off, (on / off - 1) * 100
		off = median("off", 3); on = median("on", 3)
		printf "median node+ax-bench CPU per instance: off %.0f us, on %.0f us, on/off %.3f (overhead %.1f%%)\n", off, on, on / off, (on / off - 1) * 100 }' "$dir/runs"
# The ratio within each pair (its two runs back to back, so a drift of
# the machine's speed over minutes cancels), and their median.
awk '
	{ if ($1 == "on") on = $3 + 0; else off = $3 + 0 }
	NR % 2 == 0 { n++; r[n] = on / off; printf "pair %d: node CPU on/off %.3f\n", n, r[n] }
	END { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
		m = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
		printf "median of the pairs'"'"' node CPU on/off: %.3f (overhead %.1f%%)\n", m, (m - 1) * 100 }' "$dir/runs"
