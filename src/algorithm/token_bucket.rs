//! Token bucket: `burst` tokens, refilled continuously at `max_requests / window`.

use super::bucket::{Bucket, BucketState};
use super::{Algorithm, Outcome, Packed, answer, div};
use crate::rule::Rule;
use crate::time::Nanos;

/// A bucket of `burst` tokens refilled continuously at `max_requests` per `window`.
/// Allows a burst up to capacity, then the sustained rate. O(1) time and space.
///
/// The level is kept in *token·ns units* (see [`BucketState`]): one token is `window`
/// units and the refill adds `max_requests` units per nanosecond, so every refill is an
/// exact integer.
#[derive(Debug, Clone)]
pub struct TokenBucket(Bucket);

impl TokenBucket {
    /// A token bucket for `rule` (capacity `rule.burst()`).
    pub fn new(rule: Rule) -> TokenBucket {
        TokenBucket(Bucket::new(rule))
    }

    /// The level at `now` (refilled, capped) and the clamped instant.
    fn level(&self, s: &BucketState, now: Nanos) -> (u128, Nanos) {
        let (refill, now) = self.0.elapsed_units(s, now);
        (s.level().saturating_add(refill).min(self.0.cap), now)
    }

    /// Takes `cost` tokens at `now` when the bucket holds them; otherwise brings the
    /// level up to date and answers the units missing and the clamped instant they
    /// refill from.
    fn take(&self, state: &mut BucketState, now: Nanos, cost: u64) -> Result<(), (u128, Nanos)> {
        let (level, now) = self.level(state, now);
        let need = u128::from(cost) * self.0.unit;
        state.last = now;
        if need <= level {
            state.set_level(level - need);
            return Ok(());
        }
        state.set_level(level);
        Err((need - level, now))
    }
}

impl TokenBucket {
    /// The most admitted (by cost) in any window of length `W` under `rule`:
    /// `B + N − 1` for windows of at least `N` ns (see the bucket module for the exact
    /// form).
    pub fn worst_case(rule: &Rule) -> u64 {
        super::saturate(super::bucket::worst_case(rule))
    }
}

impl Algorithm for TokenBucket {
    type State = BucketState;

    fn name(&self) -> &str {
        "token_bucket"
    }

    fn rule(&self) -> &Rule {
        &self.0.rule
    }

    fn capacity(&self) -> u64 {
        self.0.rule.burst()
    }

    fn new_state(&self, now: Nanos) -> BucketState {
        BucketState::new(self.0.cap, now)
    }

    fn try_acquire(&self, state: &mut BucketState, now: Nanos, cost: u64) -> bool {
        self.take(state, now, cost).is_ok()
    }

    #[inline]
    fn acquire_or_wait(
        &self,
        state: &mut BucketState,
        now: Nanos,
        cost: u64,
    ) -> (Outcome, Option<Nanos>) {
        let taken = self.take(state, now, cost);
        answer(taken, cost, self.0.rule.burst(), |(missing, from)| {
            self.0.wait_for(missing, from, now)
        })
    }

    fn remaining(&self, state: &BucketState, now: Nanos) -> u64 {
        let (level, _) = self.level(state, now);
        // level <= cap = burst * unit, so the quotient fits in u64.
        div(level, self.0.unit) as u64
    }

    /// Idle when full: `remaining` is `burst` exactly when the level is `cap` (it never
    /// passes it), which this tells without dividing.
    fn is_idle(&self, state: &BucketState, now: Nanos) -> bool {
        self.level(state, now).0 == self.0.cap
    }

    fn retry_after(&self, state: &BucketState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.0.rule.burst() {
            return None;
        }
        let (level, clamped) = self.level(state, now);
        let need = u128::from(cost) * self.0.unit;
        if need <= level {
            return Some(Nanos::ZERO);
        }
        Some(self.0.wait_for(need - level, clamped, now))
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
        let (level, clamped) = self.level(state, now);
        self.0.wait_for(self.0.cap - level, clamped, now)
    }
}
