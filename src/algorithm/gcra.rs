//! GCRA, the generic cell rate algorithm: one theoretical arrival time per key.

use super::{Algorithm, Wide, div, div_ceil, wait_until};
use crate::rule::Rule;
use crate::time::Nanos;

/// The generic cell rate algorithm (virtual scheduling form). Each key keeps a
/// *theoretical arrival time* (TAT): the instant the key would be fully rested if every
/// admitted request had been spaced at the emission interval `T = W / max`. A request
/// of cost `c` at `t` passes when `max(TAT, t) + c·T − t ≤ burst · T`, and then pushes
/// TAT to `max(TAT, t) + c·T`.
///
/// `T` is rarely a whole number of nanoseconds, so time is scaled by `max_requests`:
/// an instant `t` becomes `t · max` and `T` becomes exactly `W`. As a policer GCRA is the
/// leaky bucket with water `(TAT − t) · max`; the tests check they decide identically.
#[derive(Debug, Clone)]
pub struct Gcra {
    rule: Rule,
    /// The delay tolerance plus one interval, scaled: `burst · W`.
    limit: u128,
}

/// Per-key state of GCRA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcraState {
    /// Theoretical arrival time, scaled by `max_requests` (a `u128` as two words).
    tat: Wide,
    /// The latest instant seen: a backwards clock is treated as this.
    last: Nanos,
}

impl Gcra {
    /// GCRA for `rule` (burst `rule.burst()`).
    pub fn new(rule: Rule) -> Gcra {
        Gcra {
            rule,
            limit: u128::from(rule.burst()) * u128::from(rule.window().as_u64()),
        }
    }

    /// The clamped instant, scaled, and the TAT no earlier than it.
    fn at(&self, s: &GcraState, now: Nanos) -> (u128, u128, Nanos) {
        let now = now.max(s.last);
        let scaled = u128::from(now.as_u64()) * u128::from(self.rule.max_requests());
        (scaled, s.tat.get().max(scaled), now)
    }

    fn interval(&self, cost: u64) -> u128 {
        u128::from(cost) * u128::from(self.rule.window().as_u64())
    }

    /// Converts a scaled wait to nanoseconds, rounding up.
    fn unscale(&self, scaled_wait: u128) -> u128 {
        div_ceil(scaled_wait, u128::from(self.rule.max_requests()))
    }
}

impl Algorithm for Gcra {
    type State = GcraState;

    fn name(&self) -> &str {
        "gcra"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.burst()
    }

    fn new_state(&self, now: Nanos) -> GcraState {
        GcraState {
            tat: Wide::new(0),
            last: now,
        }
    }

    fn try_acquire(&self, state: &mut GcraState, now: Nanos, cost: u64) -> bool {
        let (t, tat, now) = self.at(state, now);
        let new_tat = tat.saturating_add(self.interval(cost));
        let allowed = new_tat - t <= self.limit;
        if allowed {
            state.tat = Wide::new(new_tat);
        }
        state.last = now;
        allowed
    }

    fn remaining(&self, state: &GcraState, now: Nanos) -> u64 {
        let (t, tat, _) = self.at(state, now);
        div(self.limit - (tat - t).min(self.limit), self.interval(1)) as u64
    }

    fn retry_after(&self, state: &GcraState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.rule.burst() {
            return None;
        }
        let (t, tat, clamped) = self.at(state, now);
        let over = tat
            .saturating_add(self.interval(cost))
            .saturating_sub(t)
            .saturating_sub(self.limit);
        if over == 0 {
            return Some(Nanos::ZERO);
        }
        Some(wait_until(
            u128::from(clamped.as_u64()) + self.unscale(over),
            now,
        ))
    }

    fn reset_after(&self, state: &GcraState, now: Nanos) -> Nanos {
        let (t, tat, clamped) = self.at(state, now);
        wait_until(u128::from(clamped.as_u64()) + self.unscale(tat - t), now)
    }
}
