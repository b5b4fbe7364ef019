"""Drives Python `limits` (MemoryStorage) on a patched clock for tests/presets_limits.rs.

Reads one JSON case per line on stdin:
  {"strategy": "fixed"|"moving"|"sliding", "n": N, "w_secs": W, "hits": [[t_ns, cost], ...]}
and prints one line per case: a "1" (hit passed) or "0" per hit, no separators.

The clock is `time.time` as seen by limits' memory storage, set to each hit's instant
(t_ns / 1e9 seconds). Its 10 ms expiry timer is replaced by one that never fires, so
only the hits' own instants decide (the timer only drops entries the hits would ignore,
except at exact boundaries, where it would race the test).
"""

import json
import sys
import threading

import limits
import limits.storage.memory as memory


class Clock:
    now = 0.0

    def time(self):
        return self.now


class NeverTimer:
    def __init__(self, *args, **kwargs):
        pass

    def start(self):
        pass

    def is_alive(self):
        return True

    def cancel(self):
        pass


clock = Clock()
memory.time = clock
threading.Timer = NeverTimer
memory.threading.Timer = NeverTimer

STRATEGIES = {
    "fixed": limits.strategies.FixedWindowRateLimiter,
    "moving": limits.strategies.MovingWindowRateLimiter,
    "sliding": limits.strategies.SlidingWindowCounterRateLimiter,
}

for line in sys.stdin:
    case = json.loads(line)
    limiter = STRATEGIES[case["strategy"]](limits.storage.MemoryStorage())
    item = limits.RateLimitItemPerSecond(case["n"], case["w_secs"])
    out = []
    for t_ns, cost in case["hits"]:
        clock.now = t_ns / 1e9
        out.append("1" if limiter.hit(item, "key", cost=cost) else "0")
    print("".join(out), flush=True)
