//! The `envoy` and `envoy_local` presets against the worked examples their peers
//! document in their own tests (issue 28). There is no Envoy and no ratelimit service
//! on our machines, so no decision is compared with a running peer: each case below is
//! an example from the peer's repository, with its numbers, replayed through the
//! preset.
//!
//! - `envoy`: envoyproxy/ratelimit's `test/redis/fixed_cache_impl_test.go`
//!   (`TestRedis`, `TestNearLimit`, `TestOverLimitWithLocalCache`): the cache key's
//!   window start (`now / unit · unit`), the decision on the count *after* adding the
//!   hits, `LimitRemaining`, and `DurationUntilReset` (`unit − now % unit`).
//! - `envoy_local`: envoyproxy/envoy's
//!   `test/extensions/filters/common/local_ratelimit/local_ratelimit_test.cc`, the
//!   timer-based cases (`TokenBucket`, `TokenBucketMultipleTokensPerFill`,
//!   `TokenBucketMaxTokensGreaterThanTokensPerFill`, `TokenBucketStatus`,
//!   `TooFastFillRate`), whose fill timer fires at every `fill_interval` after start.

use proptest::prelude::*;
use ratesim::presets::{EnvoyLocal, EnvoyRateLimit, unit_of};
use ratesim::{Algorithm, Nanos, Registry, Rule};

fn secs(s: u64) -> Nanos {
    Nanos::from_secs(s)
}

fn ms(m: u64) -> Nanos {
    Nanos::from_millis(m)
}

/// The service with `requests_per_unit` and a unit of `unit_secs`, its key at `now`
/// (whole seconds) holding `before` hits already.
fn service_with(
    requests_per_unit: u64,
    unit_secs: u64,
    now: u64,
    before: u64,
) -> (EnvoyRateLimit, ratesim::presets::EnvoyState) {
    let e = EnvoyRateLimit::new(Rule::new(requests_per_unit, secs(unit_secs)).unwrap());
    let mut s = e.new_state(Nanos::ZERO);
    // The hits already counted in the key (the mock's INCRBY answer minus this one).
    for _ in 0..before {
        e.try_acquire(&mut s, secs(now), 1);
    }
    (e, s)
}

/// `(requests_per_unit, unit in s, now in s, count before, hits, OK?, LimitRemaining,
/// DurationUntilReset in s)`.
type ServiceExample = (u64, u64, u64, u64, u64, bool, u64, u64);

/// Each from fixed_cache_impl_test.go.
const SERVICE_EXAMPLES: [ServiceExample; 11] = [
    // TestRedis: 10/s, INCRBY 1 answers 5.
    (10, 1, 1_234, 4, 1, true, 5, 1),
    // TestRedis: 10/min, key ..._1200, INCRBY 1 answers 11.
    (10, 60, 1_234, 10, 1, false, 0, 26),
    // TestRedis: 10/day at 1,000,000 s, key ..._950400, INCRBY 1 answers 13.
    (10, 86_400, 1_000_000, 12, 1, false, 0, 36_800),
    // TestNearLimit: 15/hour, key ..._997200: 11, then 13, then 16.
    (15, 3_600, 1_000_000, 10, 1, true, 4, 800),
    (15, 3_600, 1_000_000, 12, 1, true, 2, 800),
    (15, 3_600, 1_000_000, 15, 1, false, 0, 800),
    // TestNearLimit, hits_addend > 1: 20/s +3 → 5; 8/s +2 → 7; 20/s +3 → 19.
    (20, 1, 1_234, 2, 3, true, 15, 1),
    (8, 1, 1_234, 5, 2, true, 1, 1),
    (20, 1, 1_234, 16, 3, true, 1, 1),
    // Over the limit: 20/s +3 → 22, 20/s +7 → 22 (from 15); 10/s +3 → 30 (from 27).
    (20, 1, 1_234, 19, 3, false, 0, 1),
    (10, 1, 1_234, 27, 3, false, 0, 1),
];

#[test]
fn envoy_decides_on_the_count_after_adding_the_hits_as_the_service_tests_say() {
    for (i, &(n, unit, now, before, hits, ok, remaining, reset)) in
        SERVICE_EXAMPLES.iter().enumerate()
    {
        let (e, mut s) = service_with(n, unit, now, before);
        let case = format!("example {i}: {n} per {unit} s, {before} + {hits} at {now} s");
        assert_eq!(e.try_acquire(&mut s, secs(now), hits), ok, "{case}");
        assert_eq!(
            e.remaining(&s, secs(now)),
            remaining,
            "{case}: LimitRemaining"
        );
        assert_eq!(e.reset_after(&s, secs(now)), secs(reset), "{case}: reset");
    }
}

#[test]
fn envoy_keys_its_windows_on_the_epoch_as_the_cache_key_does() {
    // `now / divider · divider`: 1,234 s is in the minute from 1,200 s, and
    // 1,000,000 s in the hour from 997,200 s and the day from 950,400 s.
    for (unit, now, start) in [
        (60, 1_234, 1_200),
        (3_600, 1_000_000, 997_200),
        (86_400, 1_000_000, 950_400),
    ] {
        let (e, mut s) = service_with(1, unit, now, 0);
        assert!(e.try_acquire(&mut s, secs(now), 1));
        assert!(!e.try_acquire(&mut s, secs(start + unit) - Nanos::new(1), 1));
        assert!(e.try_acquire(&mut s, secs(start + unit), 1), "the next key");
    }
}

#[test]
fn envoy_can_only_be_configured_in_the_services_units() {
    let units = [
        (1, "second"),
        (60, "minute"),
        (3_600, "hour"),
        (86_400, "day"),
        (604_800, "week"),
        (2_592_000, "month"),
        (31_536_000, "year"),
    ];
    for (s, name) in units {
        assert_eq!(unit_of(secs(s)), Some(name));
        let rule = Rule::new(5, secs(s)).unwrap();
        assert_eq!(ratesim::presets::refusal("envoy", &rule), None);
    }
    for w in [secs(10), ms(1_500), secs(120), secs(86_401)] {
        assert_eq!(unit_of(w), None, "{w}");
        let rule = Rule::new(5, w).unwrap();
        let why = ratesim::presets::refusal("envoy", &rule).expect("refused");
        assert!(why.contains(&format!("per {w}")), "{why}");
    }
}

/// The local filter with `fill_interval`, `max_tokens`, `tokens_per_fill`, as Envoy's
/// tests write its constructor.
fn local(fill_interval: Nanos, max_tokens: u64, tokens_per_fill: u64) -> EnvoyLocal {
    let rule = Rule::new(tokens_per_fill, fill_interval)
        .unwrap()
        .with_burst(max_tokens)
        .unwrap();
    EnvoyLocal::new(rule)
}

/// Replays `(instant, expected decision)` pairs on one key from the start.
fn replay(e: &EnvoyLocal, steps: &[(Nanos, bool)]) {
    let mut s = e.new_state(Nanos::ZERO);
    for (i, &(t, ok)) in steps.iter().enumerate() {
        assert_eq!(e.try_acquire(&mut s, t, 1), ok, "step {i} at {t:?}");
    }
}

#[test]
fn envoy_local_token_bucket_as_envoys_timer_tests_say() {
    // TokenBucket (200 ms, 1, 1): 1 → 0; the timer fills 1; two fills cap at 1.
    let e = local(ms(200), 1, 1);
    replay(
        &e,
        &[
            (ms(0), true),
            (ms(0), false),
            (ms(0), false),
            (ms(200), true),
            (ms(200), false),
            (ms(600), true),
            (ms(600), false),
        ],
    );
    // TokenBucketMultipleTokensPerFill (200 ms, 2, 2).
    let e = local(ms(200), 2, 2);
    replay(
        &e,
        &[
            (ms(0), true),
            (ms(0), true),
            (ms(0), false),
            (ms(200), true),
            (ms(400), true),
            (ms(400), true),
            (ms(400), false),
        ],
    );
    // TokenBucketMaxTokensGreaterThanTokensPerFill (200 ms, 2, 1).
    let e = local(ms(200), 2, 1);
    replay(
        &e,
        &[
            (ms(0), true),
            (ms(0), true),
            (ms(0), false),
            (ms(200), true),
            (ms(200), false),
        ],
    );
}

#[test]
fn envoy_local_status_counts_down_to_the_next_fill() {
    // TokenBucketStatus (3000 ms, 2, 2): remaining tokens, and the time to the next fill
    // (x-ratelimit-reset) after each request.
    let e = local(ms(3_000), 2, 2);
    let mut s = e.new_state(Nanos::ZERO);
    assert!(e.try_acquire(&mut s, secs(0), 1));
    assert_eq!(e.remaining(&s, secs(0)), 1);
    assert_eq!(e.reset_after(&s, secs(0)), secs(3));
    assert!(e.try_acquire(&mut s, secs(1), 1));
    assert_eq!(e.remaining(&s, secs(1)), 0);
    assert_eq!(e.retry_after(&s, secs(1), 1), Some(secs(2)));
    assert!(!e.try_acquire(&mut s, secs(2), 1));
    assert_eq!(e.retry_after(&s, secs(2), 1), Some(secs(1)));
    assert_eq!(e.remaining(&s, secs(3)), 2, "the fill at 3 s");
}

#[test]
fn envoy_local_refuses_a_fill_interval_under_50ms_as_envoy_does() {
    // TooFastFillRate: 49 ms throws "local rate limit token bucket fill timer must be
    // >= 50ms"; 50 ms is accepted.
    let rule = |m| Rule::new(1, ms(m)).unwrap().with_burst(100).unwrap();
    let why = ratesim::presets::refusal("envoy_local", &rule(49)).expect("refused");
    assert!(why.contains("fill timer must be >= 50ms"), "{why}");
    assert_eq!(ratesim::presets::refusal("envoy_local", &rule(50)), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The algorithm contract for the presets of this branch: `retry_after` and
    /// `reset_after` exact to the nanosecond (the request passes at the wait, not 1 ns
    /// before), and no panic on any time or cost.
    #[test]
    fn waits_are_exact_for_haproxy_envoy_and_envoy_local(
        max in 1u64..6,
        burst in 1u64..8,
        window in prop_oneof![Just(999_983u64), Just(1_000_000_000), Just(60_000_000_000), Just(50_000_000), Just(2_500_000_001)],
        ops in proptest::collection::vec((0u64..3_000_000_000, 0u64..8), 1..60),
    ) {
        let rule = Rule::new(max, Nanos::new(window)).unwrap().with_burst(burst).unwrap();
        for name in ["haproxy", "envoy", "envoy_local"] {
            let a = Registry::standard().create(name, rule).unwrap();
            let mut now = Nanos::new(1_000_000);
            let mut s = a.new_state(now);
            for &(gap, cost) in &ops {
                now = now + Nanos::new(gap);
                let wait = a.retry_after(&s, now, cost);
                if let Some(w) = wait.filter(|w| *w > Nanos::ZERO) {
                    prop_assert!(a.try_acquire(&mut s.clone(), now + w, cost), "{name}: not at the wait");
                    prop_assert!(!a.try_acquire(&mut s.clone(), now + w - Nanos::new(1), cost), "{name}: 1 ns early");
                }
                let reset = a.reset_after(&s, now);
                prop_assert_eq!(a.remaining(&s, now + reset), a.capacity(), "{} after reset", name);
                if reset > Nanos::ZERO {
                    prop_assert!(a.remaining(&s, now + reset - Nanos::new(1)) < a.capacity());
                }
                let allowed = a.try_acquire(&mut s, now, cost);
                prop_assert_eq!(allowed, wait == Some(Nanos::ZERO), "{}: decision vs wait", name);
            }
        }
    }
}
