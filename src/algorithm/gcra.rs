//! GCRA, the generic cell rate algorithm: one theoretical arrival time per key.

use super::{Algorithm, Outcome, Packed, Wide, answer, div, div_ceil, wait_until};
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
    /// How far the theoretical arrival time is ahead of `last`, scaled by
    /// `max_requests`: `TAT = last · max + ahead`. Kept relative, because an absolute
    /// scaled TAT near the end of time (`u64::MAX` ns × `max_requests`) would not fit
    /// even in `u128`; `ahead` never exceeds `burst · W`, which always does.
    ahead: Wide,
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

    /// `max(TAT, t) − t` at `now` (the scaled wait until the key is fully rested:
    /// the leaky bucket's water), and the clamped instant.
    fn ahead(&self, s: &GcraState, now: Nanos) -> (u128, Nanos) {
        let now = now.max(s.last);
        let elapsed = u128::from((now - s.last).as_u64()) * u128::from(self.rule.max_requests());
        (s.ahead.get().saturating_sub(elapsed), now)
    }

    fn interval(&self, cost: u64) -> u128 {
        u128::from(cost) * u128::from(self.rule.window().as_u64())
    }

    /// Converts a scaled wait to nanoseconds, rounding up.
    fn unscale(&self, scaled_wait: u128) -> u128 {
        div_ceil(scaled_wait, u128::from(self.rule.max_requests()))
    }

    /// Admits `cost` at `now` when it conforms, pushing TAT on; otherwise brings the
    /// state to `now` and answers by how much (scaled) the request is early and the
    /// clamped instant that counts from.
    fn push(&self, state: &mut GcraState, now: Nanos, cost: u64) -> Result<(), (u128, Nanos)> {
        let (ahead, now) = self.ahead(state, now);
        // max(TAT, t) + c·T − t ≤ burst·T, written so nothing can overflow.
        let (interval, room) = (self.interval(cost), self.limit - ahead);
        let allowed = interval <= room;
        let ahead = if allowed { ahead + interval } else { ahead };
        *state = GcraState {
            ahead: Wide::new(ahead),
            last: now,
        };
        if allowed {
            Ok(())
        } else {
            Err((interval - room, now))
        }
    }

    /// The wait from `now` for a request `over` (scaled) early at the clamped instant
    /// `from`.
    fn wait(&self, over: u128, from: Nanos, now: Nanos) -> Nanos {
        wait_until(u128::from(from.as_u64()) + self.unscale(over), now)
    }
}

impl Gcra {
    /// The most admitted (by cost) in any window of length `W` under `rule`:
    /// `B + N − 1` for windows of at least `N` ns (see the bucket module for the exact
    /// form).
    pub fn worst_case(rule: &Rule) -> u64 {
        super::saturate(super::bucket::worst_case(rule))
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
            ahead: Wide::new(0),
            last: now,
        }
    }

    fn try_acquire(&self, state: &mut GcraState, now: Nanos, cost: u64) -> bool {
        self.push(state, now, cost).is_ok()
    }

    #[inline]
    fn acquire_or_wait(
        &self,
        state: &mut GcraState,
        now: Nanos,
        cost: u64,
    ) -> (Outcome, Option<Nanos>) {
        let pushed = self.push(state, now, cost);
        answer(pushed, cost, self.rule.burst(), |(over, from)| {
            self.wait(over, from, now)
        })
    }

    fn remaining(&self, state: &GcraState, now: Nanos) -> u64 {
        let (ahead, _) = self.ahead(state, now);
        div(self.limit - ahead, self.interval(1)) as u64
    }

    /// Idle when fully rested: `remaining` is `burst` exactly when the arrival time is
    /// not ahead (`limit` is `burst` intervals), which this tells without dividing.
    fn is_idle(&self, state: &GcraState, now: Nanos) -> bool {
        self.ahead(state, now).0 == 0
    }

    fn retry_after(&self, state: &GcraState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.rule.burst() {
            return None;
        }
        let (ahead, clamped) = self.ahead(state, now);
        let over = self.interval(cost).saturating_sub(self.limit - ahead);
        if over == 0 {
            return Some(Nanos::ZERO);
        }
        Some(self.wait(over, clamped, now))
    }

    /// `ahead` never exceeds `limit`, so the state packs when `limit` fits in a `u64`.
    fn packs(&self) -> bool {
        u64::try_from(self.limit).is_ok()
    }

    fn pack(&self, state: &GcraState) -> Packed {
        debug_assert!(state.ahead.hi == 0, "packed an `ahead` that needs 128 bits");
        [state.ahead.lo, state.last.as_u64()]
    }

    fn unpack(&self, [ahead, last]: Packed) -> GcraState {
        GcraState {
            ahead: Wide::new(u128::from(ahead)),
            last: Nanos::new(last),
        }
    }

    fn reset_after(&self, state: &GcraState, now: Nanos) -> Nanos {
        let (ahead, clamped) = self.ahead(state, now);
        wait_until(u128::from(clamped.as_u64()) + self.unscale(ahead), now)
    }
}
