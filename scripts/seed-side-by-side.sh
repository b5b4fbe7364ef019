#!/usr/bin/env bash
# The Python design ratesim grew from, and ratesim, deciding the same long trace: how many
# decisions each makes per CPU-second (issue 17). The Python code is not in this
# repository: pass the design document it is printed in, and the script runs the code
# from there, unchanged, in a temporary directory.
#
#   scripts/seed-side-by-side.sh PATH/TO/rate-limiter-seed.txt [REQUESTS] [CLIENTS]
#
# REQUESTS (default 1,000,000) arrivals over CLIENTS (default 50) clients, Poisson at
# 1,000 per second, each client equally likely, rule 100 per 10 s, are written as one CSV
# trace (`time_s,key,cost`, microsecond instants, so both sides read the same times). Both
# sides decide every arrival with the five algorithms the Python code has (GCRA is
# ratesim's own), one after another, on one core:
# - the Python code: its own `RateLimiter` (per-key locks, the map lock) on a fake clock
#   set to each arrival's instant, `try_acquire` per arrival — the decision and its
#   `remaining` and `retry_after`, nothing else;
# - ratesim: `ratesim run` on the trace, one thread, no decisions.csv, no charts — which
#   also judges every denial's `retry_after` against the exact earliest instant, counts
#   each decision against the exact sliding log, keeps the trailing-window counts and
#   sweeps idle keys. So its figure is a whole simulation's, the Python one's bare
#   decisions'.
# CPU time is measured by each process itself (Python's process_time around its loop;
# getrusage for ratesim, including reading the trace). The allowed counts are printed
# side by side as a sanity check: the Python code computes in floating-point seconds,
# ratesim in integer nanoseconds, so a request right at a boundary may go either way.
set -euo pipefail

seed="${1:?usage: scripts/seed-side-by-side.sh PATH/TO/rate-limiter-seed.txt [REQUESTS] [CLIENTS]}"
requests="${2:-1000000}"
clients="${3:-50}"
[ -r "$seed" ] || { echo "cannot read $seed" >&2; exit 2; }
seed="$(realpath "$seed")" # resolved before the cd below
for n in "$requests" "$clients"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "REQUESTS and CLIENTS are whole numbers ≥ 1" >&2; exit 2; }
done
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "python3 is needed to run the Python code" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The code is everything after the document's "Full source" heading.
sed -n '/Full source/,$p' "$seed" | tail -n +2 >"$work/rate_limiter.py"
python3 -c "import ast,sys; ast.parse(open(sys.argv[1]).read())" "$work/rate_limiter.py" || {
    echo "no Python source found after 'Full source' in $seed" >&2
    exit 2
}

python3 - "$work/trace.csv" "$requests" "$clients" <<'EOF'
import random, sys
path, n, clients = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)
t_us = 0
with open(path, "w") as f:
    f.write("time_s,key,cost\n")
    for _ in range(n):
        t_us += max(1, round(rng.expovariate(1000.0) * 1e6))  # Poisson, 1,000 per second
        f.write(f"{t_us // 1_000_000}.{t_us % 1_000_000:06d},c{rng.randrange(clients)},1\n")
EOF
last="$(tail -1 "$work/trace.csv" | cut -d, -f1)"
duration="$(python3 -c "import math,sys; print(math.ceil(float(sys.argv[1])) + 1)" "$last")"
echo "trace: $requests requests over $clients clients, ${duration} s; rule 100 per 10 s"

algorithms='"token_bucket", "leaky_bucket", "fixed_window", "sliding_window_log", "sliding_window_counter"'
cat >"$work/trace.toml" <<EOF
name = "seed_side_by_side"
description = "The side-by-side trace of scripts/seed-side-by-side.sh."
duration = "${duration}s"
algorithms = [$algorithms]
[limit]
max_requests = 100
window = "10s"
[[traffic]]
kind = "trace"
path = "trace.csv"
EOF

echo
echo "== the Python code (python3 $(python3 -c 'import platform; print(platform.python_version())'))"
python3 - "$work" <<'EOF'
import csv, sys, time
sys.path.insert(0, sys.argv[1])
from rate_limiter import FakeClock, RateLimiter, RateLimiterFactory, RateLimitRule

with open(f"{sys.argv[1]}/trace.csv") as f:
    rows = [(float(r["time_s"]), r["key"]) for r in csv.DictReader(f)]
total_cpu = 0.0
for name in ("token_bucket", "leaky_bucket", "fixed_window",
             "sliding_window_log", "sliding_window_counter"):
    clock = FakeClock(0.0)
    limiter = RateLimiter(RateLimiterFactory.create(name, RateLimitRule(100, 10)), clock)
    allowed = 0
    start = time.process_time()
    for t, key in rows:
        clock.now = t
        allowed += limiter.try_acquire(key).allowed
    cpu = time.process_time() - start
    total_cpu += cpu
    print(f"  {name:24} allowed {allowed:>9}  {len(rows) / cpu / 1e6:7.3f} M decisions/CPU-s")
print(f"  {'all five':24} {'':17}  {5 * len(rows) / total_cpu / 1e6:7.3f} M decisions/CPU-s"
      f"  ({total_cpu:.2f} CPU-s)")
EOF

echo
echo "== ratesim (target/release/ratesim run, 1 thread)"
cargo build --release --quiet
out="$work/out"
python3 - "$work" "$out" "$requests" <<'EOF'
import csv, resource, subprocess, sys
work, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
subprocess.run(["target/release/ratesim", "run", f"{work}/trace.toml", "--threads", "1",
                "--no-decisions", "--no-charts", "--quiet", "--out", out],
               check=True, stdout=subprocess.DEVNULL)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = usage.ru_utime + usage.ru_stime
with open(f"{out}/summary.csv") as f:
    for r in csv.DictReader(f):
        print(f"  {r['algorithm']:24} allowed {int(r['allowed']):>9}")
print(f"  {'all five':24} {'':17}  {5 * n / cpu / 1e6:7.3f} M decisions/CPU-s  ({cpu:.2f} CPU-s)")
EOF
