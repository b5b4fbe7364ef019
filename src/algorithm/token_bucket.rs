//! Token bucket: `burst` tokens, refilled continuously at `max_requests / window`.

use super::{Algorithm, Wide, div, div_ceil, wait_until};
use crate::rule::Rule;
use crate::time::Nanos;

/// A bucket of `burst` tokens refilled continuously at `max_requests` per `window`.
/// Allows a burst up to capacity, then the sustained rate. O(1) time and space.
///
/// The level is kept in *token·ns units*: one token is `window` units and the refill
/// adds `max_requests` units per nanosecond, so every refill is an exact integer.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rule: Rule,
    /// One token, in units (= window in ns).
    unit: u128,
    /// Capacity in units (= burst tokens).
    cap: u128,
}

/// Per-key state of the token and leaky buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketState {
    /// Tokens available (token bucket) or water held (leaky bucket), in units.
    level: Wide,
    /// The latest instant the level was brought up to date.
    pub(super) last: Nanos,
}

impl BucketState {
    pub(super) fn new(level: u128, last: Nanos) -> BucketState {
        BucketState {
            level: Wide::new(level),
            last,
        }
    }

    /// Tokens (token bucket) or water (leaky bucket), in units.
    pub(super) fn level(&self) -> u128 {
        self.level.get()
    }

    pub(super) fn set_level(&mut self, level: u128) {
        self.level = Wide::new(level);
    }

    /// The instant the level was last brought up to date.
    pub fn last(&self) -> Nanos {
        self.last
    }
}

/// Units per nanosecond of refill or leak (`max_requests`), and the latest-instant
/// clamp that makes a backwards clock a no-op: shared by both buckets.
pub(super) fn elapsed_units(rule: &Rule, s: &BucketState, now: Nanos) -> (u128, Nanos) {
    let now = now.max(s.last);
    let elapsed = u128::from((now - s.last).as_u64());
    (elapsed * u128::from(rule.max_requests()), now)
}

impl TokenBucket {
    /// A token bucket for `rule` (capacity `rule.burst()`).
    pub fn new(rule: Rule) -> TokenBucket {
        let unit = u128::from(rule.window().as_u64());
        TokenBucket {
            rule,
            unit,
            cap: unit * u128::from(rule.burst()),
        }
    }

    /// The level at `now` (refilled, capped) and the clamped instant.
    fn level(&self, s: &BucketState, now: Nanos) -> (u128, Nanos) {
        let (refill, now) = elapsed_units(&self.rule, s, now);
        (s.level().saturating_add(refill).min(self.cap), now)
    }
}

impl Algorithm for TokenBucket {
    type State = BucketState;

    fn name(&self) -> &str {
        "token_bucket"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.burst()
    }

    fn new_state(&self, now: Nanos) -> BucketState {
        BucketState::new(self.cap, now)
    }

    fn try_acquire(&self, state: &mut BucketState, now: Nanos, cost: u64) -> bool {
        let (level, now) = self.level(state, now);
        let need = u128::from(cost) * self.unit;
        let allowed = need <= level;
        state.set_level(if allowed { level - need } else { level });
        state.last = now;
        allowed
    }

    fn remaining(&self, state: &BucketState, now: Nanos) -> u64 {
        let (level, _) = self.level(state, now);
        // level <= cap = burst * unit, so the quotient fits in u64.
        div(level, self.unit) as u64
    }

    fn retry_after(&self, state: &BucketState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.rule.burst() {
            return None;
        }
        let (level, clamped) = self.level(state, now);
        let need = u128::from(cost) * self.unit;
        if need <= level {
            return Some(Nanos::ZERO);
        }
        let wait = div_ceil(need - level, u128::from(self.rule.max_requests()));
        Some(wait_until(u128::from(clamped.as_u64()) + wait, now))
    }

    fn reset_after(&self, state: &BucketState, now: Nanos) -> Nanos {
        let (level, clamped) = self.level(state, now);
        let wait = div_ceil(self.cap - level, u128::from(self.rule.max_requests()));
        wait_until(u128::from(clamped.as_u64()) + wait, now)
    }
}
