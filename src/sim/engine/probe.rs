//! Judging `retry_after`: for each denial, the exact earliest instant the request would
//! pass, found by probing the key's state, and the advice counted against it.
//!
//! Probing only asks (`Algorithm::would_pass`, nothing consumed); it never changes a
//! key's state nor decides a request.

use crate::algorithm::Algorithm;
use crate::sim::metrics::{Honesty, Metrics};
use crate::time::{NANOS_PER_SEC, Nanos};

/// Counts `retry_after` (and its whole-second header form) against the exact
/// earliest instant the denied request would pass.
#[inline]
pub(super) fn judge(m: &mut Metrics, now: Nanos, retry_after: Nanos, earliest: Option<Nanos>) {
    // The common case, an exact advice of a positive wait, costs no wide arithmetic:
    // its header form (whole seconds, rounded up) is then exact when the wait is a
    // whole number of seconds and late otherwise. `judge_any` decides every case; the
    // tests check the two agree.
    let ns = retry_after.as_u64();
    if let Some(e) = earliest
        && ns > 0
        && now.as_u64().checked_add(ns) == Some(e.as_u64())
    {
        m.retry_after_exact += 1;
        if ns.is_multiple_of(NANOS_PER_SEC) {
            m.retry_after_secs_exact += 1;
        } else {
            m.retry_after_secs_too_late += 1;
        }
        return;
    }
    judge_any(m, now, retry_after, earliest);
}

/// [`judge`] for any advice.
fn judge_any(m: &mut Metrics, now: Nanos, retry_after: Nanos, earliest: Option<Nanos>) {
    // Instants past the clock's last one (`u64::MAX` ns) are all "the end": an advice
    // that points there is exact when nothing passes before it (`earliest` is `None`),
    // too early when the wait it gives ends inside the range and nothing passes there.
    let end = 1u128 << 64;
    let earliest = earliest.map_or(end, |e| u128::from(e.as_u64()));
    let now = u128::from(now.as_u64());
    match Honesty::judge((now + u128::from(retry_after.as_u64())).min(end), earliest) {
        Honesty::Exact => m.retry_after_exact += 1,
        Honesty::TooEarly => m.retry_after_too_early += 1,
        Honesty::TooLate => m.retry_after_too_late += 1,
    }
    // HTTP's Retry-After: whole seconds, rounded up, and never 0 on a denial.
    let secs = retry_after.as_u64().div_ceil(NANOS_PER_SEC).max(1);
    let advised = now + u128::from(secs) * u128::from(NANOS_PER_SEC);
    match Honesty::judge(advised.min(end), earliest) {
        Honesty::Exact => m.retry_after_secs_exact += 1,
        Honesty::TooEarly => m.retry_after_secs_too_early += 1,
        Honesty::TooLate => m.retry_after_secs_too_late += 1,
    }
}

/// Finds each denial's earliest passing instant ([`earliest_pass`]) and remembers
/// it per key, so a run of denials on one key probes once.
///
/// Exact, not a cache that can go stale: a denial changes no later decision (a
/// property every built-in algorithm passes in `tests/conformance.rs`, and which the
/// probe itself already relies on), so while a key is not admitted, the earliest
/// instant a request of a given cost passes stays the same instant. The engine forgets
/// a key on each of its admissions; an instant at or before `now` is never reused
/// (an evicted, recreated key). Debug builds — every test — recompute each
/// remembered answer and compare.
pub(super) struct Probes {
    /// Direct-mapped by key: `(key, cost, earliest passing instant or None = never)`.
    slots: Vec<Option<(u32, u64, Option<Nanos>)>>,
}

impl Probes {
    /// Slots in the memo: the hottest keys of a skewed stream get their own.
    const SLOTS: usize = 1024;

    pub(super) fn new() -> Self {
        Probes {
            slots: vec![None; Self::SLOTS],
        }
    }

    fn slot(key: u32) -> usize {
        key as usize % Self::SLOTS
    }

    /// `key` was admitted: what was remembered about it no longer holds.
    #[inline]
    pub(super) fn forget(&mut self, key: u32) {
        let slot = &mut self.slots[Self::slot(key)];
        if slot.is_some_and(|(k, _, _)| k == key) {
            *slot = None;
        }
    }

    /// The earliest instant after `now` at which the request of `cost` just denied
    /// for `key` would pass (`None` if it never does): remembered, or found by `probe`
    /// (which asks the key's state, see [`earliest_pass`]).
    ///
    /// Always inlined into `Server::ask`, once per denial: left to the compiler, a
    /// change anywhere in the crate can tip it out of line, where its prologue and the
    /// closure's captures cost 13 % more instructions on `scale_1_key` (callgrind).
    #[inline(always)]
    pub(super) fn earliest<E>(
        &mut self,
        key: u32,
        cost: u64,
        now: Nanos,
        probe: impl FnOnce() -> Result<Option<Nanos>, E>,
    ) -> Result<Option<Nanos>, E> {
        let slot = Self::slot(key);
        let remembered = match self.slots[slot] {
            Some((k, c, earliest)) if k == key && c == cost && earliest.is_none_or(|e| e > now) => {
                Some(earliest)
            }
            _ => None,
        };
        if let Some(earliest) = remembered
            && !cfg!(debug_assertions)
        {
            return Ok(earliest);
        }
        let earliest = probe()?;
        if let Some(r) = remembered {
            assert_eq!(
                r, earliest,
                "a remembered probe went stale: key {key}, cost {cost}"
            );
        }
        self.slots[slot] = Some((key, cost, earliest));
        Ok(earliest)
    }
}

/// The earliest instant after `now` at which a request of `cost` passes on `state`
/// (nothing else happening), or `None` if it never does. The request was just denied at
/// `now`. Each probe asks [`Algorithm::would_pass`], which decides as `try_acquire`
/// would on a copy.
pub(super) fn earliest_pass<A: Algorithm>(
    algorithm: &A,
    state: &A::State,
    now: Nanos,
    hint: Nanos,
    cost: u64,
) -> Option<Nanos> {
    earliest_pass_by(
        |t| algorithm.would_pass(state, Nanos::new(t), cost),
        now,
        hint,
    )
}

/// The earliest instant after `now` at which `passes` holds, or `None` if it never
/// does; `passes` fails at `now` and, once it holds, holds at every later instant. The
/// advertised wait `hint` is tried first (with the instant just before it), so an exact
/// algorithm costs two probes; otherwise the instant is found by exponential then
/// binary search.
pub(super) fn earliest_pass_by(
    mut passes: impl FnMut(u64) -> bool,
    now: Nanos,
    hint: Nanos,
) -> Option<Nanos> {
    let denied = now.as_u64(); // known: denied at `now`
    let guess = (now + hint).as_u64();
    // Try the advertised instant, and the instant just before it.
    let (mut fails, mut pass) = if guess > denied && (guess - 1 == denied || !passes(guess - 1)) {
        if passes(guess) {
            return Some(Nanos::new(guess));
        }
        exponential_search(&mut passes, guess, hint)?
    } else if guess > denied {
        // Passes one nanosecond early: the answer is at or before that.
        (denied, guess - 1)
    } else {
        exponential_search(&mut passes, denied, hint)?
    };
    // Invariant: fails at `fails`, passes at `pass`.
    while pass - fails > 1 {
        let mid = fails + (pass - fails) / 2;
        if passes(mid) {
            pass = mid;
        } else {
            fails = mid;
        }
    }
    Some(Nanos::new(pass))
}

/// Steps from `fails` (a failing instant) by doubling steps, starting with `hint`,
/// until an instant passes: `(the last failing instant, the first passing one)`, or
/// `None` if nothing up to the end of time passes.
fn exponential_search(
    passes: &mut impl FnMut(u64) -> bool,
    mut fails: u64,
    hint: Nanos,
) -> Option<(u64, u64)> {
    let mut step = hint.as_u64().max(1);
    loop {
        let t = fails.saturating_add(step);
        if passes(t) {
            return Some((fails, t));
        }
        if t == u64::MAX {
            return None;
        }
        fails = t;
        step = step.saturating_mul(2);
    }
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::algorithm::FixedWindow;
    use crate::rule::Rule;

    #[test]
    fn the_probe_finds_the_true_earliest_instant_even_from_a_wrong_hint() {
        let rule = Rule::new(1, Nanos::from_secs(10)).unwrap();
        let algo = FixedWindow::new(rule);
        let mut state = algo.new_state(Nanos::ZERO);
        assert!(algo.try_acquire(&mut state, Nanos::from_secs(3), 1));
        let now = Nanos::from_secs(4);
        assert!(!algo.try_acquire(&mut state, now, 1));
        let truth = Some(Nanos::from_secs(10));
        for hint in [
            0,
            1,
            5_999_999_999,
            6_000_000_000,
            6_000_000_001,
            50_000_000_000,
        ] {
            assert_eq!(
                earliest_pass(&algo, &state, now, Nanos::new(hint), 1),
                truth,
                "hint {hint} ns"
            );
        }
    }

    /// The probe asks `would_pass` (the sliding log answers it without a copy); against
    /// `try_acquire` on a fresh copy at every nanosecond, for every built-in algorithm
    /// and hints that are exact, early, late or arbitrary, it must find the same
    /// earliest instant.
    #[test]
    fn the_probe_agrees_with_a_fresh_copy_at_every_nanosecond() {
        let rule = Rule::new(3, Nanos::new(100)).unwrap();
        let registry = crate::registry::Registry::default();
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let mut checked = 0;
        for name in registry.names() {
            let algo = registry.create(name, rule).unwrap();
            let mut state = algo.new_state(Nanos::ZERO);
            let mut now = 0u64;
            for _ in 0..2_000 {
                now += rng.random_range(0..40);
                let cost = rng.random_range(1..=3);
                let t = Nanos::new(now);
                if algo.try_acquire(&mut state, t, cost) {
                    continue;
                }
                let truth = (now + 1..now + 10_000)
                    .find(|&at| algo.try_acquire(&mut state.clone(), Nanos::new(at), cost))
                    .map(Nanos::new);
                let exact = algo.retry_after(&state, t, cost).unwrap();
                let wait = truth.expect("every cost fits").as_u64() - now;
                for hint in [
                    exact.as_u64(),
                    0,
                    1,
                    wait - 1,
                    wait + 5,
                    rng.random_range(0..300),
                ] {
                    let found = earliest_pass(&algo, &state, t, Nanos::new(hint), cost);
                    assert_eq!(
                        found, truth,
                        "{name}: denied at {now}, cost {cost}, hint {hint}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 6_000, "too few denials were probed: {checked}");
    }

    /// Near the end of time the search saturates: it must still find an instant that
    /// is `u64::MAX` itself, and answer `None` when nothing up to it passes (also for a
    /// cost above the capacity), whatever the hint. Checked against every instant.
    #[test]
    fn the_probe_is_exact_up_to_the_end_of_time() {
        let registry = crate::registry::Registry::default();
        let end = u64::MAX;
        let mut at_the_end = 0;
        for window in [5, 1_000_000_000] {
            let rule = Rule::new(2, Nanos::new(window)).unwrap();
            for name in registry.names() {
                let algo = registry.create(name, rule).unwrap();
                for start in end - 12..end - 1 {
                    let mut state = algo.new_state(Nanos::new(start));
                    assert!(algo.try_acquire(&mut state, Nanos::new(start), 2));
                    for now in start..end {
                        for cost in [1, 2, 3] {
                            let t = Nanos::new(now);
                            if algo.would_pass(&state, t, cost) {
                                continue;
                            }
                            let truth = (now + 1..=end)
                                .find(|&at| {
                                    algo.try_acquire(&mut state.clone(), Nanos::new(at), cost)
                                })
                                .map(Nanos::new);
                            at_the_end += usize::from(truth == Some(Nanos::MAX));
                            for hint in [0, 1, 2, 7, end - 1, end] {
                                assert_eq!(
                                    earliest_pass(&algo, &state, t, Nanos::new(hint), cost),
                                    truth,
                                    "{name} W={window}: admitted at {start}, denied at {now}, \
                                     cost {cost}, hint {hint}"
                                );
                            }
                        }
                    }
                }
            }
        }
        assert!(at_the_end > 0, "no case passes exactly at u64::MAX");
    }

    /// A plugin algorithm may advise a wait of 0 on a denial, even at the clock's
    /// origin: the search must still find the earliest passing instant from there.
    #[test]
    fn a_zero_hint_at_the_origin_still_finds_the_earliest_instant() {
        for (now, truth) in [(0, 5), (0, 1), (3, 4), (3, 1_000)] {
            let found = earliest_pass_by(|t| t >= truth, Nanos::new(now), Nanos::ZERO);
            assert_eq!(found, Some(Nanos::new(truth)), "denied at {now}");
        }
        let never = earliest_pass_by(|_| false, Nanos::ZERO, Nanos::ZERO);
        assert_eq!(never, None);
    }

    /// The header form of the advice, whole seconds rounded up and never 0, is judged
    /// against the same earliest instant as the exact wait: rounding up makes an exact
    /// wait late unless it is whole, and an early wait can stay early.
    #[test]
    fn whole_second_advice_is_judged_against_the_same_earliest_instant() {
        let s = NANOS_PER_SEC;
        let cases = [
            // (now, retry_after, earliest) → whole seconds: (exact, too early, too late)
            (3 * s, 2 * s, 5 * s, (1, 0, 0)),
            (3 * s, 3 * s / 2, 3 * s + 3 * s / 2, (0, 0, 1)),
            (3 * s, s / 2, 6 * s, (0, 1, 0)),
            (3 * s, 0, 4 * s, (1, 0, 0)),
            (3 * s, 0, 3 * s + 1, (0, 0, 1)),
            (3 * s, 4 * s, 7 * s, (1, 0, 0)),
        ];
        for (now, wait, earliest, expected) in cases {
            let mut m = Metrics::default();
            judge(
                &mut m,
                Nanos::new(now),
                Nanos::new(wait),
                Some(Nanos::new(earliest)),
            );
            let got = (
                m.retry_after_secs_exact,
                m.retry_after_secs_too_early,
                m.retry_after_secs_too_late,
            );
            assert_eq!(got, expected, "now {now}, wait {wait}, earliest {earliest}");
        }
    }

    /// The six counts one judgement adds.
    fn judged(
        f: fn(&mut Metrics, Nanos, Nanos, Option<Nanos>),
        t: (u64, u64, Option<u64>),
    ) -> [u64; 6] {
        let mut m = Metrics::default();
        f(
            &mut m,
            Nanos::new(t.0),
            Nanos::new(t.1),
            t.2.map(Nanos::new),
        );
        [
            m.retry_after_exact,
            m.retry_after_too_early,
            m.retry_after_too_late,
            m.retry_after_secs_exact,
            m.retry_after_secs_too_early,
            m.retry_after_secs_too_late,
        ]
    }

    /// `judge`'s short path for exact advice counts what the general rule counts: at
    /// random instants and waits (exact, one off either way, whole seconds or not), and
    /// at the edges (a zero wait, the end of the clock's range).
    #[test]
    fn the_short_path_for_exact_advice_agrees_with_the_general_rule() {
        let s = NANOS_PER_SEC;
        let mut cases = vec![
            (0, 1, Some(1)),
            (3 * s, 0, Some(3 * s)),
            (3 * s, 0, Some(3 * s + 1)),
            (3 * s, 2 * s, Some(5 * s)),
            (u64::MAX - s, s, Some(u64::MAX)),
            (u64::MAX - s, s, None),
            (u64::MAX - 1, 1, Some(u64::MAX)),
            (1, u64::MAX - 1, Some(u64::MAX)),
            (1, u64::MAX, None),
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(27);
        for _ in 0..20_000 {
            let now = rng.random_range(0..=u64::MAX / 2);
            let wait = match rng.random_range(0..3) {
                0 => rng.random_range(0..=10) * s,
                1 => rng.random_range(0..=20 * s),
                _ => rng.random_range(0..=u64::MAX / 2),
            };
            let off = rng.random_range(0..=2u64);
            let earliest = (now + wait).saturating_add(off).checked_sub(1);
            cases.push((now, wait, earliest.filter(|_| rng.random_range(0..50) > 0)));
        }
        let mut short = 0;
        for t in cases {
            assert_eq!(
                judged(judge, t),
                judged(judge_any, t),
                "now, wait, earliest: {t:?}"
            );
            short += u64::from(t.1 > 0 && t.0.checked_add(t.1) == t.2);
        }
        assert!(short > 5_000, "the short path was taken only {short} times");
    }

    /// Judging at the end of the clock's range: `None` (passes at no instant) matches
    /// only an advice that points past the last instant.
    #[test]
    fn advice_past_the_end_of_time_is_exact_only_when_nothing_passes_before() {
        let cases = [
            // (now, retry_after, earliest) → (exact, too early, too late)
            (5, 10, None, (0, 1, 0)),
            (5, u64::MAX, None, (1, 0, 0)),
            (u64::MAX - 3, 4, None, (1, 0, 0)),
            (u64::MAX - 3, 3, None, (0, 1, 0)),
            (0, u64::MAX, Some(u64::MAX), (1, 0, 0)),
            (5, u64::MAX, Some(100), (0, 0, 1)),
            (5, 95, Some(100), (1, 0, 0)),
        ];
        for (now, wait, earliest, expected) in cases {
            let mut m = Metrics::default();
            judge(
                &mut m,
                Nanos::new(now),
                Nanos::new(wait),
                earliest.map(Nanos::new),
            );
            let got = (
                m.retry_after_exact,
                m.retry_after_too_early,
                m.retry_after_too_late,
            );
            assert_eq!(
                got, expected,
                "now {now}, wait {wait}, earliest {earliest:?}"
            );
        }
    }
}
