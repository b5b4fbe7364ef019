//! Inputs found by fuzzing (`fuzz/`), or by reading the code while writing the fuzz
//! targets, replayed through the public API so `cargo test` keeps them fixed. Each test
//! says where it came from and what went wrong.

use std::path::Path;

use ratesim::sim::{self, NoopSink, RunOptions, Scenario, TraceReader};
use ratesim::{Algorithm, FakeClock, Gcra, LeakyBucket, Nanos, ParseTimeError, RateLimiter, Rule};

/// fuzz target `algorithm_ops`: GCRA scales time by `max_requests`, and near
/// `u64::MAX` the TAT update `tat + cost·W` saturates at `u128::MAX`, so the
/// "over the limit?" test sees a smaller excess than the real one.
/// Found as: max_requests = u64::MAX − 133, window = 2⁵⁸ ns, burst = max_requests,
/// now = u64::MAX − 189 ns, cost = u64::MAX − 90 (above the burst) → admitted while
/// `retry_after` says `None` (can never fit).
#[test]
fn gcra_never_admits_a_cost_above_its_burst_near_the_end_of_time() {
    let rule = Rule::new(u64::MAX, Nanos::new(1 << 63))
        .unwrap()
        .with_burst(4)
        .unwrap();
    let gcra = Gcra::new(rule);
    let mut state = gcra.new_state(Nanos::MAX);
    assert_eq!(gcra.retry_after(&state, Nanos::MAX, 5), None);
    assert!(
        !gcra.try_acquire(&mut state, Nanos::MAX, 5),
        "cost 5 > burst 4 admitted at Nanos::MAX"
    );
}

/// fuzz target `algorithm_ops`, same root cause, through the keyed limiter (which
/// rejects cost > capacity up front): once the saturated TAT sits at `u128::MAX`,
/// every further request at the same instant passes.
#[test]
fn gcra_admits_at_most_burst_requests_at_one_instant_near_the_end_of_time() {
    let rule = Rule::new(u64::MAX, Nanos::new(1 << 63))
        .unwrap()
        .with_burst(4)
        .unwrap();
    let clock = FakeClock::new(Nanos::MAX);
    let limiter = RateLimiter::with_clock(Gcra::new(rule), clock);
    let allowed = (0..10).filter(|_| limiter.allow("k")).count();
    assert_eq!(allowed, 4, "burst 4 at clock {:?}", Nanos::MAX);
}

fn run_scenario(text: &str) -> Result<ratesim::sim::RunReport, Box<dyn std::error::Error>> {
    let scenario = Scenario::parse(text, Path::new("regression.toml"))?;
    scenario.validate()?;
    Ok(sim::run(&scenario, &RunOptions::default(), &mut |_| {
        Ok(Box::new(NoopSink))
    })?)
}

/// Found by reading `traffic.rs` while writing the `scenario` target (10 minutes of
/// fuzzing did not reach it): `on + off` was added in `u64`, so periods summing past
/// ~584 years panicked with an overflow (debug) or wrapped (release).
#[test]
fn on_off_periods_whose_sum_overflows_u64_do_not_panic() {
    let text = r#"
        name = "x"
        duration = "10s"
        algorithms = ["fixed_window"]
        [limit]
        max_requests = 5
        window = "10s"
        [[traffic]]
        kind = "on_off"
        rate = 1
        on = "10000000000s"
        off = "10000000000s"
    "#;
    let report = run_scenario(text).unwrap();
    assert!(report.algorithms[0].metrics.requests > 0);
}

/// Found by reading the parser while writing the `trace` and `scenario` targets:
/// an integer part just below `u128::MAX / 10⁹` plus a fraction overflowed the `u128`
/// sum (a panic in debug builds, a silently tiny duration in release builds).
#[test]
fn a_decimal_just_below_the_u128_limit_is_too_large_not_an_overflow() {
    let text = "340282366920938463463374607431.9";
    assert_eq!(
        Nanos::parse_decimal_secs(text),
        Err(ParseTimeError::TooLarge(text.to_string()))
    );
    let with_unit = format!("{text}s");
    assert!(matches!(
        Nanos::parse_duration(&with_unit),
        Err(ParseTimeError::TooLarge(_))
    ));
}

#[test]
fn a_scenario_duration_just_below_the_u128_limit_is_a_positioned_error() {
    let text = "name = \"x\"\nduration = \"340282366920938463463374607431.9s\"\n\
                [limit]\nmax_requests = 5\nwindow = \"10s\"\n\
                [[traffic]]\nkind = \"uniform\"\nrate = 1\n";
    let err = Scenario::parse(text, Path::new("s.toml")).unwrap_err();
    assert_eq!(err.position, Some((2, 12)), "{err}");
    assert!(err.message.contains("too large"), "{err}");
}

#[test]
fn a_trace_time_just_below_the_u128_limit_is_an_error_on_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.csv");
    std::fs::write(&path, "0,a\n340282366920938463463374607431.9,b\n").unwrap();
    let mut reader = TraceReader::open(&path).unwrap();
    assert!(reader.next_row().unwrap().is_some());
    let err = reader.next_row().unwrap_err();
    assert_eq!(err.position, Some((2, 1)), "{err}");
    assert!(err.message.contains("too large"), "{err}");
}

/// `parse_duration` listed `µs` as a unit but split the text at the first ASCII
/// letter, so `"5µs"` read as the number `5µ` with unit `s` and was rejected.
#[test]
fn microseconds_can_be_written_with_the_micro_sign() {
    assert_eq!(Nanos::parse_duration("5µs"), Ok(Nanos::new(5_000)));
    assert_eq!(Nanos::parse_duration("5us"), Ok(Nanos::new(5_000)));
}

/// fuzz target `algorithm_ops`: `LeakyBucket::retry_after` computes the overflow as
/// `water.saturating_add(pour) − cap`; near `u128::MAX` the sum saturates and the
/// advised wait comes out far too short. Found as: max_requests = window =
/// u64::MAX − 1, a full bucket, cost = capacity → `retry_after` 5 ns, denied then.
#[test]
fn leaky_bucket_retry_after_is_exact_for_a_full_bucket_with_huge_parameters() {
    let rule = Rule::new(u64::MAX, Nanos::new(u64::MAX)).unwrap();
    let bucket = LeakyBucket::new(rule);
    let mut state = bucket.new_state(Nanos::ZERO);
    assert!(bucket.try_acquire(&mut state, Nanos::ZERO, u64::MAX));
    let wait = bucket
        .retry_after(&state, Nanos::ZERO, u64::MAX)
        .expect("cost = capacity can fit");
    let mut later = state.clone();
    assert!(
        bucket.try_acquire(&mut later, wait, u64::MAX),
        "retry_after said {wait:?}, but the request is denied then (the full bucket drains \
         in u64::MAX ns)"
    );
}
