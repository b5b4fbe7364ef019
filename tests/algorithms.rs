//! What is specific to each algorithm: exact boundaries, the seed's documented numbers,
//! and huge values. The shared properties live in `conformance.rs`.

use ratesim::{
    Algorithm, BoxedAlgorithm, Decision, FakeClock, FixedWindow, Gcra, LeakyBucket, Nanos,
    RateLimiter, Registry, Rule, SlidingWindowCounter, SlidingWindowLog, TokenBucket,
};

fn rule(max: u64, window: Nanos) -> Rule {
    Rule::new(max, window).unwrap()
}

fn limiter(name: &str, rule: Rule) -> (RateLimiter<BoxedAlgorithm, String, FakeClock>, FakeClock) {
    let clock = FakeClock::new(Nanos::ZERO);
    let algorithm = Registry::default().create(name, rule).unwrap();
    (RateLimiter::with_clock(algorithm, clock.clone()), clock)
}

fn at(
    clock: &FakeClock,
    limiter: &RateLimiter<BoxedAlgorithm, String, FakeClock>,
    t: Nanos,
) -> Decision {
    clock.set(t);
    limiter.try_acquire("k")
}

#[test]
fn token_bucket_at_1_per_10s_polled_every_second_grants_the_next_request_at_exactly_10s() {
    let (l, clock) = limiter("token_bucket", rule(1, Nanos::from_secs(10)));
    assert!(at(&clock, &l, Nanos::ZERO).allowed);
    for s in 1..10 {
        let d = at(&clock, &l, Nanos::from_secs(s));
        assert!(!d.allowed, "t = {s} s");
        assert_eq!(d.retry_after, Nanos::from_secs(10 - s), "t = {s} s");
    }
    assert!(
        at(&clock, &l, Nanos::from_secs(10)).allowed,
        "t = 10 s exactly"
    );
}

#[test]
fn three_per_10s_refills_one_token_every_3_333333334_s_rounded_up() {
    // 10/3 s is not a whole number of nanoseconds: the wait rounds up, never down.
    for name in ["token_bucket", "leaky_bucket", "gcra"] {
        let (l, clock) = limiter(name, rule(3, Nanos::from_secs(10)));
        for _ in 0..3 {
            assert!(at(&clock, &l, Nanos::ZERO).allowed, "{name}");
        }
        let denied = at(&clock, &l, Nanos::ZERO);
        assert_eq!(denied.retry_after, Nanos::new(3_333_333_334), "{name}");
        assert!(
            !at(&clock, &l, Nanos::new(3_333_333_333)).allowed,
            "{name} at 1 ns early"
        );
        assert!(
            at(&clock, &l, Nanos::new(3_333_333_334)).allowed,
            "{name} on time"
        );
    }
}

#[test]
fn a_request_exactly_at_a_window_boundary_belongs_to_the_new_window() {
    let w = Nanos::from_secs(10);
    let (l, clock) = limiter("fixed_window", rule(1, w));
    assert!(
        at(&clock, &l, w - Nanos::new(1)).allowed,
        "last ns of window 0"
    );
    let d = at(&clock, &l, w - Nanos::new(1));
    assert_eq!(d.retry_after, Nanos::new(1), "window 1 starts 1 ns later");
    assert!(at(&clock, &l, w).allowed, "k·W is in window k");
    assert!(!at(&clock, &l, w + w - Nanos::new(1)).allowed);
    assert!(at(&clock, &l, w + w).allowed);
}

#[test]
fn a_sliding_log_entry_stops_counting_exactly_one_window_after_it_was_admitted() {
    let w = Nanos::from_secs(10);
    let (l, clock) = limiter("sliding_window_log", rule(2, w));
    let t0 = Nanos::from_millis(2_500);
    assert!(at(&clock, &l, t0).allowed);
    assert!(at(&clock, &l, t0 + Nanos::from_secs(1)).allowed);
    let d = at(&clock, &l, t0 + Nanos::from_secs(5));
    assert!(!d.allowed);
    assert_eq!(d.retry_after, Nanos::from_secs(5));
    assert!(
        !at(&clock, &l, t0 + w - Nanos::new(1)).allowed,
        "1 ns before expiry"
    );
    assert!(at(&clock, &l, t0 + w).allowed, "exactly W after admission");
    assert!(!at(&clock, &l, t0 + w).allowed, "only one entry expired");
}

#[test]
fn fixed_window_admits_twice_the_limit_across_a_boundary() {
    let w = Nanos::from_secs(10);
    let (l, clock) = limiter("fixed_window", rule(5, w));
    let before = w - Nanos::from_millis(100);
    let admitted_before = (0..5).filter(|_| at(&clock, &l, before).allowed).count();
    let admitted_after = (0..5).filter(|_| at(&clock, &l, w).allowed).count();
    assert_eq!(
        admitted_before + admitted_after,
        10,
        "2 × max inside 100 ms"
    );
    // The exact sliding log admits only max in the same span.
    let (log, clock) = limiter("sliding_window_log", rule(5, w));
    let admitted = (0..5).filter(|_| at(&clock, &log, before).allowed).count()
        + (0..5).filter(|_| at(&clock, &log, w).allowed).count();
    assert_eq!(admitted, 5);
}

#[test]
fn sliding_window_counter_weights_the_previous_window_by_its_overlap() {
    let w = Nanos::from_secs(10);
    let (l, clock) = limiter("sliding_window_counter", rule(5, w));
    for i in 0..5 {
        assert!(at(&clock, &l, Nanos::from_millis(500 * i)).allowed);
    }
    // The seed's demo: denied at 2.5 s, retry when 5·(1 − f) ≤ 4, i.e. f = 0.2 of window 1.
    let d = at(&clock, &l, Nanos::from_millis(2_500));
    assert_eq!(d.retry_after, Nanos::from_millis(9_500));
    // At 15 s: estimate = 5 · 0.5 + 0 = 2.5, so 2 more fit (2.5 + 2 ≤ 5) but not 3.
    clock.set(Nanos::from_secs(15));
    assert_eq!(l.peek("k").remaining, 2);
    assert!(at(&clock, &l, Nanos::from_secs(15)).allowed);
    assert!(at(&clock, &l, Nanos::from_secs(15)).allowed);
    assert!(!at(&clock, &l, Nanos::from_secs(15)).allowed);
}

#[test]
fn burst_sets_the_bucket_capacity_and_max_over_window_the_rate() {
    let r = rule(1, Nanos::from_secs(1)).with_burst(3).unwrap();
    for name in ["token_bucket", "leaky_bucket", "gcra"] {
        let (l, clock) = limiter(name, r);
        let admitted = (0..10)
            .filter(|_| at(&clock, &l, Nanos::ZERO).allowed)
            .count();
        assert_eq!(admitted, 3, "{name}: burst of 3");
        let d = at(&clock, &l, Nanos::ZERO);
        assert_eq!(
            d.retry_after,
            Nanos::from_secs(1),
            "{name}: 1 token per second"
        );
        assert_eq!(
            d.reset_after,
            Nanos::from_secs(3),
            "{name}: full again after 3 s"
        );
    }
}

#[test]
fn reset_after_is_the_wait_until_the_quota_is_full_again() {
    let w = Nanos::from_secs(10);
    let cases = [
        ("fixed_window", Nanos::from_secs(7)), // until the window ends at 10 s
        ("sliding_window_log", Nanos::from_secs(10)), // the entry at 3 s expires at 13 s
        ("sliding_window_counter", Nanos::from_secs(17)), // count becomes prev at 10, gone at 20
        ("token_bucket", Nanos::from_secs(2)), // one token at 0.5/s
    ];
    for (name, expected) in cases {
        let (l, clock) = limiter(name, rule(5, w));
        let d = at(&clock, &l, Nanos::from_secs(3));
        assert_eq!(d.reset_after, expected, "{name}");
    }
}

/// Every method on every algorithm with values at the edge of `u64`: no overflow panic,
/// and answers that still make sense.
#[test]
fn huge_values_neither_overflow_nor_panic() {
    let century = Nanos::from_secs(100 * 365 * 86_400);
    let near_max = u64::MAX - 1;
    let rules = [
        Rule::new(near_max, century).unwrap(),
        Rule::new(near_max, Nanos::MAX)
            .unwrap()
            .with_burst(u64::MAX)
            .unwrap(),
        Rule::new(1, century).unwrap(),
        Rule::new(u64::MAX, Nanos::new(1)).unwrap(),
        Rule::new(3, Nanos::MAX).unwrap(),
    ];
    let times = [
        Nanos::new(1 << 63),
        Nanos::new((1 << 63) + 12_345),
        Nanos::MAX - Nanos::new(1),
        Nanos::MAX,
    ];
    for rule in rules {
        for algorithm in Registry::default()
            .names()
            .map(str::to_string)
            .collect::<Vec<_>>()
        {
            let a = Registry::default().create(&algorithm, rule).unwrap();
            let ctx = format!("{algorithm} {rule}");
            let mut s = a.new_state(times[0]);
            assert!(a.try_acquire(&mut s, times[0], 1), "{ctx}: first request");
            assert_eq!(a.remaining(&s, times[0]), a.capacity() - 1, "{ctx}");
            for &t in &times {
                for cost in [
                    0,
                    1,
                    a.capacity() / 2,
                    a.capacity(),
                    a.capacity().saturating_add(1),
                ] {
                    let _ = a.try_acquire(&mut s, t, cost);
                    let _ = a.remaining(&s, t);
                    let _ = a.reset_after(&s, t);
                    let _ = a.is_idle(&s, t);
                    let wait = a.retry_after(&s, t, cost);
                    assert_eq!(wait.is_none(), cost > a.capacity(), "{ctx} cost {cost}");
                }
            }
        }
    }
}

#[test]
fn every_algorithm_can_be_built_directly_and_by_name() {
    let r = rule(5, Nanos::from_secs(10));
    let direct: [&dyn Fn() -> String; 6] = [
        &|| TokenBucket::new(r).name().to_string(),
        &|| LeakyBucket::new(r).name().to_string(),
        &|| FixedWindow::new(r).name().to_string(),
        &|| SlidingWindowLog::new(r).name().to_string(),
        &|| SlidingWindowCounter::new(r).name().to_string(),
        &|| Gcra::new(r).name().to_string(),
    ];
    let registry = Registry::default();
    let builtins = registry.entries().filter(|e| !e.is_preset());
    let names: Vec<&str> = builtins.map(|e| e.name()).collect();
    assert_eq!(names.len(), direct.len());
    for (build, name) in direct.iter().zip(&names) {
        assert_eq!(&build(), name);
        assert_eq!(registry.create(name, r).unwrap().name(), *name);
    }
}

#[test]
fn an_unknown_algorithm_name_lists_the_known_ones() {
    let err = Registry::default()
        .create("leaky_buckett", rule(1, Nanos::from_secs(1)))
        .unwrap_err();
    let message = err.to_string();
    for known in Registry::default().names() {
        assert!(message.contains(known), "{message}");
    }
    assert!(message.contains("leaky_buckett"), "{message}");
}

#[test]
fn registered_algorithms_are_created_and_resolved_by_all() {
    let mut registry = Registry::default();
    registry.register("strict_log", "A sliding log under another name.", |r| {
        BoxedAlgorithm::new(SlidingWindowLog::new(r))
    });
    let all = registry.resolve(&["all"]).unwrap();
    assert_eq!(all.last().map(String::as_str), Some("strict_log"));
    assert_eq!(all.len(), 7);
    let picked = registry.resolve(&["gcra", "fixed_window", "gcra"]).unwrap();
    assert_eq!(
        picked,
        ["gcra", "fixed_window"],
        "order kept, repeats dropped"
    );
    let algo = registry
        .create("strict_log", rule(2, Nanos::from_secs(1)))
        .unwrap();
    assert_eq!(algo.name(), "sliding_window_log");
}
