//! Differential test: the `governor` preset against the governor crate itself, driven by
//! its `FakeRelativeClock`, over traces with off-grid instants, `W / N` not a whole
//! number of nanoseconds, same-instant arrivals, boundary bursts and costs. Every
//! decision must be identical, and so must every wait governor reports.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, FakeRelativeClock};
use governor::{Quota, RateLimiter};
use ratesim::presets::Governor;
use ratesim::{Algorithm, Nanos, Registry, Rule};

/// A small deterministic generator (xorshift64*), so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One arrival: the gap since the previous one, and its cost.
type Step = (u64, u64);

/// Gaps mixing same-instant arrivals, off-grid odd nanoseconds, gaps of exactly the
/// floored period and of the exact period rounded up, and idle stretches; costs from 1
/// to one above the burst.
fn trace(rng: &mut Rng, rule: &Rule, len: usize) -> Vec<Step> {
    let w = rule.window().as_u64();
    let n = rule.max_requests();
    let floored = w / n;
    (0..len)
        .map(|_| {
            let gap = match rng.below(8) {
                0 | 1 => 0,
                2 => floored,
                3 => w.div_ceil(n),
                4 => rng.below(floored.max(1) * 2) | 1,
                5 => floored.saturating_sub(1),
                6 => w + rng.below(3),
                _ => rng.below(w / 3 + 1),
            };
            let cost = if rng.below(5) == 0 {
                1 + rng.below(rule.burst() + 1)
            } else {
                1
            };
            (gap, cost)
        })
        .collect()
}

/// Runs `steps` through the real governor and the preset; returns how many decisions
/// were compared, failing at the first difference in a decision or a wait.
fn compare(rule: Rule, steps: &[Step]) -> usize {
    let period = rule.window().as_u64() / rule.max_requests();
    let quota = Quota::with_period(Duration::from_nanos(period))
        .expect("period of at least 1 ns")
        .allow_burst(NonZeroU32::new(u32::try_from(rule.burst()).unwrap()).unwrap());
    let clock = FakeRelativeClock::default();
    let real = RateLimiter::direct_with_clock(quota, clock.clone());
    let preset = Governor::new(rule);
    let mut state = preset.new_state(Nanos::ZERO);
    let mut now = 0u64;
    for (i, &(gap, cost)) in steps.iter().enumerate() {
        clock.advance(Duration::from_nanos(gap));
        now += gap;
        let at = Nanos::new(now);
        let wait = preset.retry_after(&state, at, cost);
        let passed = preset.try_acquire(&mut state, at, cost);
        let n = NonZeroU32::new(u32::try_from(cost).unwrap()).unwrap();
        let context = format!("{rule:?}, step {i}, t = {now} ns, cost {cost}");
        match real.check_n(n) {
            Err(_insufficient) => {
                assert!(!passed, "{context}: governor says never, the preset passed");
                assert_eq!(wait, None, "{context}: governor says never");
            }
            Ok(Ok(())) => {
                assert!(passed, "{context}: governor passed, the preset denied");
                assert_eq!(wait, Some(Nanos::ZERO), "{context}");
            }
            Ok(Err(not_until)) => {
                assert!(!passed, "{context}: governor denied, the preset passed");
                let real_wait = not_until.wait_time_from(clock.now());
                let real_wait = u64::try_from(real_wait.as_nanos()).unwrap();
                assert_eq!(wait, Some(Nanos::new(real_wait)), "{context}: the wait");
            }
        }
    }
    steps.len()
}

fn rules() -> Vec<Rule> {
    let r = |n: u64, w: Nanos, b: u64| Rule::new(n, w).unwrap().with_burst(b).unwrap();
    vec![
        r(3, Nanos::from_secs(1), 3),   // W/N = 333_333_333.3 ns
        r(7, Nanos::from_secs(1), 2),   // 142_857_142.86 ns
        r(5, Nanos::from_secs(4), 5),   // whole: 800 ms
        r(3, Nanos::new(10), 1),        // 3.3 ns: a third short
        r(9, Nanos::new(1_000), 4),     // 111.1 ns
        r(606, Nanos::from_secs(1), 1), // the 606 ns short in a wait
        r(100, Nanos::from_secs(60), 100),
    ]
}

#[test]
fn every_decision_and_every_wait_matches_governor() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut compared = 0;
    for rule in rules() {
        for _ in 0..20 {
            let steps = trace(&mut rng, &rule, 400);
            compared += compare(rule, &steps);
        }
    }
    assert_eq!(compared, 7 * 20 * 400);
}

#[test]
fn a_boundary_burst_off_the_grid_admits_one_more_than_the_exact_bound() {
    // 3 per 1 s, burst 1: T floors to 333_333_333 ns; at t = 1 s − 1 ns the fourth
    // request passes where the exact interval (1/3 s) would refuse it.
    let rule = Rule::new(3, Nanos::from_secs(1))
        .unwrap()
        .with_burst(1)
        .unwrap();
    let steps: Vec<Step> = vec![(0, 1), (333_333_333, 1), (333_333_333, 1), (333_333_333, 1)];
    assert_eq!(compare(rule, &steps), 4);
    let preset = Governor::new(rule);
    let mut g = preset.new_state(Nanos::ZERO);
    let admitted = [0, 333_333_333, 666_666_666, 999_999_999]
        .into_iter()
        .filter(|&t| preset.try_acquire(&mut g, Nanos::new(t), 1))
        .count() as u64;
    let bound = Registry::default().entry("gcra").unwrap().worst_case(&rule);
    assert_eq!(admitted, 4, "four inside one second under governor");
    assert_eq!(
        bound,
        Some(3),
        "where the exact GCRA admits at most B + N − 1 = 3"
    );
}

#[test]
fn the_presets_group_names_governor_and_all_does_not() {
    let registry = Registry::standard();
    let presets = registry.resolve(&["presets"]).unwrap();
    assert!(presets.iter().any(|n| n == "governor"), "{presets:?}");
    let all = registry.resolve(&["all"]).unwrap();
    assert_eq!(
        all.len(),
        6,
        "`all` keeps meaning the six textbook algorithms: {all:?}"
    );
    assert!(registry.entry("governor").unwrap().is_preset());
}
