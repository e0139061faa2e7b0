#!/bin/bash
# peers.sh: ax against asynq, like for like (issue 27 item 6;
# docs/performance.md "Like-for-like peers"), in one run.
#
# Each round runs, on this machine and in a temporary directory:
#   - asynq (scripts/asynqload: one asynq.Client shared by N goroutines,
#     each enqueuing a task processed in an hour) against a fresh local
#     redis-server with `--appendonly yes --appendfsync always --save ""`
#     (an enqueue is answered after the append-only file is fsynced, as
#     ax answers a submission after its commit), at 64 and 1,024
#     goroutines;
#   - the same against a fresh redis-server with `--appendfsync everysec`
#     (answered before the fsync, which runs once a second);
#   - ax: `ax-bench submit` on a fresh 3-node loopback cluster (fsync):
#     arrays of 1,000 from 16 clients, then single submissions through
#     client.Submitter at 64 and 1,024 goroutines (and its one-request-each
#     and HTTP-only rows, for how busy the machine is).
# The rounds alternate the order (always everysec ax, then ax everysec
# always, ...) so that the machine's other load falls on all alike. Then a
# short check of what each setting costs in fsyncs: strace counts
# redis-server's fdatasync calls during 20,000 enqueues from 64 goroutines,
# under `always` and `everysec`. Finally one
# table: each row's per second and p50/p99 over the rounds.
#
# Usage: scripts/peers.sh [rounds (default 2)] [single submissions per row (default 40000)]
# Environment: POOL (asynq's go-redis pool size, default 64), ARRAYS (the
# batched submissions, default 300000). Needs redis-server (Debian:
# apt-get install -y -qq redis-server), python3, strace for the check, and
# the Go module proxy (or a module cache) for asynq.
set -eu
rounds=${1:-2}
n=${2:-40000}
pool=${POOL:-64}
arrays=${ARRAYS:-300000}
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
	echo "peers.sh: redis-server (and redis-cli) missing; install them: apt-get install -y -qq redis-server" >&2
	exit 1
fi
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
redis=
stop_redis() {
	if [ -n "$redis" ]; then
		redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$redis" 2>/dev/null || true
		wait "$redis" 2>/dev/null || true
		redis=
	fi
}
trap 'stop_redis; rm -rf "$dir"' EXIT
go build -o "$dir/ax" ./cmd/ax
go build -o "$dir/ax-bench" ./cmd/ax-bench
(cd scripts/asynqload && GOWORK=off go build -o "$dir/asynqload" .)
echo "peers.sh: $(redis-server --version | cut -d' ' -f1-3); $(go version | cut -d' ' -f3); $(nproc) CPUs"

# start_redis FSYNC [COMMAND...]: a fresh redis-server on a free loopback
# port, its append-only file fsynced as FSYNC says, run by COMMAND (strace)
# if given; sets $redis (the pid) and $port.
start_redis() {
	local fsync=$1
	shift
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	rm -rf "$dir/redis"
	mkdir "$dir/redis"
	"$@" redis-server --bind 127.0.0.1 --port "$port" --dir "$dir/redis" --appendonly yes --appendfsync "$fsync" \
		--save "" --daemonize no --logfile "$dir/redis.log" &
	redis=$!
	local i=0
	until redis-cli -p "$port" ping >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 200 ]; then
			echo "peers.sh: redis-server did not answer in 10 s:" >&2
			cat "$dir/redis.log" >&2
			exit 1
		fi
		sleep 0.05
	done
}

# row ROUND MODE: ROUND and MODE before the last four fields (count, per
# second, p50, p99) of the row on stdin, tab-separated, into $dir/rows.
row() {
	awk -v r="$1" -v m="$2" '{printf "%s\t%s\t%s\t%s\t%s\n", r, m, $(NF-2), $(NF-1), $NF}' | tee -a "$dir/rows" |
		awk -F'\t' '{printf "round %s  %-26s %8.0f/s  p50 %-8s p99 %s\n", $1, $2, $3, $4, $5}'
}

# asynq FSYNC ROUND: the asynq rows against a fresh Redis.
asynq() {
	start_redis "$1"
	for g in 64 1024; do
		"$dir/asynqload" -redis "127.0.0.1:$port" -goroutines "$g" -n "$n" -pool "$pool" | row "$2" "asynq, $1, $g goroutines"
	done
	# Where Redis's one thread went: its CPU per enqueue (user+sys of the
	# main thread, all it did during the two rows) and the scripts' own
	# time (asynq's enqueue is one EVALSHA).
	redis-cli -p "$port" info all | tr -d '\r' | awk -F'[:=,]' -v n=$((2 * n)) -v f="$1" '
		/^used_cpu_(user|sys)_main_thread:/ {cpu += $2}
		/^cmdstat_evalsha:/ {calls = $3; us = $5}
		END {printf "  redis-server appendfsync %s: main thread %.1f us of CPU per enqueue, EVALSHA %.1f us a call (%d calls)\n", f, cpu * 1e6 / n, us / (calls ? calls : 1), calls}'
	echo "  append-only files $(du -sk "$dir/redis" | cut -f1) KiB; load $(cut -d' ' -f1-3 /proc/loadavg)"
	stop_redis
}

# ax ROUND: ax-bench submit's rows, on a fresh 3-node cluster.
ax() {
	"$dir/ax-bench" submit -ax "$dir/ax" -n "$arrays" -clients 16 -single-n "$n" -sdk-goroutines 64,1024 > "$dir/out"
	grep '^machine:' "$dir/out" | sed 's/^/  ax-bench /'
	grep '^batched ' "$dir/out" | row "$1" "ax, arrays of 1,000 x 16"
	for g in 64 1024; do
		grep "^sdk x $g," "$dir/out" | row "$1" "ax Submitter, $g goroutines"
	done
	grep '^single x ' "$dir/out" | row "$1" "ax, one request each x 64"
	grep '^  HTTP only' "$dir/out" | row "$1" "HTTP only (404 route) x 64"
}

: > "$dir/rows"
date -u +"start %Y-%m-%d %H:%M:%S UTC; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then order="always everysec ax"; else order="ax everysec always"; fi
	for arm in $order; do
		case $arm in
		ax) ax "$r" ;;
		*) asynq "$arm" "$r" ;;
		esac
	done
done
date -u +"end %Y-%m-%d %H:%M:%S UTC; load $(cut -d' ' -f1-3 /proc/loadavg)"

# What each setting costs in fsyncs: redis-server's fsync and fdatasync
# calls (Redis fsyncs its append-only file with fdatasync on Linux) during
# 20,000 enqueues from 64 goroutines, counted and timed by strace (with
# seccomp-bpf only those calls stop the process).
if command -v strace >/dev/null 2>&1; then
	for fsync in always everysec; do
		start_redis "$fsync" strace -f -c -w --seccomp-bpf -e trace=fsync,fdatasync -o "$dir/strace"
		line=$("$dir/asynqload" -redis "127.0.0.1:$port" -goroutines 64 -n 20000 -pool "$pool")
		stop_redis
		syncs=$(awk '$NF == "fdatasync" || $NF == "fsync" {c += $4; t += $2} END {printf "%d %.0f", c, t * 1e6 / (c ? c : 1)}' "$dir/strace")
		echo "$line" | awk -v f="$fsync" -v s="${syncs% *}" -v us="${syncs#* }" '{printf "appendfsync %s under strace: 20000 enqueues in %.2f s, %d fsyncs by redis-server (%d us each, wall clock), %.1f enqueues per fsync\n", f, $(NF-3) / $(NF-2), s, us, $(NF-3) / (s ? s : 1)}'
	done
else
	echo "strace missing: the fsync counts are skipped"
fi

# One table: each row's figures in every round.
echo
awk -F'\t' '
	!($2 in rate) {order[++k] = $2}
	{rate[$2] = rate[$2] (rate[$2] == "" ? "" : ", ") sprintf("%.0f", $3)
	 lat[$2] = lat[$2] (lat[$2] == "" ? "" : ", ") $4 " / " $5}
	END {print "| mode | per second (each round) | p50 / p99 (each round) |"
	     print "|---|---|---|"
	     for (i = 1; i <= k; i++) printf "| %s | %s | %s |\n", order[i], rate[order[i]], lat[order[i]]}' "$dir/rows"
