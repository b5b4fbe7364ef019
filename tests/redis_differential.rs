//! The Redis scripts against the in-memory algorithms, decision by decision: `allowed`,
//! `remaining`, `retry_after` and `reset_after` must be identical on random rules drawn
//! at and just inside the representable bound (and small ones), on instants near 0, near
//! 2^53 ns and near `u64::MAX`, with backwards steps and costs 0, 1, burst and burst + 1.
//! The in-memory side is `RateLimiter` on a `FakeClock`; the Redis side gets the same
//! instants as `Now::Caller`. Every algorithm, and composites of mixed algorithms
//! (`try_acquire_all`: the decision, which rule denied, each rule's view).

mod redis_support;

use std::time::Duration;

use ratesim::redis::{Now, RedisError, RedisLimiter, RedisStore, Scripted, Unrepresentable};
use ratesim::{
    Algorithm, BoxedAlgorithm, Composite, FakeClock, FixedWindow, Gcra, LeakyBucket, Nanos,
    RateLimiter, Registry, Rule, SlidingWindowCounter, SlidingWindowLog, TokenBucket,
};

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

/// A random bucket rule: a window from 1 ns to a day, a max from 1 to 2^40, and a burst
/// either small or at / just inside the bound. `None` when no burst fits.
fn bucket_rule(rng: &mut Rng) -> Option<Rule> {
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

/// `2^52`: the largest window and quota the windows and the log accept.
const WINDOW_LIMIT: u64 = 1 << 52;

/// A random rule for the windows and the log: windows from 1 ns to 2^52 ns (at the
/// bound), quotas from 1 to 2^52 (at the bound), often sharing factors, often not.
fn window_rule(rng: &mut Rng) -> Option<Rule> {
    let w = match rng.below(6) {
        0 => 1 + rng.below(1000),
        1 => 1 + rng.below(10_000_000_000),
        2 => 1_000_000_000,
        3 => 86_400_000_000_000,
        4 => WINDOW_LIMIT - rng.below(3),
        _ => 1 + rng.below(WINDOW_LIMIT),
    };
    let max = match rng.below(5) {
        0 => 1 + rng.below(10),
        1 => 1 + rng.below(100_000),
        2 => 1 + rng.below(1 << 40),
        3 => WINDOW_LIMIT - rng.below(3),
        _ => w.min(1 << 40),
    };
    Some(rule(max, w, 1))
}

/// A rule for the sliding log: as `window_rule`, and one in four has a window past
/// 2^52 ns, up to `u64::MAX` (the log has no window bound).
fn log_rule(rng: &mut Rng) -> Option<Rule> {
    let r = window_rule(rng)?;
    if rng.below(4) > 0 {
        return Some(r);
    }
    let w = u64::MAX - rng.below(1 << 62);
    Some(rule(r.max_requests(), w, 1))
}

/// Which bounds a family has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bounds {
    /// `largest_burst`.
    Bucket,
    /// `W ≤ 2^52` and `max ≤ 2^52`.
    Window,
    /// `max ≤ 2^52` (any window).
    Log,
}

/// When `rule` is the largest its family accepts, a rule one unit past it (refused).
fn at_the_bound(rule: &Rule, bounds: Bounds) -> Option<Rule> {
    let (max, w) = (rule.max_requests(), rule.window().as_u64());
    match bounds {
        Bounds::Bucket => (u128::from(rule.burst()) == largest_burst(max, w))
            .then(|| rule.with_burst(rule.burst() + 1).ok())
            .flatten(),
        Bounds::Window if w == WINDOW_LIMIT => Some(self::rule(max, w + 1, 1)),
        _ => (max == WINDOW_LIMIT).then(|| self::rule(max + 1, w, 1)),
    }
}

/// A random walk of instants and costs for a rule of `capacity`: steps of 0 (the same
/// instant again), a few ns, up to an interval, up to the time a full quota takes to
/// come back, multiples of the interval, huge jumps, and backwards steps; costs 0, 1,
/// the capacity, one more, and random.
struct Walk {
    now: u64,
    interval: u64,
    refill: u64,
    capacity: u64,
}

impl Walk {
    fn new(rng: &mut Rng, rule: &Rule, capacity: u64) -> Walk {
        let (w, max) = (rule.window().as_u64(), rule.max_requests());
        let refill = (u128::from(capacity) * u128::from(w)).div_ceil(u128::from(max));
        Walk {
            now: match rng.below(4) {
                0 => rng.below(1000),
                1 => (1 << 53) - 500 + rng.below(1000),
                2 => rng.below(1 << 62),
                _ => u64::MAX - (1 << 50) - rng.below(1 << 50),
            },
            interval: w.div_ceil(max),
            refill: u64::try_from(refill.max(u128::from(w))).unwrap_or(u64::MAX),
            capacity,
        }
    }

    fn step(&mut self, rng: &mut Rng) -> (u64, u64) {
        let step = match rng.below(6) {
            0 => 0,
            1 => rng.below(3),
            2 => rng.below(self.interval.saturating_add(2)),
            3 => rng.below(self.refill.saturating_add(2)),
            4 => rng.below(1 << 55),
            _ => self.interval.saturating_mul(rng.below(4)),
        };
        self.now = if rng.below(8) == 0 {
            self.now.saturating_sub(rng.below(1 << 40))
        } else {
            self.now.saturating_add(step)
        };
        let c = self.capacity;
        let cost = match rng.below(6) {
            0 => 0,
            1 => c,
            2 => c.saturating_add(1),
            3 => 1 + rng.below(c.min(1 << 20)),
            _ => 1,
        };
        (self.now, cost)
    }
}

/// Runs `streams` random streams of `steps` decisions for the algorithm `make` builds,
/// on rules from the family's generator.
fn differential<A: Scripted + Clone>(
    make: impl Fn(Rule) -> A,
    bounds: Bounds,
    seed: u64,
    (streams, steps): (usize, usize),
) {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let rules = match bounds {
        Bounds::Bucket => bucket_rule,
        Bounds::Window => window_rule,
        Bounds::Log => log_rule,
    };
    let store = RedisStore::open(&server.url(), "diff").unwrap();
    let mut rng = Rng(seed);
    let (mut checked, mut at_bound) = (0u64, 0u64);
    for stream in 0..streams {
        let Some(rule) = rules(&mut rng) else {
            continue;
        };
        let algo = make(rule);
        let name = algo.name().to_owned();
        let redis = store.limiter(algo.clone()).unwrap();
        if let Some(past) = at_the_bound(&rule, bounds) {
            at_bound += 1;
            // one unit past the bound is refused, and says which rule
            let refused: Unrepresentable = store.limiter(make(past)).unwrap_err();
            assert_eq!(refused.rule, past);
        }
        let clock = FakeClock::new(Nanos::ZERO);
        let mut walk = Walk::new(&mut rng, &rule, algo.capacity());
        let memory = RateLimiter::<A, String, FakeClock>::with_clock(algo, clock.clone());
        let key = format!("s{stream}");
        for _ in 0..steps {
            let (now, cost) = walk.step(&mut rng);
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

/// `name` on `rule` in Redis (the concrete type) and in memory (the registry's).
fn both(store: &RedisStore, name: &str, rule: Rule) -> (RedisLimiter, BoxedAlgorithm) {
    // A busy machine may take longer than the 200 ms default: this test is about the
    // decisions, not the timeout (tests/redis_failure.rs is).
    let redis = redis_support::limiter(store, name, rule).with_timeout(Duration::from_secs(5));
    let memory = Registry::default().create(name, rule).unwrap();
    (redis, memory)
}

#[test]
fn composites_of_mixed_algorithms_decide_as_in_memory() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "comp").unwrap();
    let seed = 0x2545_F491_4F6C_DD1D;
    let mut rng = Rng(seed);
    let (mut checked, mut denied_by_later) = (0u64, 0u64);
    for stream in 0..150 {
        let (mut redis, mut memory) = (Vec::new(), Vec::new());
        for _ in 0..1 + rng.below(3) {
            let name = redis_support::ALGORITHMS[rng.below(6) as usize];
            let rule = if name.contains("window") {
                window_rule(&mut rng)
            } else {
                bucket_rule(&mut rng)
            };
            let Some(rule) = rule else { continue };
            let (r, m) = both(&store, name, rule);
            redis.push(r);
            memory.push(m);
        }
        if memory.is_empty() {
            continue;
        }
        let redis = store.composite(redis).unwrap();
        let algo = Composite::new(memory).unwrap();
        let rule = *algo.rule();
        let clock = FakeClock::new(Nanos::ZERO);
        let mut walk = Walk::new(&mut rng, &rule, algo.capacity());
        let memory = RateLimiter::<_, String, FakeClock>::with_clock(algo, clock.clone());
        let key = format!("c{stream}");
        for _ in 0..100 {
            let (now, cost) = walk.step(&mut rng);
            clock.set(Nanos::new(now));
            let want = memory.try_acquire_all(&key, cost);
            let got = redis
                .try_acquire_all(&key, cost, Now::Caller(Nanos::new(now)))
                .unwrap_or_else(|e| panic!("stream {stream}: redis failed: {e}"));
            assert_eq!(
                got,
                want,
                "{} stream {stream} (seed {seed}) now={now} cost={cost}",
                redis.algorithm()
            );
            denied_by_later += u64::from(want.denied_by.is_some_and(|i| i > 0));
            checked += 1;
        }
    }
    println!("{checked} identical composite decisions ({denied_by_later} denied by a later rule)");
    assert!(checked > 0 && denied_by_later > 0);
}

#[test]
fn token_bucket_decides_as_in_memory() {
    differential(
        TokenBucket::new,
        Bounds::Bucket,
        0x9E37_79B9_7F4A_7C15,
        (300, 150),
    );
}

#[test]
fn leaky_bucket_decides_as_in_memory() {
    differential(
        LeakyBucket::new,
        Bounds::Bucket,
        0xD1B5_4A32_D192_ED03,
        (300, 150),
    );
}

#[test]
fn gcra_decides_as_in_memory() {
    differential(Gcra::new, Bounds::Bucket, 0x8CB9_2BA7_2F3D_8DD7, (300, 150));
}

#[test]
fn fixed_window_decides_as_in_memory() {
    differential(
        FixedWindow::new,
        Bounds::Window,
        0xA076_1D64_78BD_642F,
        (300, 150),
    );
}

#[test]
fn sliding_window_counter_decides_as_in_memory() {
    differential(
        SlidingWindowCounter::new,
        Bounds::Window,
        0xE703_7ED1_A0B4_28DB,
        (300, 150),
    );
}

#[test]
fn sliding_window_log_decides_as_in_memory() {
    differential(
        SlidingWindowLog::new,
        Bounds::Log,
        0x8EBC_6AF0_9C88_C6E3,
        (300, 150),
    );
}
