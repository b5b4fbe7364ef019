//! Leaky bucket as a meter: each request pours water in, the bucket drains steadily.

use super::token_bucket::elapsed_units;
use super::{Algorithm, BucketState, div, div_ceil, wait_until};
use crate::rule::Rule;
use crate::time::Nanos;

/// The leaky bucket *as a meter* (a policer): each request adds its cost in water, the
/// bucket drains at `max_requests` per `window`, and a request that would overflow
/// `burst` is rejected.
///
/// It is the token bucket's mirror image (water = capacity − tokens), so for the same
/// rule it makes identical decisions; the test suite checks that on random streams. The
/// *queue* form (a shaper that delays instead of rejecting) needs a worker draining a
/// bounded queue and does not fit an allow/deny API.
#[derive(Debug, Clone)]
pub struct LeakyBucket {
    rule: Rule,
    unit: u128,
    cap: u128,
}

impl LeakyBucket {
    /// A leaky bucket for `rule` (capacity `rule.burst()`).
    pub fn new(rule: Rule) -> LeakyBucket {
        let unit = u128::from(rule.window().as_u64());
        LeakyBucket {
            rule,
            unit,
            cap: unit * u128::from(rule.burst()),
        }
    }

    /// The water held at `now` (drained, floored at 0) and the clamped instant.
    fn water(&self, s: &BucketState, now: Nanos) -> (u128, Nanos) {
        let (drained, now) = elapsed_units(&self.rule, s, now);
        (s.level().saturating_sub(drained), now)
    }
}

impl Algorithm for LeakyBucket {
    type State = BucketState;

    fn name(&self) -> &str {
        "leaky_bucket"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.burst()
    }

    fn new_state(&self, now: Nanos) -> BucketState {
        BucketState::new(0, now)
    }

    fn try_acquire(&self, state: &mut BucketState, now: Nanos, cost: u64) -> bool {
        let (water, now) = self.water(state, now);
        let pour = u128::from(cost) * self.unit;
        let allowed = pour <= self.cap - water;
        state.set_level(if allowed { water + pour } else { water });
        state.last = now;
        allowed
    }

    fn remaining(&self, state: &BucketState, now: Nanos) -> u64 {
        let (water, _) = self.water(state, now);
        div(self.cap - water, self.unit) as u64
    }

    fn retry_after(&self, state: &BucketState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.rule.burst() {
            return None;
        }
        let (water, clamped) = self.water(state, now);
        let pour = u128::from(cost) * self.unit;
        // `pour − room`, never `water + pour − cap`: the sum can pass `u128::MAX`.
        let overflow = pour.saturating_sub(self.cap - water);
        if overflow == 0 {
            return Some(Nanos::ZERO);
        }
        let wait = div_ceil(overflow, u128::from(self.rule.max_requests()));
        Some(wait_until(u128::from(clamped.as_u64()) + wait, now))
    }

    fn reset_after(&self, state: &BucketState, now: Nanos) -> Nanos {
        let (water, clamped) = self.water(state, now);
        let wait = div_ceil(water, u128::from(self.rule.max_requests()));
        wait_until(u128::from(clamped.as_u64()) + wait, now)
    }
}
