//! The three strategies of Python's `limits` 5.x over its `MemoryStorage`, modelled as
//! they decide (read from `limits/strategies.py` and `limits/storage/memory.py`, 5.8):
//!
//! - `limits_fixed_window`: a counter that starts at the key's first hit and expires `W`
//!   later (not an epoch-aligned window). Every hit is added before the comparison, so a
//!   denied hit is still counted: a refused request of cost 3 can refuse a later one of
//!   cost 1 in the same window. Passes when the new count is `≤ N`.
//! - `limits_moving_window`: a log of admitted units; a hit of cost `c` is refused when
//!   the `(N − c + 1)`-th newest unit was taken at or after `t − W`, so it counts the
//!   closed interval `[t − W, t]` where the textbook log counts `(t − W, t]`.
//! - `limits_sliding_window_counter`: counters per epoch-aligned window
//!   (`⌊t / W⌋`, `t` on the wall clock: `time.time()`); the estimate is
//!   `prev · (W − t mod W) / W + cur`, and a hit passes when `⌊estimate⌋ + c ≤ N`. Before
//!   the epoch's first window ends (`0 < t < W`) Python's `int()` truncates
//!   `(t − W) / W` to 0, so the "previous" window is the current one and its count is
//!   added twice. [`LimitsSlidingWindowCounter::at`] says where the simulation's t = 0
//!   lies on the wall clock; [`LimitsSlidingWindowCounter::new`] puts it at the epoch.
//!
//! A cost above `N` never passes in any of them. `limits` keeps time as a float of
//! seconds; these keep integer nanoseconds, so they agree with it wherever its floats
//! are exact (see `docs/presets.md`).

use std::collections::VecDeque;

use crate::algorithm::Algorithm;
use crate::rule::Rule;
use crate::time::Nanos;

use super::EpochOffset;
use super::governor::wait_from;

fn ns(t: Nanos) -> u128 {
    u128::from(t.as_u64())
}

/// `limits`' fixed window: starts at the key's first hit, counts denied hits too.
#[derive(Debug, Clone)]
pub struct LimitsFixedWindow {
    rule: Rule,
}

/// Per-key state of [`LimitsFixedWindow`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsWindowState {
    /// When the counter expires (its first hit + `W`); the counter is 0 from then on.
    expires: u128,
    /// Hits counted in the live window, denied ones included.
    count: u64,
    /// The latest instant seen: a backwards clock is treated as this.
    last: Nanos,
}

impl LimitsFixedWindow {
    /// The strategy for `rule`: `N` per `W`.
    pub fn new(rule: Rule) -> LimitsFixedWindow {
        LimitsFixedWindow { rule }
    }

    /// The live count at `now` (0 once the counter has expired).
    fn count(&self, state: &LimitsWindowState, now: Nanos) -> u64 {
        if ns(now.max(state.last)) >= state.expires {
            0
        } else {
            state.count
        }
    }
}

impl Algorithm for LimitsFixedWindow {
    type State = LimitsWindowState;

    fn name(&self) -> &str {
        "limits_fixed_window"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.max_requests()
    }

    fn new_state(&self, now: Nanos) -> LimitsWindowState {
        LimitsWindowState {
            expires: 0,
            count: 0,
            last: now,
        }
    }

    fn try_acquire(&self, state: &mut LimitsWindowState, now: Nanos, cost: u64) -> bool {
        let now = now.max(state.last);
        state.last = now;
        if cost == 0 {
            return true;
        }
        if ns(now) >= state.expires {
            state.count = 0;
            state.expires = ns(now) + ns(self.rule.window());
        }
        state.count = state.count.saturating_add(cost);
        state.count <= self.rule.max_requests()
    }

    fn would_pass(&self, state: &LimitsWindowState, now: Nanos, cost: u64) -> bool {
        cost == 0 || self.count(state, now).saturating_add(cost) <= self.rule.max_requests()
    }

    fn remaining(&self, state: &LimitsWindowState, now: Nanos) -> u64 {
        self.rule
            .max_requests()
            .saturating_sub(self.count(state, now))
    }

    fn retry_after(&self, state: &LimitsWindowState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.rule.max_requests() {
            return None;
        }
        if self.would_pass(state, now, cost) {
            return Some(Nanos::ZERO);
        }
        Some(wait_from(state.expires, now, state.last))
    }

    fn reset_after(&self, state: &LimitsWindowState, now: Nanos) -> Nanos {
        if self.count(state, now) == 0 {
            return Nanos::ZERO;
        }
        wait_from(state.expires, now, state.last)
    }
}

/// `limits`' moving window: a log counting the closed interval `[t − W, t]`.
#[derive(Debug, Clone)]
pub struct LimitsMovingWindow {
    rule: Rule,
}

/// Per-key state of [`LimitsMovingWindow`]: admitted hits, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsLogState {
    /// `(instant, cost)` of each admitted hit still within `W` of the latest instant.
    log: VecDeque<(Nanos, u64)>,
    /// The latest instant seen: a backwards clock is treated as this.
    last: Nanos,
}

impl LimitsMovingWindow {
    /// The strategy for `rule`: `N` per `W`.
    pub fn new(rule: Rule) -> LimitsMovingWindow {
        LimitsMovingWindow { rule }
    }

    /// Whether a hit at `at` is still counted at `now`: `at ≥ now − W`.
    fn counted(&self, at: Nanos, now: Nanos) -> bool {
        ns(at) + ns(self.rule.window()) >= ns(now)
    }

    /// Units counted at `now`.
    fn used(&self, state: &LimitsLogState, now: Nanos) -> u64 {
        let now = now.max(state.last);
        let live = state.log.iter().filter(|(at, _)| self.counted(*at, now));
        live.fold(0u64, |sum, (_, c)| sum.saturating_add(*c))
    }
}

impl Algorithm for LimitsMovingWindow {
    type State = LimitsLogState;

    fn name(&self) -> &str {
        "limits_moving_window"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.max_requests()
    }

    fn new_state(&self, now: Nanos) -> LimitsLogState {
        LimitsLogState {
            log: VecDeque::new(),
            last: now,
        }
    }

    fn try_acquire(&self, state: &mut LimitsLogState, now: Nanos, cost: u64) -> bool {
        let now = now.max(state.last);
        state.last = now;
        while let Some(&(at, _)) = state.log.front() {
            if self.counted(at, now) {
                break;
            }
            state.log.pop_front();
        }
        if cost == 0 {
            return true;
        }
        if !self.would_pass(state, now, cost) {
            return false;
        }
        state.log.push_back((now, cost));
        true
    }

    fn would_pass(&self, state: &LimitsLogState, now: Nanos, cost: u64) -> bool {
        let n = self.rule.max_requests();
        cost == 0 || (cost <= n && self.used(state, now) <= n - cost)
    }

    fn remaining(&self, state: &LimitsLogState, now: Nanos) -> u64 {
        self.rule
            .max_requests()
            .saturating_sub(self.used(state, now))
    }

    fn retry_after(&self, state: &LimitsLogState, now: Nanos, cost: u64) -> Option<Nanos> {
        let n = self.rule.max_requests();
        if cost > n {
            return None;
        }
        let clamped = now.max(state.last);
        let mut used = self.used(state, clamped);
        let live = state
            .log
            .iter()
            .filter(|(at, _)| self.counted(*at, clamped));
        let mut until = 0u128;
        for &(at, c) in live {
            if used <= n - cost {
                break;
            }
            used -= c;
            // It stops counting one nanosecond after `at + W`.
            until = ns(at) + ns(self.rule.window()) + 1;
        }
        Some(wait_from(until, now, state.last))
    }

    fn reset_after(&self, state: &LimitsLogState, now: Nanos) -> Nanos {
        let clamped = now.max(state.last);
        let newest = state
            .log
            .iter()
            .rev()
            .find(|(at, _)| self.counted(*at, clamped));
        newest.map_or(Nanos::ZERO, |&(at, _)| {
            wait_from(ns(at) + ns(self.rule.window()) + 1, now, state.last)
        })
    }
}

/// `limits`' sliding-window counter: epoch-aligned windows, `⌊estimate⌋ + c ≤ N`.
#[derive(Debug, Clone)]
pub struct LimitsSlidingWindowCounter {
    rule: Rule,
    /// How far t = 0 lies past a window's start on the wall clock (`< W`).
    phase: u64,
    /// Whether t = 0 lies in the epoch's very first window `[0, W)`, where Python's
    /// `int()` counts the current window twice.
    first: bool,
}

/// Per-key state of [`LimitsSlidingWindowCounter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsCounterState {
    /// The index `⌊(t + phase) / W⌋` of the window `count` belongs to.
    window: u64,
    /// Admitted cost in that window.
    count: u64,
    /// Admitted cost in the window before it.
    previous: u64,
    /// The latest instant seen: a backwards clock is treated as this.
    last: Nanos,
}

impl LimitsSlidingWindowCounter {
    /// The strategy for `rule`: `N` per `W`, with t = 0 at the epoch (`time.time()` = 0).
    pub fn new(rule: Rule) -> LimitsSlidingWindowCounter {
        LimitsSlidingWindowCounter::at(rule, EpochOffset::ZERO)
    }

    /// [`LimitsSlidingWindowCounter::new`] for a run whose t = 0 is the wall-clock
    /// instant `origin`: the windows are `time.time()`'s, whole multiples of W since
    /// the epoch. (Before 1970 the windows are floored, where Python's `int()` would
    /// truncate towards zero: not modelled.)
    pub fn at(rule: Rule, origin: EpochOffset) -> LimitsSlidingWindowCounter {
        let w = rule.window().as_u64();
        LimitsSlidingWindowCounter {
            rule,
            phase: origin.phase(w),
            first: origin.cell(w) == 0,
        }
    }

    /// `t + phase`: the instant's distance from the start of the window t = 0 lies in.
    fn shifted(&self, t: Nanos) -> u128 {
        ns(t) + u128::from(self.phase)
    }

    /// The window of instant `t`, counted from the one t = 0 lies in (fits a u64 as
    /// envoy's does: `phase < W`).
    fn index(&self, t: Nanos) -> u64 {
        u64::try_from(self.shifted(t) / ns(self.rule.window())).unwrap_or(u64::MAX)
    }

    /// `(window index, current count, previous count)` at `now`.
    fn counts(&self, state: &LimitsCounterState, now: Nanos) -> (u64, u64, u64) {
        let index = self.index(now);
        let (cur, prev) = match index.checked_sub(state.window) {
            Some(0) => (state.count, state.previous),
            Some(1) => (0, state.count),
            _ => (0, 0),
        };
        (index, cur, prev)
    }

    /// `⌊estimate⌋` at `now`: the previous window weighted by what is left of the
    /// current one, plus the current count; before the epoch's first window ends
    /// (`0 < t < W` on the wall clock) the "previous" window is the current one, as
    /// `int()` truncates in Python.
    fn estimate(&self, state: &LimitsCounterState, now: Nanos) -> u64 {
        let now = now.max(state.last);
        let (index, cur, prev) = self.counts(state, now);
        let w = ns(self.rule.window());
        let shifted = self.shifted(now);
        let prev = if self.first && index == 0 && shifted > 0 {
            cur
        } else {
            prev
        };
        let left = w - shifted % w;
        let weighted = u128::from(prev) * left / w;
        u64::try_from(weighted)
            .unwrap_or(u64::MAX)
            .saturating_add(cur)
    }
}

impl Algorithm for LimitsSlidingWindowCounter {
    type State = LimitsCounterState;

    fn name(&self) -> &str {
        "limits_sliding_window_counter"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.max_requests()
    }

    fn new_state(&self, now: Nanos) -> LimitsCounterState {
        LimitsCounterState {
            window: self.index(now),
            count: 0,
            previous: 0,
            last: now,
        }
    }

    fn try_acquire(&self, state: &mut LimitsCounterState, now: Nanos, cost: u64) -> bool {
        let now = now.max(state.last);
        let pass = self.would_pass(state, now, cost);
        let (index, cur, prev) = self.counts(state, now);
        let added = if pass && cost > 0 { cost } else { 0 };
        *state = LimitsCounterState {
            window: index,
            count: cur + added,
            previous: prev,
            last: now,
        };
        pass
    }

    fn would_pass(&self, state: &LimitsCounterState, now: Nanos, cost: u64) -> bool {
        let n = self.rule.max_requests();
        cost == 0 || (cost <= n && self.estimate(state, now) <= n - cost)
    }

    fn remaining(&self, state: &LimitsCounterState, now: Nanos) -> u64 {
        self.rule
            .max_requests()
            .saturating_sub(self.estimate(state, now))
    }

    fn retry_after(&self, state: &LimitsCounterState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.rule.max_requests() {
            return None;
        }
        if cost == 0 {
            return Some(Nanos::ZERO);
        }
        let from = now.max(state.last);
        let limit = self.rule.max_requests() - cost;
        Some(wait_from(
            self.first_at_most(state, from, limit),
            now,
            state.last,
        ))
    }

    fn reset_after(&self, state: &LimitsCounterState, now: Nanos) -> Nanos {
        let from = now.max(state.last);
        wait_from(self.first_at_most(state, from, 0), now, state.last)
    }
}

impl LimitsSlidingWindowCounter {
    /// The first instant at or after `from` where `⌊estimate⌋ ≤ limit` (a hit of cost
    /// `N − limit` passes; at `limit = 0` the quota is full). The estimate only falls as
    /// time passes, within a window and at each boundary, and is 0 two windows on, so a
    /// binary search over the (at most two) windows ahead finds it exactly.
    fn first_at_most(&self, state: &LimitsCounterState, from: Nanos, limit: u64) -> u128 {
        let passes = |t: u64| self.estimate(state, Nanos::new(t)) <= limit;
        if passes(from.as_u64()) {
            return ns(from);
        }
        // The start of the window after next, in simulation time.
        let end =
            (u128::from(self.index(from)) + 2) * ns(self.rule.window()) - u128::from(self.phase);
        let end = u64::try_from(end).unwrap_or(u64::MAX);
        let (mut lo, mut hi) = (from.as_u64(), end);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if passes(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        u128::from(hi)
    }
}
