//! Fixed window: one counter per aligned window `[k·W, (k+1)·W)`.

use super::{Algorithm, Outcome, answer, wait_until};
use crate::rule::Rule;
use crate::time::Nanos;

/// One counter per aligned window `[k·W, (k+1)·W)`; a request exactly at `k·W` is in
/// window `k`. The cheapest policy, and the one with the famous weakness: up to
/// `2 × max_requests` pass in a short span straddling a boundary.
#[derive(Debug, Clone)]
pub struct FixedWindow {
    rule: Rule,
}

/// Per-key state of the fixed window: which window, and how much it has admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowState {
    window: u64,
    count: u64,
}

impl FixedWindow {
    /// A fixed window for `rule`.
    pub fn new(rule: Rule) -> FixedWindow {
        FixedWindow { rule }
    }

    /// The window index and count at `now`. A window earlier than the state's own
    /// (a backwards clock) is treated as the state's window, so it never reopens.
    fn view(&self, s: &WindowState, now: Nanos) -> (u64, u64) {
        let w = now.as_u64() / self.rule.window().as_u64();
        if w > s.window {
            (w, 0)
        } else {
            (s.window, s.count)
        }
    }

    fn window_end(&self, w: u64) -> u128 {
        (u128::from(w) + 1) * u128::from(self.rule.window().as_u64())
    }

    /// Counts `cost` in `now`'s window when it fits; otherwise moves the state to that
    /// window and answers it (the request passes when it ends).
    fn count(&self, state: &mut WindowState, now: Nanos, cost: u64) -> Result<(), u64> {
        let (window, count) = self.view(state, now);
        let allowed = cost <= self.rule.max_requests() - count;
        *state = WindowState {
            window,
            count: if allowed { count + cost } else { count },
        };
        if allowed { Ok(()) } else { Err(window) }
    }
}

impl FixedWindow {
    /// The most admitted (by cost) in any window of length `W` under `rule`: `2N`, a
    /// full window's quota at the last instant of one aligned window and another at the
    /// first of the next; `N` when `W` is 1 ns (one instant cannot straddle a boundary).
    pub fn worst_case(rule: &Rule) -> u64 {
        let n = rule.max_requests();
        if rule.window().as_u64() >= 2 {
            n.saturating_mul(2)
        } else {
            n
        }
    }
}

impl Algorithm for FixedWindow {
    type State = WindowState;

    fn name(&self) -> &str {
        "fixed_window"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.max_requests()
    }

    fn new_state(&self, now: Nanos) -> WindowState {
        WindowState {
            window: now.as_u64() / self.rule.window().as_u64(),
            count: 0,
        }
    }

    fn try_acquire(&self, state: &mut WindowState, now: Nanos, cost: u64) -> bool {
        self.count(state, now, cost).is_ok()
    }

    #[inline]
    fn acquire_or_wait(
        &self,
        state: &mut WindowState,
        now: Nanos,
        cost: u64,
    ) -> (Outcome, Option<Nanos>) {
        let counted = self.count(state, now, cost);
        answer(counted, cost, self.rule.max_requests(), |window| {
            wait_until(self.window_end(window), now)
        })
    }

    fn remaining(&self, state: &WindowState, now: Nanos) -> u64 {
        self.rule.max_requests() - self.view(state, now).1
    }

    fn retry_after(&self, state: &WindowState, now: Nanos, cost: u64) -> Option<Nanos> {
        let max = self.rule.max_requests();
        if cost > max {
            return None;
        }
        let (window, count) = self.view(state, now);
        if cost <= max - count {
            return Some(Nanos::ZERO);
        }
        Some(wait_until(self.window_end(window), now))
    }

    fn reset_after(&self, state: &WindowState, now: Nanos) -> Nanos {
        match self.view(state, now) {
            (_, 0) => Nanos::ZERO,
            (window, _) => wait_until(self.window_end(window), now),
        }
    }
}
