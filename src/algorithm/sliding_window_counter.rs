//! Sliding window counter: two counters, the previous window weighted by overlap.

use super::{Algorithm, Outcome, answer, div, wait_until};
use crate::rule::Rule;
use crate::time::Nanos;

/// Approximates the sliding log with two counters:
/// `estimate = prev · (1 − elapsed/W) + count`, and admits when
/// `estimate + cost ≤ max`. O(1) memory; it assumes the previous window was uniform, so
/// it errs either way (Cloudflare measured 0.003% of real requests misjudged), and in
/// the worst case admits `2 · max − 1` in one window length.
///
/// Exact arithmetic: multiplying through by `W` gives
/// `prev · (W − e) + (count + cost) · W ≤ max · W` with `e` the nanoseconds elapsed in
/// the current window, all in `u128`.
#[derive(Debug, Clone)]
pub struct SlidingWindowCounter {
    rule: Rule,
}

/// Per-key state of the sliding window counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterState {
    /// The latest instant seen; its window (`last / W`) is the current one.
    last: Nanos,
    count: u64,
    prev: u64,
}

/// The state as seen at some instant: counts rolled into that instant's window.
#[derive(Debug, Clone, Copy)]
struct View {
    window: u64,
    /// Nanoseconds elapsed in `window`.
    elapsed: u64,
    prev: u64,
    count: u64,
    now: Nanos,
}

impl SlidingWindowCounter {
    /// A sliding window counter for `rule`.
    pub fn new(rule: Rule) -> SlidingWindowCounter {
        SlidingWindowCounter { rule }
    }

    fn w(&self) -> u64 {
        self.rule.window().as_u64()
    }

    fn view(&self, s: &CounterState, now: Nanos) -> View {
        let now = now.max(s.last);
        let w = self.w();
        // `now`'s window and the nanoseconds elapsed in it, `(now / W, now % W)`, with
        // one division instead of two when `now` is in the state's window or the next
        // (nearly always: a state older than that is stale anyway).
        let current = s.last.as_u64() / w;
        let since = now.as_u64() - current * w; // current · W <= last <= now
        let (window, elapsed) = if since < w {
            (current, since)
        } else if since - w < w {
            (current + 1, since - w)
        } else {
            (now.as_u64() / w, now.as_u64() % w)
        };
        let (prev, count) = match window - current {
            0 => (s.prev, s.count),
            1 => (s.count, 0), // the current window became the previous one
            _ => (0, 0),       // skipped a whole window: both are stale
        };
        View {
            window,
            elapsed,
            prev,
            count,
            now,
        }
    }

    /// `prev · (W − e) + count · W`: the estimate scaled by `W`.
    fn weighted(&self, prev: u64, count: u64, elapsed: u64) -> u128 {
        let w = u128::from(self.w());
        (u128::from(prev) * (w - u128::from(elapsed))).saturating_add(u128::from(count) * w)
    }

    fn fits(&self, v: &View, cost: u64) -> bool {
        let Some(after) = v.count.checked_add(cost) else {
            return false;
        };
        let limit = u128::from(self.rule.max_requests()) * u128::from(self.w());
        self.weighted(v.prev, after, v.elapsed) <= limit
    }

    /// The least elapsed time within a window holding `prev` and `count` at which `cost`
    /// more fits, if any: `prev · (W − e) ≤ (max − count − cost) · W`.
    fn earliest_in_window(&self, prev: u64, count: u64, cost: u64) -> Option<u64> {
        let headroom = self
            .rule
            .max_requests()
            .checked_sub(count)?
            .checked_sub(cost)?;
        if prev == 0 {
            return Some(0);
        }
        let w = u128::from(self.w());
        let shrink = div(u128::from(headroom) * w, u128::from(prev)); // W − e must be ≤ this
        let earliest = w.saturating_sub(shrink);
        (earliest < w).then_some(earliest as u64)
    }

    /// Counts `cost` at `now` when it fits; otherwise rolls the state to `now`'s window
    /// and answers the view the request was refused on.
    fn count(&self, state: &mut CounterState, now: Nanos, cost: u64) -> Result<(), View> {
        let v = self.view(state, now);
        let allowed = self.fits(&v, cost);
        *state = CounterState {
            last: v.now,
            count: if allowed { v.count + cost } else { v.count },
            prev: v.prev,
        };
        if allowed { Ok(()) } else { Err(v) }
    }

    /// The wait from `now` until `cost` (at most `max`) fits, on a view it does not fit
    /// now: in this window (prev decays), the next (today's count decays), or the one
    /// after (both counts gone, where it always fits).
    fn wait(&self, v: &View, cost: u64, now: Nanos) -> Nanos {
        let current = u128::from(v.window);
        let candidates = [
            (current, v.prev, v.count),
            (current + 1, v.count, 0),
            (current + 2, 0, 0),
        ];
        let w = u128::from(self.w());
        for (window, prev, count) in candidates {
            if let Some(e) = self.earliest_in_window(prev, count, cost) {
                let e = if window == current {
                    e.max(v.elapsed)
                } else {
                    e
                };
                return wait_until(window * w + u128::from(e), now);
            }
        }
        Nanos::MAX // not reached: the third window always fits
    }
}

impl SlidingWindowCounter {
    /// The most admitted (by cost) in any window of length `W` under `rule`: `N` at a
    /// window's last instant, then `N·e/W` more `e ≤ W − 2` ns into the next:
    /// `max(N, 2N − ⌈2N/W⌉)`, which is `2N − 1` for windows of at least `2N` ns.
    pub fn worst_case(rule: &Rule) -> u64 {
        let n = u128::from(rule.max_requests());
        let w = u128::from(rule.window().as_u64()).max(1);
        super::saturate(n.max(2 * n - (2 * n).div_ceil(w)))
    }
}

impl Algorithm for SlidingWindowCounter {
    type State = CounterState;

    fn name(&self) -> &str {
        "sliding_window_counter"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.max_requests()
    }

    fn new_state(&self, now: Nanos) -> CounterState {
        CounterState {
            last: now,
            count: 0,
            prev: 0,
        }
    }

    fn try_acquire(&self, state: &mut CounterState, now: Nanos, cost: u64) -> bool {
        self.count(state, now, cost).is_ok()
    }

    #[inline]
    fn acquire_or_wait(
        &self,
        state: &mut CounterState,
        now: Nanos,
        cost: u64,
    ) -> (Outcome, Option<Nanos>) {
        let counted = self.count(state, now, cost);
        answer(counted, cost, self.rule.max_requests(), |v| {
            self.wait(&v, cost, now)
        })
    }

    fn remaining(&self, state: &CounterState, now: Nanos) -> u64 {
        let v = self.view(state, now);
        let w = u128::from(self.w());
        let limit = u128::from(self.rule.max_requests()) * w;
        let left = limit.saturating_sub(self.weighted(v.prev, v.count, v.elapsed));
        div(left, w) as u64
    }

    /// Idle when both windows in view are empty: `remaining` is `max_requests` exactly
    /// when the weighted count is 0 (the previous window's weight, `W − elapsed`, is
    /// never 0), which this tells without multiplying or dividing.
    fn is_idle(&self, state: &CounterState, now: Nanos) -> bool {
        let v = self.view(state, now);
        v.prev == 0 && v.count == 0
    }

    fn retry_after(&self, state: &CounterState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.rule.max_requests() {
            return None;
        }
        let v = self.view(state, now);
        if self.fits(&v, cost) {
            return Some(Nanos::ZERO);
        }
        Some(self.wait(&v, cost, now))
    }

    fn reset_after(&self, state: &CounterState, now: Nanos) -> Nanos {
        let v = self.view(state, now);
        let w = u128::from(self.w());
        let empty_from = if v.count > 0 {
            2
        } else if v.prev > 0 {
            1
        } else {
            return Nanos::ZERO;
        };
        wait_until((u128::from(v.window) + empty_from) * w, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The view's window and elapsed time are `now / W` and `now % W` (of `now` clamped
    /// to the state's instant), however far apart the state's instant and `now` are:
    /// the same window, the next, later ones, and the ends of the clock's range.
    #[test]
    fn the_view_finds_the_window_of_now_exactly() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        // xorshift64, deterministic; `below(n)` is uniform enough in 0..n.
        let mut below = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if n == u64::MAX { x } else { x % (n + 1) }
        };
        for i in 0..100_000u64 {
            let w = 1 + match i % 3 {
                0 => below(9),
                1 => below(10_000_000_000),
                _ => below(u64::MAX - 1),
            };
            let last = match i % 4 {
                0 => u64::MAX - below(w.min(1_000)),
                _ => below(u64::MAX / 2),
            };
            let now = match i % 5 {
                0 => below(u64::MAX),
                1 => last.saturating_sub(below(w)),
                _ => last.saturating_add(below(w.saturating_mul(3))),
            };
            let algo = SlidingWindowCounter::new(Rule::new(5, Nanos::new(w)).unwrap());
            let state = CounterState {
                last: Nanos::new(last),
                count: 3,
                prev: 4,
            };
            let v = algo.view(&state, Nanos::new(now));
            let at = now.max(last);
            assert_eq!(
                (v.window, v.elapsed),
                (at / w, at % w),
                "W {w}, last {last}, now {now}"
            );
        }
    }
}
