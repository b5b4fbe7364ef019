#!/usr/bin/env bash
# Records a real nginx access log (combined format) on loopback and gzips it into
# scenarios/traces/, for `scenarios/nginx_log.toml`:
#
#   scripts/record-nginx-log.sh [OUT.log.gz]      # default scenarios/traces/nginx-access.log.gz
#
# Needs `nginx` (Debian package) and `curl`. Everything stays on 127.0.0.0/8: nginx
# listens on 127.0.0.1:$PORT with its own temporary prefix and configuration, and the
# clients bind distinct source addresses (curl --interface 127.0.0.N, which Linux
# accepts on the loopback device), so `key = "ip"` tells them apart:
#
#   127.0.0.66            one abusive scraper: ~100 requests/s, all the time
#   127.0.0.11 - .14      four bursty clients: 40-80 requests at once, every 10-20 s
#   127.0.0.101 - .130    thirty polite clients: one request every 2-8 s, some logged in
#
# Bounded: DURATION seconds (default 120) and at most ~20k requests; nginx is stopped
# and the temporary folder removed on exit. The schedule is seeded ($RANDOM per client)
# but the timestamps are real, so two recordings differ.
set -euo pipefail

repo=$(realpath "$(dirname "$0")/..")
out=${1:-$repo/scenarios/traces/nginx-access.log.gz}
duration=${DURATION:-120}
port=${PORT:-18080}

tmp=$(mktemp -d)
chmod 755 "$tmp"
cleanup() {
    if [[ -f $tmp/nginx.pid ]]; then
        nginx -p "$tmp" -c "$tmp/nginx.conf" -s stop 2>/dev/null || true
        sleep 0.5
    fi
    # Only our own children: the client loops started below.
    jobs -p | xargs -r kill 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# The site: a few pages, an API listing and files of different sizes (so `bytes` varies).
mkdir -p "$tmp/html/api" "$tmp/html/static" "$tmp/logs"
echo "<h1>home</h1>" >"$tmp/html/index.html"
echo "<h1>about</h1>" >"$tmp/html/about.html"
for i in $(seq 1 50); do
    printf '{"page":%d,"items":[%s]}\n' "$i" "$(seq -s, 1 $((i * 7)))" >"$tmp/html/api/items-$i.json"
done
head -c 20000 /dev/zero | tr '\0' 'x' >"$tmp/html/static/app.js"
head -c 3000 /dev/zero | tr '\0' 'y' >"$tmp/html/static/style.css"
chmod -R a+rX "$tmp/html"

cat >"$tmp/nginx.conf" <<EOF
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/logs/error.log warn;
events { worker_connections 256; }
http {
    access_log $tmp/logs/access.log combined;
    client_body_temp_path $tmp/client_body;
    proxy_temp_path $tmp/proxy;
    fastcgi_temp_path $tmp/fastcgi;
    uwsgi_temp_path $tmp/uwsgi;
    scgi_temp_path $tmp/scgi;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$port;
        root $tmp/html;
        location / { try_files \$uri \$uri/ =404; }
    }
}
EOF
nginx -p "$tmp" -c "$tmp/nginx.conf"
base="http://127.0.0.1:$port"
end=$((SECONDS + duration))

# The scraper: walks the API as fast as --rate lets it, with the odd probe for files
# that do not exist (404s, for include_status / exclude_status).
abusive() {
    local n=0
    while ((SECONDS < end)); do
        curl -s --interface 127.0.0.66 --rate 100/s -A "scraper/0.1" \
            "$base/api/items-[1-50].json" "$base/admin/login.php" "$base/.env" >/dev/null || true
        n=$((n + 52))
        ((n < 14000)) || break
    done
}

# A bursty client: a page load's worth of requests at once, then quiet.
bursty() {
    local ip=$1
    RANDOM=$2
    sleep $((RANDOM % 10))
    while ((SECONDS < end)); do
        local size=$((40 + RANDOM % 41))
        curl -s --interface "$ip" -A "Mozilla/5.0 (bursty)" \
            "$base/api/items-[1-$size].json" >/dev/null || true
        sleep $((10 + RANDOM % 11))
    done
}

# A polite client: one request every 2-8 s; every third one sends a user name.
polite() {
    local ip=$1 i=$2
    RANDOM=$((1000 + i))
    local auth=()
    ((i % 3 == 0)) && auth=(-u "user$i:secret")
    local pages=(/ /about.html /static/app.js /static/style.css /api/items-1.json /missing.html)
    sleep $((RANDOM % 5))
    while ((SECONDS < end)); do
        curl -s -o /dev/null --interface "$ip" "${auth[@]}" -A "Mozilla/5.0 (polite)" \
            "$base${pages[RANDOM % ${#pages[@]}]}" || true
        sleep $((2 + RANDOM % 7))
    done
}

abusive &
for i in 1 2 3 4; do bursty "127.0.0.1$i" "$i" & done
for i in $(seq 101 130); do polite "127.0.0.$i" "$i" & done
wait

nginx -p "$tmp" -c "$tmp/nginx.conf" -s quit 2>/dev/null
while [[ -f $tmp/nginx.pid ]]; do sleep 0.2; done
mkdir -p "$(dirname "$out")"
gzip -9 -n -c "$tmp/logs/access.log" >"$out"
echo "$(wc -l <"$tmp/logs/access.log") requests in $out ($(stat -c %s "$out") bytes)"
