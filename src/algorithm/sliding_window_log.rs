//! Sliding window log: the exact policy, a log of admitted requests.

use std::collections::VecDeque;

use super::{Algorithm, Outcome, answer, wait_until};
use crate::rule::Rule;
use crate::time::Nanos;

/// Exact: remembers each *admitted* request and counts those in `(now − W, now]`; an
/// entry stops counting exactly `W` after it was admitted.
///
/// Only admitted requests are logged (a flood of denials cannot grow it) and requests
/// admitted at the same instant share one entry, so a key holds at most
/// `max_requests` entries. Expiry is amortised O(1) per call.
#[derive(Debug, Clone)]
pub struct SlidingWindowLog {
    rule: Rule,
}

/// Per-key state of the sliding log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogState {
    /// `(admitted at, cost)`, oldest first, instants strictly increasing.
    entries: VecDeque<(Nanos, u64)>,
    /// Sum of the costs in `entries`.
    total: u64,
    /// The latest instant seen: a backwards clock is treated as this.
    last: Nanos,
}

impl LogState {
    /// Entries currently held (for memory accounting).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is logged.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl SlidingWindowLog {
    /// A sliding log for `rule`.
    pub fn new(rule: Rule) -> SlidingWindowLog {
        SlidingWindowLog { rule }
    }

    /// The instant an entry admitted at `at` stops counting.
    fn expiry(&self, at: Nanos) -> u128 {
        u128::from(at.as_u64()) + u128::from(self.rule.window().as_u64())
    }

    /// The index of the first entry still live at `now` (those before it have
    /// expired) and the total cost of the live entries.
    fn live(&self, s: &LogState, now: Nanos) -> (usize, u64) {
        let now = u128::from(now.max(s.last).as_u64());
        // The common case: the last acquire already dropped every expired entry.
        if s.entries
            .front()
            .is_none_or(|&(at, _)| self.expiry(at) > now)
        {
            return (0, s.total);
        }
        let expired = s.entries.partition_point(|&(at, _)| self.expiry(at) <= now);
        let gone: u64 = s.entries.range(..expired).map(|&(_, c)| c).sum();
        (expired, s.total - gone)
    }

    /// Drops the entries expired at `now`, then logs `cost` when it fits; a refused
    /// request changes nothing else (`Err`).
    fn log(&self, state: &mut LogState, now: Nanos, cost: u64) -> Result<(), ()> {
        let now = now.max(state.last);
        state.last = now;
        let cutoff = u128::from(now.as_u64());
        while let Some(&(at, c)) = state.entries.front() {
            if self.expiry(at) > cutoff {
                break;
            }
            state.entries.pop_front();
            state.total -= c;
        }
        if cost > self.rule.max_requests() - state.total {
            return Err(());
        }
        if cost > 0 {
            match state.entries.back_mut() {
                Some((at, c)) if *at == now => *c += cost,
                _ => state.entries.push_back((now, cost)),
            }
            state.total += cost;
        }
        Ok(())
    }

    /// The wait from `now` until enough of the oldest `live` entries (holding `total`)
    /// have expired to make room for `cost` (at most `max`), on a log it does not fit.
    fn wait<'a>(
        &self,
        live: impl Iterator<Item = &'a (Nanos, u64)>,
        total: u64,
        cost: u64,
        now: Nanos,
    ) -> Nanos {
        let mut must_free = total - (self.rule.max_requests() - cost);
        for &(at, c) in live {
            if c >= must_free {
                return wait_until(self.expiry(at), now);
            }
            must_free -= c;
        }
        // Not reached: the live entries hold `total` >= `must_free`. Saying "a long time"
        // is the safe answer should that invariant ever break.
        Nanos::MAX
    }
}

impl SlidingWindowLog {
    /// The most admitted (by cost) in any window of length `W` under `rule`: exactly
    /// `N`, the limit itself: the log is exact by construction.
    pub fn worst_case(rule: &Rule) -> u64 {
        rule.max_requests()
    }
}

impl Algorithm for SlidingWindowLog {
    type State = LogState;

    fn name(&self) -> &str {
        "sliding_window_log"
    }

    #[inline]
    fn prefetch_state(&self, state: &LogState) {
        // Deciding reads the oldest entry (has it expired?) and the newest (the idle
        // test; a new entry goes after it): on a short log, often one cache line.
        if let (Some(oldest), Some(newest)) = (state.entries.front(), state.entries.back()) {
            crate::prefetch::prefetch(oldest);
            crate::prefetch::prefetch(newest);
        }
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.max_requests()
    }

    fn new_state(&self, now: Nanos) -> LogState {
        LogState {
            entries: VecDeque::new(),
            total: 0,
            last: now,
        }
    }

    fn renew(&self, state: &mut LogState, now: Nanos) {
        state.entries.clear();
        state.total = 0;
        state.last = now;
    }

    fn try_acquire(&self, state: &mut LogState, now: Nanos, cost: u64) -> bool {
        self.log(state, now, cost).is_ok()
    }

    /// The log just dropped its expired entries, so every entry left is live.
    #[inline]
    fn acquire_or_wait(
        &self,
        state: &mut LogState,
        now: Nanos,
        cost: u64,
    ) -> (Outcome, Option<Nanos>) {
        let logged = self.log(state, now, cost);
        answer(logged, cost, self.rule.max_requests(), |()| {
            self.wait(state.entries.iter(), state.total, cost, now)
        })
    }

    /// Counts the live entries instead of copying a log of up to `max_requests`.
    fn would_pass(&self, state: &LogState, now: Nanos, cost: u64) -> bool {
        cost <= self.rule.max_requests() - self.live(state, now).1
    }

    fn remaining(&self, state: &LogState, now: Nanos) -> u64 {
        self.rule.max_requests() - self.live(state, now).1
    }

    /// Idle once the newest entry has expired: instants increase and every logged cost
    /// is positive, so then nothing counts, as in a fresh log. O(1), where `remaining`
    /// may search the log; the idle-key sweep asks this of every key it holds.
    fn is_idle(&self, state: &LogState, now: Nanos) -> bool {
        let now = u128::from(now.max(state.last).as_u64());
        state
            .entries
            .back()
            .is_none_or(|&(at, _)| self.expiry(at) <= now)
    }

    fn retry_after(&self, state: &LogState, now: Nanos, cost: u64) -> Option<Nanos> {
        let max = self.rule.max_requests();
        if cost > max {
            return None;
        }
        let (first, total) = self.live(state, now);
        if cost <= max - total {
            return Some(Nanos::ZERO);
        }
        Some(self.wait(state.entries.range(first..), total, cost, now))
    }

    fn reset_after(&self, state: &LogState, now: Nanos) -> Nanos {
        let (first, _) = self.live(state, now);
        match state.entries.range(first..).next_back() {
            Some(&(at, _)) => wait_until(self.expiry(at), now),
            None => Nanos::ZERO,
        }
    }
}
