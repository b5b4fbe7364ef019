//! The `tower` preset: tower's `RateLimit` middleware (tower 0.5), a shaper that never
//! refuses.
//!
//! Modelled on `tower/src/limit/rate/service.rs` (read, not copied). The service keeps
//! `until` (end of the current window) and `rem` (calls left in it):
//! - **A window opens at the first call after the previous one ended**, not on a grid:
//!   a call at `now ≥ until` starts a window `[now, now + per)` with `num` calls.
//! - **The last call of a window closes the service**: when `rem` is 1 the call still
//!   goes through, and the service is *not ready* until `until`. The next caller waits
//!   (it is delayed, never refused); when the wait ends, `poll_ready` opens a new window
//!   at that instant.
//! - **The wait ends on tokio's millisecond timer.** tower sleeps with
//!   `tokio::time::sleep_until(until)`, and tokio rounds a deadline up to its next whole
//!   millisecond since the runtime started (`deadline_to_tick` in tokio's time driver):
//!   the earliest instant the next caller passes is `ceil_ms(until)`. The simulation's
//!   origin plays the runtime's start.
//! - **One service, callers in turn**: callers are served in arrival order, so a caller
//!   behind a delayed one passes no earlier than it.
//!
//! A cost of `c` is `c` calls made back to back at the same instant; the answer is the
//! instant the last of them passes. A cost above `num` would span more than one window
//! and is refused (`retry_after` is `None`), as for every algorithm here.

use crate::algorithm::{Algorithm, Outcome};
use crate::rule::Rule;
use crate::time::Nanos;

const NS_PER_MS: u64 = 1_000_000;

/// tower's `RateLimit` with `Rate::new(rule.max_requests(), rule.window())`.
#[derive(Debug, Clone)]
pub struct Tower {
    rule: Rule,
}

/// The service's state for one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TowerState {
    /// End of the current window.
    until: Nanos,
    /// Calls left in it (tower's `rem`).
    rem: u64,
    /// Not ready until `ceil_ms(until)` (tower's `State::Limited`).
    limited: bool,
    /// When the latest caller passed: the next one cannot pass before it.
    free_at: Nanos,
}

impl Tower {
    /// `num = rule.max_requests()` calls `per = rule.window()`; `burst` is not read.
    pub fn new(rule: Rule) -> Tower {
        Tower { rule }
    }

    fn num(&self) -> u64 {
        self.rule.max_requests()
    }

    fn per(&self) -> Nanos {
        self.rule.window()
    }

    /// The instant a limited service is ready again, if nothing else happens.
    fn ready_at(&self, s: &TowerState) -> Nanos {
        if s.limited {
            s.free_at.max(ceil_ms(s.until))
        } else {
            s.free_at
        }
    }
}

/// `t` rounded up to a whole millisecond (tokio's timer resolution).
fn ceil_ms(t: Nanos) -> Nanos {
    let ms = t.as_u64().div_ceil(NS_PER_MS);
    Nanos::saturating_from_u128(u128::from(ms) * u128::from(NS_PER_MS))
}

impl Algorithm for Tower {
    type State = TowerState;

    fn name(&self) -> &str {
        "tower"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.num()
    }

    fn new_state(&self, now: Nanos) -> TowerState {
        TowerState {
            until: now,
            rem: self.num(),
            limited: false,
            free_at: now,
        }
    }

    fn try_acquire(&self, state: &mut TowerState, now: Nanos, cost: u64) -> bool {
        self.acquire(state, now, cost).admitted()
    }

    fn acquire(&self, s: &mut TowerState, now: Nanos, cost: u64) -> Outcome {
        if cost == 0 {
            return Outcome::Allowed;
        }
        if cost > self.num() {
            return Outcome::Denied;
        }
        let mut at = now.max(s.free_at);
        if s.limited {
            // poll_ready: the sleep ended; a new window opens at this instant.
            at = at.max(ceil_ms(s.until));
            s.limited = false;
            s.until = at.saturating_add(self.per());
            s.rem = self.num();
        }
        if at >= s.until {
            s.until = at.saturating_add(self.per());
            s.rem = self.num();
        }
        // Calls while rem > 1 just count down; the call that finds rem == 1 closes the
        // service. A cost of c is c calls; when the window holds fewer than c, the first
        // calls close it and the rest open the next one.
        if cost < s.rem {
            s.rem -= cost;
        } else {
            let rest = cost - s.rem;
            s.rem = 1;
            s.limited = true;
            if rest > 0 {
                at = at.max(ceil_ms(s.until));
                s.limited = rest == self.num();
                s.until = at.saturating_add(self.per());
                s.rem = if s.limited { 1 } else { self.num() - rest };
            }
        }
        s.free_at = at;
        Outcome::after(at.saturating_sub(now))
    }

    fn remaining(&self, s: &TowerState, now: Nanos) -> u64 {
        if self.ready_at(s) > now {
            0
        } else if s.limited || now >= s.until {
            self.num()
        } else {
            s.rem
        }
    }

    /// tower never refuses a call: every request passes (perhaps later), but one whose
    /// cost exceeds `num` would need more than a window and is refused for ever.
    fn retry_after(&self, _: &TowerState, _: Nanos, cost: u64) -> Option<Nanos> {
        (cost <= self.num()).then_some(Nanos::ZERO)
    }

    fn reset_after(&self, s: &TowerState, now: Nanos) -> Nanos {
        let full = if s.limited || s.rem < self.num() {
            self.ready_at(s).max(s.until)
        } else {
            s.free_at
        };
        full.saturating_sub(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::*;

    fn tower(n: u64, per: Nanos) -> Tower {
        Tower::new(Rule::new(n, per).unwrap())
    }

    fn ms(v: u64) -> Nanos {
        Nanos::from_millis(v)
    }

    #[test]
    fn the_window_opens_at_the_first_call_and_the_last_call_closes_it() {
        let a = tower(2, ms(100));
        let mut s = a.new_state(Nanos::ZERO);
        assert_eq!(a.acquire(&mut s, ms(30), 1), Allowed, "window [30, 130)");
        assert_eq!(
            a.acquire(&mut s, ms(40), 1),
            Allowed,
            "the last one; closed"
        );
        assert_eq!(
            a.acquire(&mut s, ms(50), 1),
            Delayed(ms(80)),
            "ready at 130"
        );
        assert_eq!(a.remaining(&s, ms(130)), 1, "window [130, 230), one left");
        assert_eq!(
            a.acquire(&mut s, ms(500), 1),
            Allowed,
            "a fresh window at 500"
        );
    }

    #[test]
    fn the_wait_ends_on_the_next_whole_millisecond() {
        let a = tower(1, Nanos::new(1_500_000)); // 1 call per 1.5 ms
        let mut s = a.new_state(Nanos::ZERO);
        assert_eq!(a.acquire(&mut s, Nanos::ZERO, 1), Allowed); // until 1.5 ms
        // Ready at ceil_ms(1.5 ms) = 2 ms, not 1.5 ms; the new window ends at 3.5 ms.
        assert_eq!(a.acquire(&mut s, ms(1), 1), Delayed(ms(1)));
        assert_eq!(a.acquire(&mut s, ms(2), 1), Delayed(ms(2)), "ready at 4 ms");
    }

    #[test]
    fn callers_pass_in_arrival_order_behind_a_delayed_one() {
        let a = tower(3, ms(10));
        let mut s = a.new_state(Nanos::ZERO);
        let got: Vec<Outcome> = (0..7).map(|_| a.acquire(&mut s, ms(1), 1)).collect();
        // Three pass at 1 ms; the next window opens at 11 ms, the third at 21 ms.
        let d10 = Delayed(ms(10));
        let d20 = Delayed(ms(20));
        assert_eq!(got, [Allowed, Allowed, Allowed, d10, d10, d10, d20]);
    }

    #[test]
    fn a_cost_is_that_many_calls_at_once() {
        let a = tower(3, ms(10));
        for (before, cost) in [(0, 2), (1, 3), (2, 2), (2, 3), (1, 1)] {
            let mut s = a.new_state(Nanos::ZERO);
            let mut t = a.new_state(Nanos::ZERO);
            for _ in 0..before {
                a.acquire(&mut s, ms(0), 1);
                a.acquire(&mut t, ms(0), 1);
            }
            let whole = a.acquire(&mut s, ms(1), cost);
            let last = (0..cost).map(|_| a.acquire(&mut t, ms(1), 1)).last();
            assert_eq!(Some(whole), last, "{before} calls, then cost {cost}");
            assert_eq!(s, t, "{before} calls, then cost {cost}");
        }
        let mut s = a.new_state(Nanos::ZERO);
        assert_eq!(a.acquire(&mut s, ms(0), 4), Denied);
        assert_eq!(a.retry_after(&s, ms(0), 4), None);
        assert_eq!(a.acquire(&mut s, ms(0), 3), Allowed);
        assert_eq!(a.reset_after(&s, ms(0)), ms(10));
    }
}
