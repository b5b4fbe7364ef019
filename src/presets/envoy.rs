//! `envoy`: the envoyproxy/ratelimit service's fixed window, as its Redis/Memcached
//! cache decides (`fixed_cache_impl` and its base limiter).
//!
//! The window is the descriptor's unit (second, minute, hour, day) aligned to the Unix
//! epoch: the cache key holds `now / unit · unit`, with `now` in whole seconds. Every
//! request is counted: the hits are added to the key *before* the comparison, and the
//! request is over the limit when the count after adding exceeds `requests_per_unit`.
//! So a refused request still uses up the window: once refused, everything is refused
//! until the window ends, which is also why the service's optional over-limit cache
//! changes no decision. The near-limit threshold (80 %) only feeds statistics.
//!
//! `requests_per_unit` is `N`, the unit is `W`. The service's units are second, minute,
//! hour, day and (since late 2024) week, month (30 days) and year (365 days), each a
//! fixed number of seconds (`UnitToDivider`); no other window can be configured, and a
//! scenario that names `envoy` with another window is refused ([`unit_of`]). Run through
//! the library directly, other windows still run as the same epoch-aligned window of W.
//!
//! The epoch is the wall clock's: [`EnvoyRateLimit::at`] takes where the simulation's
//! t = 0 lies on it ([`EpochOffset`]), so on a trace of absolute times the windows fall
//! on whole units of Unix time, not on the trace's first request.
//!
//! The near-limit ratio (80 %) decides nothing: it only sorts allowed hits into the
//! `near_limit` statistic, which no client sees.

use crate::algorithm::Algorithm;
use crate::rule::Rule;
use crate::time::Nanos;

use super::EpochOffset;
use super::governor::wait_from;

/// The service's units, as `(name, seconds)`: `UnitToDivider` in its `src/utils`.
const UNITS: [(&str, u64); 7] = [
    ("second", 1),
    ("minute", 60),
    ("hour", 3_600),
    ("day", 86_400),
    ("week", 604_800),
    ("month", 2_592_000),
    ("year", 31_536_000),
];

/// The ratelimit service's `unit` for a window of `window`, `None` when no unit is that
/// long (the service's config parser knows no other).
pub fn unit_of(window: Nanos) -> Option<&'static str> {
    let w = window.as_u64();
    UNITS
        .iter()
        .find(|(_, secs)| u128::from(*secs) * 1_000_000_000 == u128::from(w))
        .map(|(name, _)| *name)
}

/// Why `envoy` cannot stand for a rule with window `window`, `None` when it can.
pub(crate) fn refusal(window: Nanos) -> Option<String> {
    unit_of(window).is_none().then(|| {
        format!(
            "envoy: the ratelimit service cannot limit per {window}: its only units are \
             second, minute, hour, day, week, month (30d) and year (365d), so the window \
             must be 1s, 1m, 1h, 1d, 7d, 30d or 365d"
        )
    })
}

/// envoyproxy/ratelimit's epoch-aligned fixed window that counts refused requests.
#[derive(Debug, Clone)]
pub struct EnvoyRateLimit {
    rule: Rule,
    /// How far t = 0 lies past a window's start on the wall clock (`< W`).
    phase: u64,
}

/// Per-key state of [`EnvoyRateLimit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvoyState {
    /// The window `⌊(t + phase) / W⌋` that `count` belongs to.
    window: u64,
    /// Hits added in that window, refused ones included.
    count: u64,
    /// The latest instant seen: a backwards clock is treated as this.
    last: Nanos,
}

impl EnvoyRateLimit {
    /// The service's limit for `rule`: `requests_per_unit = N`, unit `W`, with t = 0 on
    /// the epoch's grid (a whole unit of Unix time).
    pub fn new(rule: Rule) -> EnvoyRateLimit {
        EnvoyRateLimit::at(rule, EpochOffset::ZERO)
    }

    /// [`EnvoyRateLimit::new`] for a run whose t = 0 is the wall-clock instant
    /// `origin`: windows start where `now / unit · unit` does in Unix time.
    pub fn at(rule: Rule, origin: EpochOffset) -> EnvoyRateLimit {
        let phase = origin.phase(rule.window().as_u64());
        EnvoyRateLimit { rule, phase }
    }

    /// The window of instant `t`, counted from the one t = 0 lies in. Fits a u64:
    /// `phase < W`, so the quotient is at most `u64::MAX` for any W ≥ 2 (and phase is
    /// 0 for W = 1).
    fn index(&self, t: Nanos) -> u64 {
        let shifted = u128::from(t.as_u64()) + u128::from(self.phase);
        u64::try_from(shifted / u128::from(self.rule.window().as_u64())).unwrap_or(u64::MAX)
    }

    /// The count at `now` (0 in a later window than the state's).
    fn count(&self, state: &EnvoyState, now: Nanos) -> u64 {
        if self.index(now.max(state.last)) == state.window {
            state.count
        } else {
            0
        }
    }

    /// The start of the window after the state's, in simulation time (past t = 0:
    /// every window but the first starts after it).
    fn next_window(&self, state: &EnvoyState) -> u128 {
        (u128::from(state.window) + 1) * u128::from(self.rule.window().as_u64())
            - u128::from(self.phase)
    }
}

impl Algorithm for EnvoyRateLimit {
    type State = EnvoyState;

    fn name(&self) -> &str {
        "envoy"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.max_requests()
    }

    fn new_state(&self, now: Nanos) -> EnvoyState {
        EnvoyState {
            window: self.index(now),
            count: 0,
            last: now,
        }
    }

    fn try_acquire(&self, state: &mut EnvoyState, now: Nanos, cost: u64) -> bool {
        let now = now.max(state.last);
        let count = self.count(state, now);
        *state = EnvoyState {
            window: self.index(now),
            count: count.saturating_add(cost),
            last: now,
        };
        state.count <= self.rule.max_requests()
    }

    fn would_pass(&self, state: &EnvoyState, now: Nanos, cost: u64) -> bool {
        self.count(state, now).saturating_add(cost) <= self.rule.max_requests()
    }

    fn remaining(&self, state: &EnvoyState, now: Nanos) -> u64 {
        self.rule
            .max_requests()
            .saturating_sub(self.count(state, now))
    }

    fn retry_after(&self, state: &EnvoyState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.rule.max_requests() {
            return None;
        }
        if self.would_pass(state, now, cost) {
            return Some(Nanos::ZERO);
        }
        Some(wait_from(self.next_window(state), now, state.last))
    }

    fn reset_after(&self, state: &EnvoyState, now: Nanos) -> Nanos {
        if self.count(state, now) == 0 {
            return Nanos::ZERO;
        }
        wait_from(self.next_window(state), now, state.last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `requests_per_unit: 3`, `unit: second`: windows on whole seconds, refused
    /// requests counted.
    #[test]
    fn windows_are_aligned_to_the_epoch_and_refused_requests_are_counted() {
        let rule = Rule::new(3, Nanos::from_secs(1)).unwrap();
        let e = EnvoyRateLimit::new(rule);
        let mut s = e.new_state(Nanos::ZERO);
        let at = |ms: u64| Nanos::from_millis(ms);
        // A window starting at 900 ms (first request) still ends at 1 s.
        assert!(e.try_acquire(&mut s, at(900), 2));
        assert!(!e.try_acquire(&mut s, at(950), 2), "2 + 2 > 3");
        assert!(
            !e.try_acquire(&mut s, at(960), 1),
            "the refused 2 were counted"
        );
        assert_eq!(e.retry_after(&s, at(960), 1), Some(at(40)));
        assert!(e.try_acquire(&mut s, at(1_000), 3), "a new window at 1 s");
        assert_eq!(e.retry_after(&s, at(1_000), 4), None);
        assert_eq!(e.reset_after(&s, at(1_500)), at(500));
    }
}
