//! The Redis scripts against the in-memory algorithms, decision by decision: `allowed`,
//! `remaining`, `retry_after` and `reset_after` must be identical on random rules drawn
//! at and just inside the representable bound (and small ones), on instants near 0, near
//! 2^53 ns and near `u64::MAX`, with backwards steps and costs 0, 1, burst and burst + 1.
//! The in-memory side is `RateLimiter` on a `FakeClock`; the Redis side gets the same
//! instants as `Now::Caller`.

mod redis_support;

use ratesim::redis::{Now, RedisError, RedisStore, Scripted, Unrepresentable};
use ratesim::{FakeClock, Gcra, LeakyBucket, Nanos, RateLimiter, Rule, TokenBucket};

/// xorshift64: deterministic, so a failure names a reproducible stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform-ish in `0..m` (`m > 0`).
    fn below(&mut self, m: u64) -> u64 {
        self.next() % m
    }
}

const EXACT: u128 = 1 << 53;
const ELAPSED_MAX: u128 = 8_990_000_000_000_000;

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The largest burst the Redis store accepts for `max` per `w` ns: the bounds of
/// `src/redis/lua/bucket.lua`, restated here independently.
fn largest_burst(max: u64, w: u64) -> u128 {
    let g = gcd(max, w);
    let (m, u) = (u128::from(max / g), u128::from(w / g));
    let exact = EXACT.saturating_sub(m.max(u)) / u;
    let refill = ELAPSED_MAX * m / u; // ⌈b·u/m⌉ ≤ E ⇔ b·u ≤ E·m
    exact.min(refill).min(u128::from(u64::MAX))
}

fn rule(max: u64, w: u64, burst: u64) -> Rule {
    Rule::new(max, Nanos::new(w))
        .unwrap()
        .with_burst(burst)
        .unwrap()
}

/// A random rule: a window from 1 ns to a day, a max from 1 to 2^40, and a burst either
/// small or at / just inside the bound. `None` when no burst fits.
fn random_rule(rng: &mut Rng) -> Option<Rule> {
    let w = match rng.below(5) {
        0 => 1 + rng.below(1000),
        1 => 1 + rng.below(10_000_000_000),
        2 => 1_000_000_000,
        3 => 3_600_000_000_000,
        _ => 86_400_000_000_000,
    };
    let max = 1 + match rng.below(4) {
        0 => rng.below(10),
        1 => rng.below(100_000),
        2 => rng.below(1 << 40),
        _ => w.saturating_sub(1).min(1 << 40), // often a large gcd with w
    };
    let top = largest_burst(max, w);
    if top == 0 {
        return None;
    }
    let top = top as u64;
    let burst = match rng.below(3) {
        0 => top,                            // at the bound
        1 => top - rng.below(top.min(1000)), // just inside
        _ => 1 + rng.below(top.min(1000)),   // small
    };
    Some(rule(max, w, burst))
}

/// Runs `streams` random streams of `steps` decisions for the algorithm `make` builds.
fn differential<A: Scripted + Clone>(
    make: impl Fn(Rule) -> A,
    seed: u64,
    streams: usize,
    steps: usize,
) {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "diff").unwrap();
    let mut rng = Rng(seed);
    let (mut checked, mut at_bound) = (0u64, 0u64);
    for stream in 0..streams {
        let Some(rule) = random_rule(&mut rng) else {
            continue;
        };
        let algo = make(rule);
        let name = algo.name().to_owned();
        let redis = store.limiter(algo.clone()).unwrap();
        if u128::from(rule.burst()) == largest_burst(rule.max_requests(), rule.window().as_u64()) {
            at_bound += 1;
            // one unit past the bound is refused, and says which bound
            if let Ok(past) = rule.with_burst(rule.burst() + 1) {
                let refused: Unrepresentable = store.limiter(make(past)).unwrap_err();
                assert_eq!(refused.rule, past);
            }
        }
        let clock = FakeClock::new(Nanos::ZERO);
        let memory = RateLimiter::<A, String, FakeClock>::with_clock(algo, clock.clone());
        let key = format!("s{stream}");
        let w = rule.window().as_u64();
        let interval = w.div_ceil(rule.max_requests());
        let refill = u64::try_from(
            (u128::from(rule.burst()) * u128::from(w)).div_ceil(u128::from(rule.max_requests())),
        )
        .unwrap_or(u64::MAX);
        let mut now: u64 = match rng.below(4) {
            0 => rng.below(1000),
            1 => (1 << 53) - 500 + rng.below(1000),
            2 => rng.below(1 << 62),
            _ => u64::MAX - (1 << 50) - rng.below(1 << 50),
        };
        for _ in 0..steps {
            let step = match rng.below(6) {
                0 => 0,
                1 => rng.below(3),
                2 => rng.below(interval.saturating_add(2)),
                3 => rng.below(refill.saturating_add(2)),
                4 => rng.below(1 << 55),
                _ => interval.saturating_mul(rng.below(4)),
            };
            now = if rng.below(8) == 0 {
                now.saturating_sub(rng.below(1 << 40))
            } else {
                now.saturating_add(step)
            };
            let burst = rule.burst();
            let cost = match rng.below(6) {
                0 => 0,
                1 => burst,
                2 => burst.saturating_add(1),
                3 => 1 + rng.below(burst.min(1 << 20)),
                _ => 1,
            };
            clock.set(Nanos::new(now));
            let want = memory.try_acquire_n(&key, cost);
            let got = redis.try_acquire_n(&key, cost, Now::Caller(Nanos::new(now)));
            let got = match got {
                Ok(d) => Ok(d),
                Err(RedisError::InsufficientCapacity(e)) => Err(e),
                Err(other) => panic!("stream {stream}: redis failed: {other}"),
            };
            assert_eq!(
                got, want,
                "{name} stream {stream} (seed {seed}) rule {rule:?} now={now} cost={cost}"
            );
            checked += 1;
        }
    }
    println!(
        "{checked} identical decisions over {streams} streams ({at_bound} rules at the bound)"
    );
    assert!(checked > 0 && at_bound > 0);
}

#[test]
fn token_bucket_decides_as_in_memory() {
    differential(TokenBucket::new, 0x9E37_79B9_7F4A_7C15, 300, 150);
}

#[test]
fn leaky_bucket_decides_as_in_memory() {
    differential(LeakyBucket::new, 0xD1B5_4A32_D192_ED03, 300, 150);
}

#[test]
fn gcra_decides_as_in_memory() {
    differential(Gcra::new, 0x8CB9_2BA7_2F3D_8DD7, 300, 150);
}
