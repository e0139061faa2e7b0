#!/bin/bash
# Usage: scripts/restart-time.sh AX_BINARY [ROUNDS]
#
# Starts a 3-node loopback cluster of AX_BINARY in a temporary directory,
# then ROUNDS times (5 by default) kills a follower with SIGKILL, starts it
# again with the same command and prints the milliseconds from its start
# until its /healthz answers 200 (following a leader it hears from, caught
# up): the time a restarted node takes to re-establish its Raft
# connections and rejoin (docs/performance.md, "Raft authentication").
# Needs curl. Ports are picked at random between 20000 and 40000.
set -u
BIN=$1; ROUNDS=${2:-5}; D=$(mktemp -d); base=$((20000 + RANDOM % 20000))
start() { # id port-offset join
  local id=$1 h=$((base+$2)) r=$((base+$2+1))
  $BIN agent -node $id -data $D/$id -http 127.0.0.1:$h -raft 127.0.0.1:$r $3 -executor=false >> $D/$id.log 2>&1 &
  eval "pid_$id=$!"
}
wait200() { until curl -sf -o /dev/null http://127.0.0.1:$1/healthz; do sleep 0.005; done; }
start n1 0 ""; wait200 $base
start n2 10 "-join 127.0.0.1:$base"; wait200 $((base+10))
start n3 20 "-join 127.0.0.1:$base"; wait200 $((base+20))
sleep 2
for i in $(seq $ROUNDS); do
  kill -9 $pid_n3; wait $pid_n3 2>/dev/null; sleep 1
  t0=$(date +%s%N); start n3 20 ""; wait200 $((base+20)); t1=$(date +%s%N)
  echo $(( (t1-t0)/1000000 ))
  sleep 1
done
kill "$pid_n1" "$pid_n2" "$pid_n3"; wait 2>/dev/null; rm -rf "$D"
