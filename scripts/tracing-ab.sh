#!/bin/sh
# tracing-ab.sh: the overhead of tracing (issue 26), as an A/B in one run.
# It alternates runs of the same load (ax-bench run, sdk no-op handlers,
# against a temporary one-node cluster) with tracing off and on (the
# agent's OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP sink
# that answers 200 and counts the bytes it received), in the order
# off on on off ..., and prints each run's throughput, dispatch p50/p99
# and CPU time per instance (user+sys of ax-bench and the agent it
# starts, /usr/bin/time), and the on/off ratios of the medians. On a
# shared machine throughput swings with the other load; CPU per instance
# much less.
# Usage: scripts/tracing-ab.sh [pairs (default 4)] [instances per run (default 20000)]
set -eu
pairs=${1:-4}
n=${2:-20000}
dir=$(mktemp -d)
trap 'kill $sink 2>/dev/null; rm -rf "$dir"' EXIT
go build -o "$dir/ax" ./cmd/ax
go build -o "$dir/ax-bench" ./cmd/ax-bench
python3 - "$dir/port" "$dir/bytes" <<'PY' &
import http.server, sys, threading
portf, bytesf = sys.argv[1], sys.argv[2]
total = [0, 0]
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get('Content-Length') or 0)
        self.rfile.read(n)
        with lock:
            total[0] += 1; total[1] += n
            open(bytesf, 'w').write('%d %d\n' % (total[0], total[1]))
        self.send_response(200)
        self.send_header('Content-Type', 'application/x-protobuf')
        self.send_header('Content-Length', '0')
        self.end_headers()
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
open(portf, 'w').write(str(s.server_address[1]))
s.serve_forever()
PY
sink=$!
while [ ! -s "$dir/port" ]; do sleep 0.1; done
endpoint="http://127.0.0.1:$(cat "$dir/port")"
run() { # $1: off or on
	if [ "$1" = on ]; then set -- on env OTEL_EXPORTER_OTLP_ENDPOINT="$endpoint"; else set -- off; fi
	mode=$1
	shift
	/usr/bin/time -f "cpu %U %S" -o "$dir/time" "$@" "$dir/ax-bench" run -ax "$dir/ax" -nodes 1 -kinds sdk -n "$n" -rate 500 -seconds 5 > "$dir/out"
	cat "$dir/time" >> "$dir/out"
	awk -v mode="$mode" -v n="$n" '
		/^machine: load/ {load=$4}
		/^sdk,/ {tput=$NF}
		/^dispatch latency/ {for (i=1;i<=NF;i++) {if ($i=="p50") p50=$(i+1); if ($i=="p99") p99=$(i+1)}}
		/^cpu / {cpu=($2+$3)*1e6/(n+2500)}
		END {printf "%-3s %8s/s %6.0f cpu-us/instance  p50 %-6s p99 %-6s load %s\n", mode, tput, cpu, p50, p99, load}' "$dir/out"
}
i=0
: > "$dir/runs"
while [ $i -lt "$pairs" ]; do
	if [ $((i % 2)) -eq 0 ]; then order="off on"; else order="on off"; fi
	for m in $order; do run $m | tee -a "$dir/runs"; done
	i=$((i + 1))
done
echo "sink received (requests bytes): $(cat "$dir/bytes" 2>/dev/null || echo '0 0')"
awk '
	{v[$1, ++c[$1]] = $2 + 0; u[$1, c[$1]] = $3 + 0}
	function median(m,   n, i, j, t, a) { n = c[m]; for (i = 1; i <= n; i++) a[i] = v[m, i]
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	function umedian(m,   n, i, j, t, a) { n = c[m]; for (i = 1; i <= n; i++) a[i] = u[m, i]
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	END { off = median("off"); on = median("on"); uoff = umedian("off"); uon = umedian("on")
		printf "median throughput: off %.0f/s, on %.0f/s, on/off %.3f\n", off, on, on / off
		printf "median CPU per instance: off %.0f us, on %.0f us, on/off %.3f (overhead %.1f%%)\n", uoff, uon, uon / uoff, (uon / uoff - 1) * 100 }' "$dir/runs"
