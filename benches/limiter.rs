//! The keyed limiter per decision, side by side with governor 0.10 and with the floor.
//!
//! - `real_string/…`: `RateLimiter::try_acquire` with `String` keys on the real clock,
//!   for every algorithm, next to governor's keyed limiter (`DefaultKeyedRateLimiter`:
//!   DashMap, `String` keys, quanta clock) and the floor (a `Vec` of token-bucket states
//!   indexed by integer id: no hashing, no locks; the same clock read and math).
//!   Key sets: 1 key, 10,000 keys, 1,000,000 keys in round-robin and in random order.
//!   `…/token_bucket_compact` and `…/gcra_compact`: the same keys held as
//!   `CompactString` (inline up to 24 bytes: the key type the memory bench's
//!   ≤ 101 bytes per key is measured with), asked for by `&CompactString`.
//! - `real_string_2_threads/10k`: two threads on 10,000 keys; the time is wall time per
//!   decision over both threads together.
//! - `fake_u32/…`: the same with integer keys and a fake clock, as the simulator used it
//!   until issue 17 (governor on its `FakeRelativeClock`).
//! - `…/token_bucket_allow` and `…/gcra_allow` (both tables): through
//!   `RateLimiter::allow`, yes or no like governor's `check_key`, where the others work
//!   out the whole `Decision` (`remaining`, `retry_after`, `reset_after`).
//!
//! Run: `cargo bench --bench limiter` (about 4 minutes; filter with e.g.
//! `cargo bench --bench limiter -- real_string/1_key`). Plots are off: criterion's
//! plotters would need a registered font (see the TOOLCHAIN notes). The rule is generous
//! (10⁹ per second) so that nearly every request is admitted, for every contender.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use compact_str::CompactString;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use governor::clock::FakeRelativeClock;
use governor::{Quota, RateLimiter as Governor};
use ratesim::{
    Algorithm, Clock, FakeClock, FixedWindow, Gcra, LeakyBucket, MonotonicClock, Nanos,
    RateLimiter, Rule, SlidingWindowCounter, SlidingWindowLog, TokenBucket,
};

const PER_SECOND: u32 = 1_000_000_000;

fn rule() -> Rule {
    Rule::new(u64::from(PER_SECOND), Nanos::from_secs(1)).unwrap()
}

fn quota() -> Quota {
    Quota::per_second(NonZeroU32::new(PER_SECOND).unwrap())
}

/// How the benchmark walks its key set.
#[derive(Clone, Copy)]
enum Order {
    RoundRobin,
    Random,
}

/// A key set: `n` keys visited in `order`. `next()` costs the same for every contender.
struct Keys {
    n: usize,
    order: Order,
    i: usize,
    rng: u64,
}

impl Keys {
    fn new(n: usize, order: Order) -> Keys {
        Keys {
            n,
            order,
            i: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    #[inline]
    fn next(&mut self) -> usize {
        match self.order {
            Order::RoundRobin => {
                self.i += 1;
                if self.i == self.n {
                    self.i = 0;
                }
                self.i
            }
            Order::Random => {
                // xorshift64*: a few cycles, uniform enough to defeat the caches.
                self.rng ^= self.rng >> 12;
                self.rng ^= self.rng << 25;
                self.rng ^= self.rng >> 27;
                (self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as usize % self.n
            }
        }
    }
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("client-{i}")).collect()
}

/// The key sets of the table: (label, number of keys, order).
const SETS: [(&str, usize, Order); 4] = [
    ("1_key", 1, Order::RoundRobin),
    ("10k_keys", 10_000, Order::RoundRobin),
    ("1M_keys_round_robin", 1_000_000, Order::RoundRobin),
    ("1M_keys_random", 1_000_000, Order::Random),
];

/// `with_allow`: also time `allow` (the token bucket and GCRA, the contenders of the
/// governor comparison).
fn ratesim_string<A: Algorithm>(
    c: &mut Criterion,
    group: &str,
    algorithm: A,
    keys: &[String],
    with_allow: bool,
) {
    let name = algorithm.name().to_string();
    let limiter: RateLimiter<A, String> = RateLimiter::new(algorithm);
    for k in keys {
        limiter.try_acquire(k.as_str());
    }
    for (label, n, order) in SETS.iter().filter(|s| s.1 <= keys.len()) {
        let mut walk = Keys::new(*n, *order);
        c.bench_with_input(
            BenchmarkId::new(format!("{group}/{label}"), &name),
            n,
            |b, _| b.iter(|| black_box(limiter.try_acquire(keys[walk.next()].as_str()))),
        );
        if with_allow {
            // Yes or no only, like governor's `check_key`.
            c.bench_with_input(
                BenchmarkId::new(format!("{group}/{label}"), format!("{name}_allow")),
                n,
                |b, _| b.iter(|| black_box(limiter.allow(keys[walk.next()].as_str()))),
            );
        }
    }
}

fn ratesim_compact<A: Algorithm>(c: &mut Criterion, group: &str, algorithm: A, keys: &[String]) {
    let name = format!("{}_compact", algorithm.name());
    let keys: Vec<CompactString> = keys.iter().map(CompactString::from).collect();
    let limiter: RateLimiter<A, CompactString> = RateLimiter::new(algorithm);
    for k in &keys {
        limiter.try_acquire(k);
    }
    for (label, n, order) in SETS.iter().filter(|s| s.1 <= keys.len()) {
        let mut walk = Keys::new(*n, *order);
        c.bench_with_input(
            BenchmarkId::new(format!("{group}/{label}"), &name),
            n,
            |b, _| b.iter(|| black_box(limiter.try_acquire(&keys[walk.next()]))),
        );
    }
}

/// `with_allow`: also time `allow` (the token bucket and GCRA, the contenders of the
/// governor comparison).
fn ratesim_u32<A: Algorithm>(
    c: &mut Criterion,
    group: &str,
    algorithm: A,
    n_max: usize,
    with_allow: bool,
) {
    let name = algorithm.name().to_string();
    let clock = FakeClock::new(Nanos::ZERO);
    let limiter: RateLimiter<A, u32, FakeClock> = RateLimiter::with_clock(algorithm, clock.clone());
    for k in 0..n_max as u32 {
        limiter.try_acquire(&k);
    }
    for (label, n, order) in SETS.iter().filter(|s| s.1 <= n_max) {
        let mut walk = Keys::new(*n, *order);
        c.bench_with_input(
            BenchmarkId::new(format!("{group}/{label}"), &name),
            n,
            |b, _| {
                b.iter(|| {
                    clock.advance(Nanos::new(1));
                    black_box(limiter.try_acquire(&(walk.next() as u32)))
                })
            },
        );
        if !with_allow {
            continue;
        }
        // Yes or no only, like governor's `check_key`: `allow` skips `remaining` and
        // the waits.
        c.bench_with_input(
            BenchmarkId::new(format!("{group}/{label}"), format!("{name}_allow")),
            n,
            |b, _| {
                b.iter(|| {
                    clock.advance(Nanos::new(1));
                    black_box(limiter.allow(&(walk.next() as u32)))
                })
            },
        );
    }
}

/// Every contender on one key-set size class (so that only one 1M-key map is alive).
fn real_string(c: &mut Criterion) {
    let keys = names(1_000_000);
    let group = "real_string";
    ratesim_string(c, group, TokenBucket::new(rule()), &keys, true);
    ratesim_string(c, group, Gcra::new(rule()), &keys, true);
    ratesim_compact(c, group, TokenBucket::new(rule()), &keys);
    ratesim_compact(c, group, Gcra::new(rule()), &keys);
    ratesim_string(c, group, LeakyBucket::new(rule()), &keys, false);
    ratesim_string(c, group, FixedWindow::new(rule()), &keys, false);
    ratesim_string(c, group, SlidingWindowCounter::new(rule()), &keys, false);
    ratesim_string(
        c,
        group,
        SlidingWindowLog::new(Rule::new(100, Nanos::from_secs(1)).unwrap()),
        &keys[..10_000],
        false,
    );
    {
        let governor = Governor::keyed(quota());
        for k in &keys {
            let _ = governor.check_key(k);
        }
        for (label, n, order) in SETS {
            let mut walk = Keys::new(n, order);
            c.bench_with_input(
                BenchmarkId::new(format!("{group}/{label}"), "governor"),
                &n,
                |b, _| b.iter(|| black_box(governor.check_key(&keys[walk.next()]).is_ok())),
            );
        }
    }
    {
        // The floor: the token bucket's own math on a Vec, indexed by id.
        let algo = TokenBucket::new(rule());
        let clock = MonotonicClock::new();
        let mut states: Vec<_> = (0..keys.len())
            .map(|_| algo.new_state(clock.now()))
            .collect();
        for (label, n, order) in SETS {
            let mut walk = Keys::new(n, order);
            c.bench_with_input(
                BenchmarkId::new(format!("{group}/{label}"), "floor"),
                &n,
                |b, _| {
                    b.iter(|| {
                        let i = walk.next();
                        black_box(algo.try_acquire(&mut states[i], clock.now(), 1))
                    })
                },
            );
        }
    }
}

fn fake_u32(c: &mut Criterion) {
    let group = "fake_u32";
    let n = 1_000_000;
    ratesim_u32(c, group, TokenBucket::new(rule()), n, true);
    ratesim_u32(c, group, Gcra::new(rule()), n, true);
    ratesim_u32(c, group, LeakyBucket::new(rule()), n, false);
    ratesim_u32(c, group, FixedWindow::new(rule()), n, false);
    ratesim_u32(c, group, SlidingWindowCounter::new(rule()), n, false);
    ratesim_u32(
        c,
        group,
        SlidingWindowLog::new(Rule::new(100, Nanos::from_secs(1)).unwrap()),
        10_000,
        false,
    );
    {
        let clock = FakeRelativeClock::default();
        let governor = Governor::dashmap_with_clock(quota(), clock.clone());
        for k in 0..n as u32 {
            let _ = governor.check_key(&k);
        }
        for (label, n, order) in SETS {
            let mut walk = Keys::new(n, order);
            c.bench_with_input(
                BenchmarkId::new(format!("{group}/{label}"), "governor"),
                &n,
                |b, _| {
                    b.iter(|| {
                        clock.advance(Duration::from_nanos(1));
                        black_box(governor.check_key(&(walk.next() as u32)).is_ok())
                    })
                },
            );
        }
    }
    {
        let algo = TokenBucket::new(rule());
        let clock = FakeClock::new(Nanos::ZERO);
        let mut states: Vec<_> = (0..n).map(|_| algo.new_state(Nanos::ZERO)).collect();
        for (label, n, order) in SETS {
            let mut walk = Keys::new(n, order);
            c.bench_with_input(
                BenchmarkId::new(format!("{group}/{label}"), "floor"),
                &n,
                |b, _| {
                    b.iter(|| {
                        clock.advance(Nanos::new(1));
                        let i = walk.next();
                        black_box(algo.try_acquire(&mut states[i], clock.now(), 1))
                    })
                },
            );
        }
    }
}

/// Wall time per decision with two threads, each walking the 10,000 keys from its own
/// starting point: `iters` decisions in total.
fn two_threads(iters: u64, decide: impl Fn(usize) + Sync) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..2 {
            let decide = &decide;
            s.spawn(move || {
                let mut walk = Keys::new(10_000, Order::RoundRobin);
                walk.i = t * 5_000;
                for _ in 0..iters / 2 {
                    decide(walk.next());
                }
            });
        }
    });
    start.elapsed()
}

fn threaded<A: Algorithm>(c: &mut Criterion, algorithm: A, keys: &[String]) {
    let name = algorithm.name().to_string();
    let limiter: RateLimiter<A, String> = RateLimiter::new(algorithm);
    c.bench_function(&format!("real_string_2_threads/10k_keys/{name}"), |b| {
        b.iter_custom(|iters| {
            two_threads(iters, |i| {
                black_box(limiter.try_acquire(keys[i].as_str()));
            })
        })
    });
}

fn threaded_compact<A: Algorithm>(c: &mut Criterion, algorithm: A, keys: &[String]) {
    let name = format!("{}_compact", algorithm.name());
    let keys: Vec<CompactString> = keys.iter().map(CompactString::from).collect();
    let limiter: RateLimiter<A, CompactString> = RateLimiter::new(algorithm);
    c.bench_function(&format!("real_string_2_threads/10k_keys/{name}"), |b| {
        b.iter_custom(|iters| {
            two_threads(iters, |i| {
                black_box(limiter.try_acquire(&keys[i]));
            })
        })
    });
}

fn real_string_2_threads(c: &mut Criterion) {
    let keys = names(10_000);
    threaded(c, TokenBucket::new(rule()), &keys);
    threaded(c, Gcra::new(rule()), &keys);
    threaded_compact(c, TokenBucket::new(rule()), &keys);
    threaded_compact(c, Gcra::new(rule()), &keys);
    threaded(c, LeakyBucket::new(rule()), &keys);
    threaded(c, FixedWindow::new(rule()), &keys);
    threaded(c, SlidingWindowCounter::new(rule()), &keys);
    threaded(
        c,
        SlidingWindowLog::new(Rule::new(100, Nanos::from_secs(1)).unwrap()),
        &keys,
    );
    let governor = Governor::keyed(quota());
    c.bench_function("real_string_2_threads/10k_keys/governor", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, |i| {
                black_box(governor.check_key(&keys[i]).is_ok());
            })
        })
    });
}

/// What a clock read costs: ours, std's `Instant`, and quanta's (governor's clock).
fn clocks(c: &mut Criterion) {
    let ours = MonotonicClock::new();
    c.bench_function("clock/ratesim_monotonic", |b| {
        b.iter(|| black_box(ours.now()))
    });
    let origin = Instant::now();
    c.bench_function("clock/std_instant_elapsed", |b| {
        b.iter(|| black_box(origin.elapsed()))
    });
    let q = quanta::Clock::new();
    let start = q.raw();
    c.bench_function("clock/quanta_raw_delta", |b| {
        b.iter(|| black_box(q.delta_as_nanos(start, q.raw())))
    });
    let qstart = quanta::Instant::now();
    c.bench_function("clock/quanta_instant_elapsed", |b| {
        b.iter(|| black_box(qstart.elapsed()))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .without_plots()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = clocks, real_string, real_string_2_threads, fake_u32
}
criterion_main!(benches);
