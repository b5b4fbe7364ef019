//! Leaky bucket as a meter: each request pours water in, the bucket drains steadily.

use super::bucket::{Bucket, BucketState};
use super::{Algorithm, Outcome, Packed, answer, div};
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
pub struct LeakyBucket(Bucket);

impl LeakyBucket {
    /// A leaky bucket for `rule` (capacity `rule.burst()`).
    pub fn new(rule: Rule) -> LeakyBucket {
        LeakyBucket(Bucket::new(rule))
    }

    /// The water held at `now` (drained, floored at 0) and the clamped instant.
    fn water(&self, s: &BucketState, now: Nanos) -> (u128, Nanos) {
        let (drained, now) = self.0.elapsed_units(s, now);
        (s.level().saturating_sub(drained), now)
    }

    /// Pours `cost` at `now` when it fits; otherwise brings the water up to date and
    /// answers the units that would overflow and the clamped instant they drain from.
    fn pour(&self, state: &mut BucketState, now: Nanos, cost: u64) -> Result<(), (u128, Nanos)> {
        let (water, now) = self.water(state, now);
        let pour = u128::from(cost) * self.0.unit;
        let room = self.0.cap - water;
        state.last = now;
        if pour <= room {
            state.set_level(water + pour);
            return Ok(());
        }
        state.set_level(water);
        // `pour − room`, never `water + pour − cap`: the sum can pass `u128::MAX`.
        Err((pour - room, now))
    }
}

impl LeakyBucket {
    /// The most admitted (by cost) in any window of length `W` under `rule`:
    /// `B + N − 1` for windows of at least `N` ns (see the bucket module for the exact
    /// form).
    pub fn worst_case(rule: &Rule) -> u64 {
        super::saturate(super::bucket::worst_case(rule))
    }
}

impl Algorithm for LeakyBucket {
    type State = BucketState;

    fn name(&self) -> &str {
        "leaky_bucket"
    }

    fn rule(&self) -> &Rule {
        &self.0.rule
    }

    fn capacity(&self) -> u64 {
        self.0.rule.burst()
    }

    fn new_state(&self, now: Nanos) -> BucketState {
        BucketState::new(0, now)
    }

    fn try_acquire(&self, state: &mut BucketState, now: Nanos, cost: u64) -> bool {
        self.pour(state, now, cost).is_ok()
    }

    #[inline]
    fn acquire_or_wait(
        &self,
        state: &mut BucketState,
        now: Nanos,
        cost: u64,
    ) -> (Outcome, Option<Nanos>) {
        let poured = self.pour(state, now, cost);
        answer(poured, cost, self.0.rule.burst(), |(overflow, from)| {
            self.0.wait_for(overflow, from, now)
        })
    }

    fn remaining(&self, state: &BucketState, now: Nanos) -> u64 {
        let (water, _) = self.water(state, now);
        div(self.0.cap - water, self.0.unit) as u64
    }

    /// Idle when empty: `remaining` is `burst` exactly when no water is left, which
    /// this tells without dividing.
    fn is_idle(&self, state: &BucketState, now: Nanos) -> bool {
        self.water(state, now).0 == 0
    }

    fn retry_after(&self, state: &BucketState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.0.rule.burst() {
            return None;
        }
        let (water, clamped) = self.water(state, now);
        let pour = u128::from(cost) * self.0.unit;
        // `pour − room`, never `water + pour − cap`: the sum can pass `u128::MAX`.
        let overflow = pour.saturating_sub(self.0.cap - water);
        if overflow == 0 {
            return Some(Nanos::ZERO);
        }
        Some(self.0.wait_for(overflow, clamped, now))
    }

    fn packs(&self) -> bool {
        self.0.packs()
    }

    fn pack(&self, state: &BucketState) -> Packed {
        state.pack()
    }

    fn unpack(&self, packed: Packed) -> BucketState {
        BucketState::unpack(packed)
    }

    fn reset_after(&self, state: &BucketState, now: Nanos) -> Nanos {
        let (water, clamped) = self.water(state, now);
        self.0.wait_for(water, clamped, now)
    }
}
