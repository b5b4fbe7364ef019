//! `RateLimiter::try_acquire` per decision: one key, real clock, `String` keys, for
//! every algorithm (statically dispatched) and through the registry's boxed form.
//!
//! Run: `cargo bench --bench limiter`. Plots are off: criterion's plotters would need a
//! registered font (see TOOLCHAIN notes), and the numbers are what we quote.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ratesim::{
    Algorithm, FixedWindow, Gcra, LeakyBucket, Nanos, RateLimiter, Registry, Rule,
    SlidingWindowCounter, SlidingWindowLog, TokenBucket,
};

fn bench_one<A: Algorithm>(c: &mut Criterion, algorithm: A) {
    let name = format!("try_acquire/1_key/{}", algorithm.name());
    let limiter: RateLimiter<A, String> = RateLimiter::new(algorithm);
    c.bench_function(&name, |b| {
        b.iter(|| black_box(limiter.try_acquire(black_box("user_1"))))
    });
}

fn one_key(c: &mut Criterion) {
    // A generous rule so the log holds many entries and most requests pass.
    let rule = Rule::new(1_000, Nanos::from_secs(1)).unwrap();
    bench_one(c, TokenBucket::new(rule));
    bench_one(c, LeakyBucket::new(rule));
    bench_one(c, FixedWindow::new(rule));
    bench_one(c, SlidingWindowLog::new(rule));
    bench_one(c, SlidingWindowCounter::new(rule));
    bench_one(c, Gcra::new(rule));
    bench_one(c, Registry::default().create("token_bucket", rule).unwrap());
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = one_key
}
criterion_main!(benches);
