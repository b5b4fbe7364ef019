//! `governor`: GCRA as the `governor` crate (0.10) keeps it.
//!
//! governor stores its emission interval as whole nanoseconds: `Quota::with_period(W / N)`
//! divides a `Duration`, which floors, so `T = ⌊W / N⌋` ns (at least 1 ns). Its delay
//! tolerance is `τ = T · (B − 1)`. A request of cost `c` at `t` passes when
//! `t ≥ TAT + T · (c − 1) − τ`, and then `TAT = max(TAT, t) + T · c`; a cost above `B`
//! can never pass (`check_n` answers `InsufficientCapacity`, not "later").
//!
//! Where it departs from ratesim's `gcra`: where `W / N` is not a whole number of
//! nanoseconds, every interval is up to 1 ns short, so waits come out short and, over a
//! window, it can admit one more than the exact bound.

use crate::algorithm::Algorithm;
use crate::rule::Rule;
use crate::time::Nanos;

/// GCRA with governor's floored interval. See the module documentation.
#[derive(Debug, Clone)]
pub struct Governor {
    rule: Rule,
    /// `T = max(⌊W / N⌋, 1)` ns.
    interval: u128,
    /// `τ = T · (B − 1)`.
    tolerance: u128,
}

/// Per-key state of [`Governor`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GovernorState {
    /// The theoretical arrival time, in ns.
    tat: u128,
    /// The latest instant seen: a backwards clock is treated as this.
    last: Nanos,
}

impl Governor {
    /// governor's limiter for `rule`: period `W / N` floored to whole ns, burst `B`.
    pub fn new(rule: Rule) -> Governor {
        let interval = u128::from((rule.window().as_u64() / rule.max_requests()).max(1));
        Governor {
            rule,
            interval,
            tolerance: interval * u128::from(rule.burst() - 1),
        }
    }

    /// The floored emission interval `T` in ns.
    pub fn interval(&self) -> Nanos {
        Nanos::saturating_from_u128(self.interval)
    }

    /// The earliest instant a request of `cost` (`1 ≤ cost ≤ B`) passes.
    fn earliest(&self, state: &GovernorState, cost: u64) -> u128 {
        (state.tat + self.interval * u128::from(cost - 1)).saturating_sub(self.tolerance)
    }
}

impl Algorithm for Governor {
    type State = GovernorState;

    fn name(&self) -> &str {
        "governor"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.burst()
    }

    fn new_state(&self, now: Nanos) -> GovernorState {
        GovernorState {
            tat: u128::from(now.as_u64()),
            last: now,
        }
    }

    fn try_acquire(&self, state: &mut GovernorState, now: Nanos, cost: u64) -> bool {
        let now = now.max(state.last);
        state.last = now;
        if cost == 0 {
            return true;
        }
        if cost > self.rule.burst() {
            return false;
        }
        let t = u128::from(now.as_u64());
        if t < self.earliest(state, cost) {
            return false;
        }
        state.tat = state.tat.max(t) + self.interval * u128::from(cost);
        true
    }

    fn remaining(&self, state: &GovernorState, now: Nanos) -> u64 {
        let t = u128::from(now.max(state.last).as_u64());
        match (t + self.tolerance).checked_sub(state.tat) {
            None => 0,
            Some(slack) => {
                let k = slack / self.interval + 1;
                u64::try_from(k).map_or(self.rule.burst(), |k| k.min(self.rule.burst()))
            }
        }
    }

    fn retry_after(&self, state: &GovernorState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.rule.burst() {
            return None;
        }
        if cost == 0 {
            return Some(Nanos::ZERO);
        }
        Some(wait_from(self.earliest(state, cost), now, state.last))
    }

    fn reset_after(&self, state: &GovernorState, now: Nanos) -> Nanos {
        wait_from(state.tat, now, state.last)
    }
}

/// The wait from the caller's `now` until `at`, zero when `at` is not after the
/// instant the state treats as now (`max(now, last)`).
pub(crate) fn wait_from(at: u128, now: Nanos, last: Nanos) -> Nanos {
    if at <= u128::from(now.max(last).as_u64()) {
        Nanos::ZERO
    } else {
        Nanos::saturating_from_u128(at - u128::from(now.as_u64()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_floored_so_three_in_ten_ns_admits_a_fourth_by_ten() {
        // W/N = 10/3 ns: governor's T is 3 ns, the exact interval 3.33 ns.
        let rule = Rule::new(3, Nanos::new(10)).unwrap().with_burst(1).unwrap();
        let g = Governor::new(rule);
        assert_eq!(g.interval(), Nanos::new(3));
        let mut s = g.new_state(Nanos::ZERO);
        let admitted: Vec<u64> = (0..=10)
            .filter(|&t| g.try_acquire(&mut s, Nanos::new(t), 1))
            .collect();
        assert_eq!(
            admitted,
            vec![0, 3, 6, 9],
            "4 in [0, 10), where 3 would be exact"
        );
    }

    #[test]
    fn a_cost_above_the_burst_never_passes_and_waits_are_exact() {
        let rule = Rule::new(2, Nanos::new(100))
            .unwrap()
            .with_burst(3)
            .unwrap();
        let g = Governor::new(rule);
        let mut s = g.new_state(Nanos::ZERO);
        assert_eq!(g.retry_after(&s, Nanos::ZERO, 4), None);
        assert!(!g.try_acquire(&mut s, Nanos::ZERO, 4));
        assert!(g.try_acquire(&mut s, Nanos::ZERO, 3));
        assert_eq!(g.remaining(&s, Nanos::ZERO), 0);
        let wait = g.retry_after(&s, Nanos::new(7), 2).unwrap();
        assert_eq!(wait, Nanos::new(93), "TAT 150 + 50 − τ 100 = 100, from 7");
        assert!(!g.would_pass(&s, Nanos::new(99), 2));
        assert!(g.would_pass(&s, Nanos::new(100), 2));
        assert_eq!(g.reset_after(&s, Nanos::ZERO), Nanos::new(150));
    }
}
