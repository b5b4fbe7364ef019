#!/bin/sh
# run_bench.sh DIR ROUNDS N: uncontended latency per mode, unix socket and TCP, interleaved rounds.
D=$1; R=${2:-5}; N=${3:-20000}
B="$(dirname "$0")/target/release/redisproto"
P=$(cat $D/port)
MODES="set get lua_noop lua_tb_srv lua_tb_call cas_tb_srv cas_tb_call cas_tb_call_cached lua_log_srv ${EXTRA}"
for r in $(seq $R); do
  for a in unix:$D/r.sock tcp:$P; do
    for m in $MODES; do
      redis-cli -s $D/r.sock FLUSHALL >/dev/null
      $B bench $a $m $N | sed "s/^/round=$r /"
    done
  done
done
