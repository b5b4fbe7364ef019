#!/bin/sh
# srv.sh start|stop DIR [extra redis-server args]: a throwaway redis-server on DIR/r.sock
# plus a free TCP loopback port (written to DIR/port), no persistence.
set -e
cmd=$1; dir=$2; shift 2
case $cmd in
start)
  mkdir -p "$dir"
  port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --unixsocket "$dir/r.sock" --save '' --appendonly no \
    --daemonize yes --pidfile "$dir/pid" --dir "$dir" --logfile "$dir/log" "$@"
  echo "$port" > "$dir/port"
  for i in $(seq 50); do [ -S "$dir/r.sock" ] && break; sleep 0.05; done
  echo "started pid $(cat $dir/pid) port $port sock $dir/r.sock";;
stop)
  [ -f "$dir/pid" ] && kill "$(cat $dir/pid)" && echo "stopped $(cat $dir/pid)";;
esac
