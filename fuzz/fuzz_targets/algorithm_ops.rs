//! Arbitrary op sequences on every registered algorithm: rule parameters up to
//! `u64::MAX`, times that jump backwards or sit near `u64::MAX`, costs of 0 and above
//! capacity. Must never panic, and must keep these cheap invariants:
//!
//! - `remaining ≤ capacity`;
//! - `try_acquire` passes exactly when `retry_after` said `Some(0)` just before, and
//!   exactly when `would_pass` said so;
//! - `retry_after = Some(w)`, `w > 0`: the request passes at `now + w` (when that does
//!   not saturate), if nothing else happens;
//! - a denial leaves `remaining` and `retry_after` at that instant unchanged;
//! - requests admitted at one and the same instant never total more than `capacity`
//!   (no time passes, so nothing refills or expires);
//! - the sliding log never holds more than `max_requests` admitted in `(t − W, t]`
//!   after an admission at `t` (checked against a shadow log of the admissions).

#![no_main]

use std::sync::LazyLock;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ratesim::{Algorithm, Nanos, Registry, Rule};

static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::default);

/// A `u64` parameter, biased towards the edges.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Param {
    Small(u8),
    Any(u64),
    NearMax(u8),
    PowerOfTwo(u8),
}

impl Param {
    fn get(self) -> u64 {
        match self {
            Param::Small(n) => u64::from(n),
            Param::Any(n) => n,
            Param::NearMax(n) => u64::MAX - u64::from(n),
            Param::PowerOfTwo(p) => 1u64.checked_shl(u32::from(p % 64)).unwrap_or(1),
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Time {
    Abs(Param),
    Forward(u32),
    Backward(u32),
    Same,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Cost {
    Zero,
    One,
    Capacity,
    AboveCapacity(u8),
    Param(Param),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Op {
    Acquire(Time, Cost),
    Remaining(Time),
    ResetAfter(Time),
    IsIdle(Time),
    Fresh(Time),
}

#[derive(Arbitrary, Debug)]
struct Input {
    max_requests: Param,
    window: Param,
    burst: Option<Param>,
    start: Param,
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let Ok(mut rule) = Rule::new(input.max_requests.get(), Nanos::new(input.window.get())) else {
        return;
    };
    if let Some(b) = input.burst {
        match rule.with_burst(b.get()) {
            Ok(r) => rule = r,
            Err(_) => return,
        }
    }
    for name in REGISTRY.names() {
        let algo = REGISTRY.create(name, rule).expect("a registered name");
        run(
            &algo,
            name == "sliding_window_log",
            Nanos::new(input.start.get()),
            &input.ops,
        );
    }
});

fn run<A: Algorithm>(algo: &A, is_log: bool, start: Nanos, ops: &[Op]) {
    let cap = algo.capacity();
    let rule = *algo.rule();
    let mut now = start;
    let mut state = algo.new_state(now);
    // Shadow of the sliding log: the latest instant its state has seen, and every
    // admission at its effective instant.
    let mut last = now;
    let mut admitted: Vec<(u64, u64)> = Vec::new();
    // Admitted cost since the clock last moved (or the state was replaced).
    let mut instant: Option<(Nanos, u128)> = None;
    for &op in ops.iter().take(256) {
        let at = |t: Time, now: Nanos| match t {
            Time::Abs(p) => Nanos::new(p.get()),
            Time::Forward(d) => now.saturating_add(Nanos::new(u64::from(d))),
            Time::Backward(d) => now.saturating_sub(Nanos::new(u64::from(d))),
            Time::Same => now,
        };
        match op {
            Op::Acquire(t, c) => {
                now = at(t, now);
                let cost = match c {
                    Cost::Zero => 0,
                    Cost::One => 1,
                    Cost::Capacity => cap,
                    Cost::AboveCapacity(n) => cap.saturating_add(1 + u64::from(n)),
                    Cost::Param(p) => p.get(),
                };
                let advised = algo.retry_after(&state, now, cost);
                if cost > cap {
                    assert_eq!(
                        advised,
                        None,
                        "{}: cost {cost} > capacity {cap}",
                        algo.name()
                    );
                }
                if cost == 0 {
                    assert_eq!(advised, Some(Nanos::ZERO), "{}: cost 0", algo.name());
                }
                if let Some(w) = advised
                    && w > Nanos::ZERO
                    && now
                        .as_u64()
                        .checked_add(w.as_u64())
                        .is_some_and(|t| t < u64::MAX)
                {
                    let mut later = state.clone();
                    let then = now.saturating_add(w);
                    assert!(
                        algo.try_acquire(&mut later, then, cost),
                        "{}: retry_after {w:?} at {now:?} for cost {cost}, but denied at {then:?}",
                        algo.name()
                    );
                }
                let before = (
                    algo.remaining(&state, now),
                    algo.retry_after(&state, now, cost),
                );
                let predicted = algo.would_pass(&state, now, cost);
                let allowed = algo.try_acquire(&mut state, now, cost);
                assert_eq!(
                    allowed,
                    advised == Some(Nanos::ZERO),
                    "{}: at {now:?} cost {cost}: retry_after said {advised:?}",
                    algo.name()
                );
                assert_eq!(
                    allowed,
                    predicted,
                    "{}: at {now:?} cost {cost}: would_pass said {predicted}",
                    algo.name()
                );
                let same = match instant {
                    Some((t, sum)) if t == now => sum,
                    _ => 0,
                };
                let sum = same + if allowed { u128::from(cost) } else { 0 };
                assert!(
                    sum <= u128::from(cap),
                    "{}: admitted {sum} at the single instant {now:?}, capacity {cap}",
                    algo.name()
                );
                instant = Some((now, sum));
                if !allowed {
                    let after = (
                        algo.remaining(&state, now),
                        algo.retry_after(&state, now, cost),
                    );
                    assert_eq!(
                        before,
                        after,
                        "{}: a denial at {now:?} changed state",
                        algo.name()
                    );
                }
                if is_log {
                    last = last.max(now);
                    if allowed && cost > 0 {
                        let t = last.as_u64();
                        admitted.push((t, cost));
                        // (t − W, t] in i128: t − W may be negative.
                        let lo = i128::from(t) - i128::from(rule.window().as_u64());
                        let in_window: u128 = admitted
                            .iter()
                            .filter(|&&(a, _)| i128::from(a) > lo)
                            .map(|&(_, c)| u128::from(c))
                            .sum();
                        assert!(
                            in_window <= u128::from(rule.max_requests()),
                            "sliding log admitted {in_window} in ({lo}, {t}] with max {}",
                            rule.max_requests()
                        );
                    }
                }
            }
            Op::Remaining(t) => {
                now = at(t, now);
                let r = algo.remaining(&state, now);
                assert!(r <= cap, "{}: remaining {r} > capacity {cap}", algo.name());
            }
            Op::ResetAfter(t) => {
                now = at(t, now);
                let _ = algo.reset_after(&state, now);
            }
            Op::IsIdle(t) => {
                now = at(t, now);
                let _ = algo.is_idle(&state, now);
            }
            Op::Fresh(t) => {
                now = at(t, now);
                state = algo.new_state(now);
                last = now;
                admitted.clear();
                instant = None;
                let r = algo.remaining(&state, now);
                assert_eq!(r, cap, "{}: a fresh state has {r} of {cap}", algo.name());
            }
        }
    }
}
