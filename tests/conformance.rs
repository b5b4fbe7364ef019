//! One conformance suite, generic over the `Algorithm` trait, run on every algorithm.
//!
//! Each property is checked on many seeded random streams with several rules (including
//! a burst different from max_requests and windows that do not divide evenly), so the
//! exact-arithmetic edge cases come up often. Failures print the seed, the rule and the
//! instant.

use ratesim::{
    Algorithm, BoxedAlgorithm, Composite, FixedWindow, Gcra, LeakyBucket, Nanos, Outcome, Rule,
    SlidingWindowCounter, SlidingWindowLog, TokenBucket,
};

/// splitmix64: a tiny, dependency-free PRNG so every failure is reproducible by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The rules every property runs on: small quotas, bursts above and below the quota,
/// windows in odd nanosecond counts so `W / max` is never a whole number.
fn rules() -> Vec<Rule> {
    let r = |max, window_ns, burst| {
        Rule::new(max, Nanos::new(window_ns))
            .and_then(|rule| rule.with_burst(burst))
            .unwrap()
    };
    vec![
        r(1, 10_000_000_000, 1),
        r(3, 10_000_000_000, 3),
        r(5, 10_000_000_000, 5),
        r(7, 1_000_003, 7),
        r(4, 999, 9),
        r(10, 1_000, 2),
        r(100, 60_000_000_000, 100),
    ]
}

/// A gap between two requests: often zero (bursts), often tiny, sometimes near a
/// window, sometimes several windows.
fn gap(rng: &mut Rng, window: u64) -> u64 {
    match rng.below(6) {
        0 => 0,
        1 => rng.below(4),
        2 => rng.below(window / 7 + 1),
        3 => rng.below(window + 1),
        4 => window - 1 + rng.below(3),
        _ => rng.below(3 * window + 1),
    }
}

/// A request cost: usually 1, sometimes 0, sometimes up to the capacity.
fn cost(rng: &mut Rng, capacity: u64) -> u64 {
    match rng.below(8) {
        0 => 0,
        1 | 2 => 1 + rng.below(capacity),
        _ => 1,
    }
}

/// Everything observable about a state at one instant.
fn observe<A: Algorithm>(a: &A, s: &A::State, now: Nanos) -> (u64, Option<Nanos>, Nanos) {
    (
        a.remaining(s, now),
        a.retry_after(s, now, 1),
        a.reset_after(s, now),
    )
}

/// Runs the same random future (from `start` on) against two states and returns the
/// first instant where they decide differently, if any.
fn first_difference<A: Algorithm>(
    a: &A,
    mut x: A::State,
    mut y: A::State,
    start: Nanos,
    rng: &mut Rng,
) -> Option<Nanos> {
    let window = a.rule().window().as_u64();
    let mut now = start;
    for _ in 0..40 {
        if observe(a, &x, now) != observe(a, &y, now) {
            return Some(now);
        }
        let c = cost(rng, a.capacity());
        if a.try_acquire(&mut x, now, c) != a.try_acquire(&mut y, now, c) {
            return Some(now);
        }
        now = now + Nanos::new(gap(rng, window));
    }
    None
}

/// Drives `check` at every request of many random streams, for every rule.
/// `check(algorithm, state before the request, now, cost, rng, context, last)` where
/// `last` is the latest instant the state has seen.
fn for_each_step<A: Algorithm>(
    build: fn(Rule) -> A,
    mut check: impl FnMut(&A, &A::State, Nanos, u64, &mut Rng, &str, Nanos),
) {
    for rule in rules() {
        let a = build(rule);
        let window = rule.window().as_u64();
        for seed in 0..60 {
            let mut rng = Rng(seed);
            let mut now = Nanos::new(rng.below(3 * window));
            let mut state = a.new_state(now);
            let mut last = now;
            for step in 0..60 {
                let c = cost(&mut rng, a.capacity());
                let context = format!(
                    "{} rule {rule} seed {seed} step {step} now {now:?} cost {c}",
                    a.name()
                );
                check(&a, &state, now, c, &mut rng, &context, last);
                a.try_acquire(&mut state, now, c);
                last = now;
                now = now + Nanos::new(gap(&mut rng, window));
            }
        }
    }
}

fn passes_exactly_at_retry_after_and_not_one_ns_earlier<A: Algorithm>(build: fn(Rule) -> A) {
    for_each_step(build, |a, state, now, c, _, ctx, _| {
        let wait = a
            .retry_after(state, now, c)
            .expect("cost <= capacity can always pass");
        let passes_at = |t: Nanos| a.try_acquire(&mut state.clone(), t, c);
        assert!(
            passes_at(now + wait),
            "{ctx}: denied at now + retry_after ({wait:?})"
        );
        if wait > Nanos::ZERO {
            assert!(
                !passes_at(now + wait - Nanos::new(1)),
                "{ctx}: passed 1 ns before retry_after ({wait:?})"
            );
        }
        assert_eq!(
            wait == Nanos::ZERO,
            passes_at(now),
            "{ctx}: retry_after 0 must mean it passes now"
        );
    });
}

fn after_remaining_k_exactly_k_back_to_back_requests_pass<A: Algorithm>(build: fn(Rule) -> A) {
    for_each_step(build, |a, state, now, _, _, ctx, _| {
        let k = a.remaining(state, now);
        assert!(k <= a.capacity(), "{ctx}: remaining {k} above capacity");
        let mut s = state.clone();
        for i in 0..k {
            assert!(
                a.try_acquire(&mut s, now, 1),
                "{ctx}: request {i} of remaining {k} denied"
            );
        }
        assert!(
            !a.try_acquire(&mut s, now, 1),
            "{ctx}: request {} passed with remaining {k}",
            k + 1
        );
    });
}

fn is_idle_only_when_indistinguishable_from_fresh<A: Algorithm>(build: fn(Rule) -> A) {
    let mut idle_seen = 0;
    for_each_step(build, |a, state, now, _, rng, ctx, _| {
        let fresh = a.new_state(now);
        if a.is_idle(state, now) {
            idle_seen += 1;
            let diff = first_difference(a, state.clone(), fresh, now, rng);
            assert_eq!(
                diff, None,
                "{ctx}: idle state decided differently from a fresh one"
            );
        } else {
            assert_ne!(
                observe(a, state, now),
                observe(a, &fresh, now),
                "{ctx}: not idle, yet looks exactly like a fresh state"
            );
        }
    });
    assert!(
        idle_seen > 100,
        "the streams should reach idle states often ({idle_seen})"
    );
}

/// At the next request's instant, and at one before the latest the state has seen (a
/// renewed state starts at its own instant, as a fresh one does, not at the old one's).
fn a_renewed_state_decides_as_a_fresh_one<A: Algorithm>(build: fn(Rule) -> A) {
    for_each_step(build, |a, state, now, _, rng, ctx, last| {
        for at in [now, Nanos::new(last.as_u64() / 2)] {
            let mut renewed = state.clone();
            a.renew(&mut renewed, at);
            let diff = first_difference(a, renewed, a.new_state(at), at, rng);
            assert_eq!(
                diff, None,
                "{ctx}: a state renewed at {at:?} decided unlike a fresh one"
            );
        }
    });
}

fn a_backwards_clock_changes_nothing<A: Algorithm>(build: fn(Rule) -> A) {
    for_each_step(build, |a, state, _, c, rng, ctx, now| {
        // `now` is the latest instant this state has seen; ask at an earlier one.
        let earlier = Nanos::new(rng.below(now.as_u64() + 1));
        let back = earlier != now;
        assert_eq!(
            a.remaining(state, earlier),
            a.remaining(state, now),
            "{ctx}: remaining moved at {earlier:?}"
        );
        let (r_then, r_now) = (
            a.retry_after(state, earlier, c),
            a.retry_after(state, now, c),
        );
        match (r_then, r_now) {
            (Some(Nanos::ZERO), Some(Nanos::ZERO)) => {}
            (Some(then), Some(r)) if r > Nanos::ZERO => {
                assert_eq!(
                    then,
                    r + (now - earlier),
                    "{ctx}: retry_after at {earlier:?} is not the same instant"
                )
            }
            other => panic!("{ctx}: retry_after at {earlier:?} vs now: {other:?}"),
        }
        let (mut x, mut y) = (state.clone(), state.clone());
        let allowed_then = a.try_acquire(&mut x, earlier, c);
        let allowed_now = a.try_acquire(&mut y, now, c);
        assert_eq!(
            allowed_then, allowed_now,
            "{ctx}: acquire at {earlier:?} (back={back})"
        );
        assert_eq!(
            first_difference(a, x, y, now, rng),
            None,
            "{ctx}: acquiring at {earlier:?} changed the future"
        );
    });
}

fn a_denial_never_changes_a_later_decision<A: Algorithm>(build: fn(Rule) -> A) {
    for_each_step(build, |a, state, now, c, rng, ctx, _| {
        let mut after = state.clone();
        if !a.try_acquire(&mut after, now, c) {
            assert_eq!(
                first_difference(a, after, state.clone(), now, rng),
                None,
                "{ctx}: the denial changed the state"
            );
        }
    });
}

/// The instants a step is also asked at besides `now` (a later one, one before the
/// state's latest `last`, one near the end of time) and the costs (the step's `c`, the
/// edges of the capacity and of the type).
fn instants_and_costs<A: Algorithm>(
    a: &A,
    now: Nanos,
    c: u64,
    last: Nanos,
    rng: &mut Rng,
) -> ([Nanos; 4], [u64; 6]) {
    let window = a.rule().window().as_u64();
    let later = now + Nanos::new(rng.below(2 * window));
    let earlier = Nanos::new(rng.below(last.as_u64() + 1));
    let near_the_end = Nanos::new(u64::MAX - rng.below(window));
    let costs = [c, 0, 1, a.capacity(), a.capacity() + 1, u64::MAX];
    ([now, later, earlier, near_the_end], costs)
}

fn would_pass_answers_as_try_acquire_on_a_copy<A: Algorithm>(build: fn(Rule) -> A) {
    for_each_step(build, |a, state, now, c, rng, ctx, last| {
        let (instants, costs) = instants_and_costs(a, now, c, last, rng);
        for t in instants {
            for cost in costs {
                assert_eq!(
                    a.would_pass(state, t, cost),
                    a.try_acquire(&mut state.clone(), t, cost),
                    "{ctx}: would_pass at {t:?}, cost {cost}"
                );
            }
        }
    });
}

/// `acquire_or_wait` answers what `acquire` and then, for a denial, `retry_after` on
/// the state it left answer, and leaves a state that decides the same future.
fn acquire_or_wait_is_acquire_then_retry_after<A: Algorithm>(build: fn(Rule) -> A) {
    for_each_step(build, |a, state, now, c, rng, ctx, last| {
        let (instants, costs) = instants_and_costs(a, now, c, last, rng);
        for t in instants {
            for cost in costs {
                let mut fused = state.clone();
                let got = a.acquire_or_wait(&mut fused, t, cost);
                let mut apart = state.clone();
                let outcome = a.acquire(&mut apart, t, cost);
                let wait = match outcome {
                    Outcome::Denied => a.retry_after(&apart, t, cost),
                    _ => Some(Nanos::ZERO),
                };
                assert_eq!(got, (outcome, wait), "{ctx}: at {t:?}, cost {cost}");
                assert_eq!(
                    first_difference(a, fused, apart, t, rng),
                    None,
                    "{ctx}: acquire_or_wait at {t:?}, cost {cost} left another state"
                );
            }
        }
    });
}

fn a_cost_above_capacity_can_never_pass<A: Algorithm>(build: fn(Rule) -> A) {
    for_each_step(build, |a, state, now, _, _, ctx, _| {
        let too_big = a.capacity() + 1;
        assert_eq!(a.retry_after(state, now, too_big), None, "{ctx}");
        assert!(!a.try_acquire(&mut state.clone(), now, too_big), "{ctx}");
        assert_eq!(a.retry_after(state, now, u64::MAX), None, "{ctx}");
    });
}

fn a_fresh_state_has_the_full_quota<A: Algorithm>(build: fn(Rule) -> A) {
    for rule in rules() {
        let a = build(rule);
        let now = Nanos::new(12_345);
        let s = a.new_state(now);
        assert_eq!(a.remaining(&s, now), a.capacity(), "{} {rule}", a.name());
        assert_eq!(a.reset_after(&s, now), Nanos::ZERO, "{} {rule}", a.name());
        assert!(a.is_idle(&s, now), "{} {rule}", a.name());
    }
}

macro_rules! conformance {
    ($($module:ident => $build:expr),* $(,)?) => {$(
        mod $module {
            use super::*;
            #[test]
            fn passes_exactly_at_retry_after_and_not_one_ns_earlier() {
                super::passes_exactly_at_retry_after_and_not_one_ns_earlier($build);
            }
            #[test]
            fn after_remaining_k_exactly_k_back_to_back_requests_pass() {
                super::after_remaining_k_exactly_k_back_to_back_requests_pass($build);
            }
            #[test]
            fn is_idle_only_when_indistinguishable_from_fresh() {
                super::is_idle_only_when_indistinguishable_from_fresh($build);
            }
            #[test]
            fn a_renewed_state_decides_as_a_fresh_one() {
                super::a_renewed_state_decides_as_a_fresh_one($build);
            }
            #[test]
            fn a_backwards_clock_changes_nothing() {
                super::a_backwards_clock_changes_nothing($build);
            }
            #[test]
            fn a_denial_never_changes_a_later_decision() {
                super::a_denial_never_changes_a_later_decision($build);
            }
            #[test]
            fn would_pass_answers_as_try_acquire_on_a_copy() {
                super::would_pass_answers_as_try_acquire_on_a_copy($build);
            }
            #[test]
            fn acquire_or_wait_is_acquire_then_retry_after() {
                super::acquire_or_wait_is_acquire_then_retry_after($build);
            }
            #[test]
            fn a_cost_above_capacity_can_never_pass() {
                super::a_cost_above_capacity_can_never_pass($build);
            }
            #[test]
            fn a_fresh_state_has_the_full_quota() {
                super::a_fresh_state_has_the_full_quota($build);
            }
        }
    )*};
}

conformance! {
    token_bucket => TokenBucket::new,
    leaky_bucket => LeakyBucket::new,
    fixed_window => FixedWindow::new,
    sliding_window_log => SlidingWindowLog::new,
    sliding_window_counter => SlidingWindowCounter::new,
    gcra => Gcra::new,
    composite => composite_of,
    boxed_sliding_window_log => boxed_log,
}

/// The sliding log behind [`BoxedAlgorithm`]: every call through the erased forwards.
fn boxed_log(rule: Rule) -> BoxedAlgorithm {
    BoxedAlgorithm::new(SlidingWindowLog::new(rule))
}

/// A composite of two differently shaped rules: the rule itself by token bucket, and
/// twice the quota over three windows by sliding log.
fn composite_of(rule: Rule) -> Composite<BoxedAlgorithm> {
    let wide = Rule::new(
        rule.max_requests() * 2,
        Nanos::new(rule.window().as_u64() * 3),
    )
    .unwrap();
    let parts = vec![
        BoxedAlgorithm::new(TokenBucket::new(rule)),
        BoxedAlgorithm::new(SlidingWindowLog::new(wide)),
    ];
    Composite::new(parts).unwrap()
}

/// Token bucket and leaky bucket are mirror images (water = capacity − tokens), and GCRA
/// is the leaky bucket written as a theoretical arrival time: on the same stream all
/// three must decide identically, down to remaining, retry_after and reset_after.
#[test]
fn token_bucket_leaky_bucket_and_gcra_decide_identically_on_random_streams() {
    for rule in rules() {
        let (tb, lb, gcra) = (
            TokenBucket::new(rule),
            LeakyBucket::new(rule),
            Gcra::new(rule),
        );
        let window = rule.window().as_u64();
        for seed in 0..200 {
            let mut rng = Rng(seed);
            let mut now = Nanos::new(rng.below(window));
            let (mut s1, mut s2, mut s3) =
                (tb.new_state(now), lb.new_state(now), gcra.new_state(now));
            for step in 0..80 {
                let c = cost(&mut rng, rule.burst());
                let ctx = format!("rule {rule} seed {seed} step {step} now {now:?} cost {c}");
                let d1 = (tb.try_acquire(&mut s1, now, c), observe(&tb, &s1, now));
                let d2 = (lb.try_acquire(&mut s2, now, c), observe(&lb, &s2, now));
                let d3 = (gcra.try_acquire(&mut s3, now, c), observe(&gcra, &s3, now));
                assert_eq!(d1, d2, "token vs leaky: {ctx}");
                assert_eq!(d2, d3, "leaky vs gcra: {ctx}");
                now = now + Nanos::new(gap(&mut rng, window));
            }
        }
    }
}

/// A deliberately broken policy (it forgets to consume) must fail the suite: proof that
/// the conformance properties can fail.
#[test]
#[should_panic(expected = "passed with remaining")]
fn the_suite_catches_a_policy_that_does_not_consume() {
    #[derive(Clone)]
    struct Leaky(FixedWindow);
    impl Algorithm for Leaky {
        type State = <FixedWindow as Algorithm>::State;
        fn name(&self) -> &str {
            "broken"
        }
        fn rule(&self) -> &Rule {
            self.0.rule()
        }
        fn capacity(&self) -> u64 {
            self.0.capacity()
        }
        fn new_state(&self, now: Nanos) -> Self::State {
            self.0.new_state(now)
        }
        fn try_acquire(&self, state: &mut Self::State, now: Nanos, cost: u64) -> bool {
            self.0.retry_after(state, now, cost) == Some(Nanos::ZERO) // checks, never consumes
        }
        fn remaining(&self, state: &Self::State, now: Nanos) -> u64 {
            self.0.remaining(state, now)
        }
        fn retry_after(&self, state: &Self::State, now: Nanos, cost: u64) -> Option<Nanos> {
            self.0.retry_after(state, now, cost)
        }
        fn reset_after(&self, state: &Self::State, now: Nanos) -> Nanos {
            self.0.reset_after(state, now)
        }
    }
    after_remaining_k_exactly_k_back_to_back_requests_pass(|rule| Leaky(FixedWindow::new(rule)));
}
