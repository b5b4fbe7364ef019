//! Packed states: a limiter stores a bucket's or GCRA's state in two words when the
//! rule's largest level (`burst × window`) fits in a `u64`, and the algorithm's own
//! `u128` state otherwise. Both must decide exactly as the algorithm does on a state of
//! its own, on either side of the boundary where the packed form stops fitting.

use proptest::prelude::*;
use ratesim::{
    Algorithm, Clock, FakeClock, Gcra, LeakyBucket, Nanos, RateLimiter, Rule, TokenBucket,
};

/// `burst × window` = `u64::MAX`: the largest rule that packs.
fn largest_packed() -> Rule {
    Rule::new(1, Nanos::new(u64::MAX)).unwrap()
}

/// `burst × window` = 2⁶⁴: the smallest rule that does not.
fn smallest_wide() -> Rule {
    Rule::new(2, Nanos::new(1 << 63)).unwrap()
}

/// `burst × window` = 2⁶⁴ − 2: packs, with a burst above 1 and a rate above 1 per window.
fn packed_burst_of_two() -> Rule {
    Rule::new(2, Nanos::new((1 << 63) - 1)).unwrap()
}

/// A step of a request stream: the clock moves (forwards, or backwards when `back`) and
/// a request of `cost` arrives.
#[derive(Debug, Clone, Copy)]
struct Step {
    by: u64,
    back: bool,
    cost: u64,
}

/// Runs `steps` through a keyed limiter and, side by side, through the algorithm on a
/// state of its own, and asserts every decision and the state after it are the same.
fn limiter_matches_the_bare_algorithm<A: Algorithm + Clone>(
    algorithm: A,
    start: u64,
    steps: &[Step],
) where
    A::State: PartialEq + std::fmt::Debug,
{
    let clock = FakeClock::new(Nanos::new(start));
    let limiter: RateLimiter<A, u32, FakeClock> =
        RateLimiter::with_clock(algorithm.clone(), clock.clone());
    // The limiter creates a key's state at its first request.
    let mut bare: Option<A::State> = None;
    for (i, step) in steps.iter().enumerate() {
        let now = clock.now().as_u64();
        clock.set(Nanos::new(if step.back {
            now.saturating_sub(step.by)
        } else {
            now.saturating_add(step.by)
        }));
        let now = clock.now();
        let cost = step.cost.min(algorithm.capacity());
        let bare = bare.get_or_insert_with(|| algorithm.new_state(now));
        let expected = algorithm.try_acquire(bare, now, cost);
        let got = limiter.try_acquire_n(&7, cost).unwrap();
        assert_eq!(got.allowed, expected, "step {i} at {now:?}, cost {cost}");
        assert_eq!(
            got.remaining,
            algorithm.remaining(bare, now),
            "step {i} at {now:?}"
        );
        assert_eq!(
            got.reset_after,
            algorithm.reset_after(bare, now),
            "step {i} at {now:?}"
        );
        if !expected {
            assert_eq!(
                Some(got.retry_after),
                algorithm.retry_after(bare, now, cost),
                "step {i} at {now:?}"
            );
        }
        assert_eq!(limiter.snapshot(&7).as_ref(), Some(&*bare), "step {i}");
    }
}

/// A stream that drains the whole burst at once, waits part of a window, goes back in
/// time, then refills for longer than a window.
fn boundary_steps(rule: &Rule) -> Vec<Step> {
    let w = rule.window().as_u64();
    let b = rule.burst();
    vec![
        Step {
            by: 0,
            back: false,
            cost: b,
        },
        Step {
            by: 1,
            back: false,
            cost: 1,
        },
        Step {
            by: w / 3,
            back: false,
            cost: 1,
        },
        Step {
            by: w / 5,
            back: true,
            cost: 1,
        },
        Step {
            by: w / 2,
            back: false,
            cost: b,
        },
        Step {
            by: w,
            back: false,
            cost: b,
        },
        Step {
            by: w,
            back: true,
            cost: 1,
        },
        Step {
            by: u64::MAX,
            back: false,
            cost: b,
        },
        Step {
            by: 1,
            back: false,
            cost: 1,
        },
    ]
}

#[test]
fn the_bucket_family_and_gcra_pack_exactly_when_burst_times_window_fits_in_a_u64() {
    for (rule, packs) in [
        (largest_packed(), true),
        (packed_burst_of_two(), true),
        (smallest_wide(), false),
        (Rule::new(u64::MAX, Nanos::new(u64::MAX)).unwrap(), false),
        (Rule::new(100, Nanos::from_secs(1)).unwrap(), true),
    ] {
        assert_eq!(TokenBucket::new(rule).packs(), packs, "{rule:?}");
        assert_eq!(LeakyBucket::new(rule).packs(), packs, "{rule:?}");
        assert_eq!(Gcra::new(rule).packs(), packs, "{rule:?}");
    }
}

#[test]
fn a_full_bucket_at_the_largest_packed_rule_round_trips_through_two_words() {
    let rule = largest_packed();
    let bucket = TokenBucket::new(rule);
    // A fresh token bucket holds its whole capacity: u64::MAX units.
    let full = bucket.new_state(Nanos::new(u64::MAX));
    assert_eq!(bucket.unpack(bucket.pack(&full)), full);
    let leaky = LeakyBucket::new(rule);
    let mut brim = leaky.new_state(Nanos::ZERO);
    assert!(
        leaky.try_acquire(&mut brim, Nanos::ZERO, 1),
        "fills to the brim"
    );
    assert_eq!(leaky.unpack(leaky.pack(&brim)), brim);
    let gcra = Gcra::new(rule);
    let mut ahead = gcra.new_state(Nanos::ZERO);
    assert!(gcra.try_acquire(&mut ahead, Nanos::ZERO, 1));
    assert_eq!(gcra.unpack(gcra.pack(&ahead)), ahead);
}

#[test]
fn a_packed_and_a_wide_limiter_decide_as_the_algorithm_on_either_side_of_the_boundary() {
    for rule in [largest_packed(), packed_burst_of_two(), smallest_wide()] {
        for start in [0, 1 << 40, u64::MAX - 1] {
            let steps = boundary_steps(&rule);
            limiter_matches_the_bare_algorithm(TokenBucket::new(rule), start, &steps);
            limiter_matches_the_bare_algorithm(LeakyBucket::new(rule), start, &steps);
            limiter_matches_the_bare_algorithm(Gcra::new(rule), start, &steps);
        }
    }
}

#[test]
fn a_backwards_clock_refills_nothing_in_a_packed_limiter() {
    let rule = Rule::new(1, Nanos::from_secs(10)).unwrap();
    let clock = FakeClock::new(Nanos::from_secs(100));
    let limiter: RateLimiter<Gcra, u32, FakeClock> =
        RateLimiter::with_clock(Gcra::new(rule), clock.clone());
    assert!(limiter.algorithm().packs());
    assert!(limiter.try_acquire(&1).allowed);
    clock.set(Nanos::from_secs(50));
    let denied = limiter.try_acquire(&1);
    assert!(!denied.allowed, "going back 50 s must not refill");
    clock.set(Nanos::from_secs(110) - Nanos::new(1));
    assert!(!limiter.try_acquire(&1).allowed, "at 110 s − 1 ns");
    clock.set(Nanos::from_secs(110));
    assert!(limiter.try_acquire(&1).allowed, "at exactly 110 s");
}

fn step() -> impl Strategy<Value = Step> {
    (0..4u8, any::<bool>(), 0..4u64).prop_map(|(scale, back, cost)| Step {
        by: [0, 1, 1 << 20, 1 << 62][scale as usize],
        back,
        cost,
    })
}

proptest! {
    #[test]
    fn random_streams_decide_the_same_packed_or_wide(
        steps in proptest::collection::vec(step(), 1..40),
        which in 0..3usize,
        start in any::<u64>(),
    ) {
        let rule = [largest_packed(), packed_burst_of_two(), smallest_wide()][which];
        limiter_matches_the_bare_algorithm(TokenBucket::new(rule), start, &steps);
        limiter_matches_the_bare_algorithm(LeakyBucket::new(rule), start, &steps);
        limiter_matches_the_bare_algorithm(Gcra::new(rule), start, &steps);
    }
}
