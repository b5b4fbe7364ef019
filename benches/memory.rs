//! Bytes per key: the resident memory a limiter grows by when it holds 1,000,000
//! `String` keys, for every algorithm, governor 0.10 and the floor, next to `size_of`
//! of the state; then the bucket family, GCRA and governor again with the same keys
//! held as `CompactString` (inline up to 24 bytes, no heap allocation per key). Each
//! contender runs in a fresh child process so that one's freed memory cannot hide
//! another's growth.
//!
//! Run: `cargo bench --bench memory` (about 20 s).

use std::hint::black_box;
use std::num::NonZeroU32;
use std::process::Command;

use compact_str::CompactString;
use governor::{Quota, RateLimiter as Governor};
use ratesim::algorithm::{BucketState, Packed};
use ratesim::{
    Algorithm, FixedWindow, Gcra, LeakyBucket, Nanos, RateLimiter, Rule, SlidingWindowCounter,
    SlidingWindowLog, TokenBucket,
};

const KEYS: usize = 1_000_000;
const CONTENDERS: [&str; 12] = [
    "token_bucket",
    "gcra",
    "leaky_bucket",
    "fixed_window",
    "sliding_window_counter",
    "sliding_window_log",
    "governor",
    "floor",
    "token_bucket/CompactString",
    "gcra/CompactString",
    "leaky_bucket/CompactString",
    "governor/CompactString",
];

/// Resident set size of this process, in bytes, from /proc/self/statm.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn key(i: usize) -> String {
    format!("client-{i}")
}

/// The bytes the limiter keeps per state: packed into two words when the algorithm
/// packs for this rule, else the state as it is.
fn stored<A: Algorithm>(algorithm: &A) -> usize {
    if algorithm.packs() {
        size_of::<Packed>()
    } else {
        size_of::<A::State>()
    }
}

fn fill<A: Algorithm>(algorithm: A) -> (u64, usize) {
    let stored = stored(&algorithm);
    let before = rss();
    let limiter: RateLimiter<A, String> = RateLimiter::new(algorithm);
    for i in 0..KEYS {
        black_box(limiter.try_acquire(key(i).as_str()));
    }
    let grown = rss() - before;
    black_box(&limiter);
    (grown, stored)
}

fn fill_compact<A: Algorithm>(algorithm: A) -> (u64, usize) {
    let stored = stored(&algorithm);
    let before = rss();
    let limiter: RateLimiter<A, CompactString> = RateLimiter::new(algorithm);
    for i in 0..KEYS {
        black_box(limiter.try_acquire(&CompactString::from(key(i))));
    }
    let grown = rss() - before;
    black_box(&limiter);
    (grown, stored)
}

fn measure(name: &str) -> (u64, usize) {
    let rule = Rule::new(100, Nanos::from_secs(1)).unwrap();
    match name {
        "token_bucket" => fill(TokenBucket::new(rule)),
        "gcra" => fill(Gcra::new(rule)),
        "leaky_bucket" => fill(LeakyBucket::new(rule)),
        "fixed_window" => fill(FixedWindow::new(rule)),
        "sliding_window_counter" => fill(SlidingWindowCounter::new(rule)),
        "sliding_window_log" => fill(SlidingWindowLog::new(rule)),
        "governor" => {
            let before = rss();
            let g = Governor::keyed(Quota::per_second(NonZeroU32::new(100).unwrap()));
            for i in 0..KEYS {
                black_box(g.check_key(&key(i)).is_ok());
            }
            let grown = rss() - before;
            black_box(&g);
            // governor's per-key state is one AtomicU64 (its GCRA's TAT).
            (grown, size_of::<u64>())
        }
        "token_bucket/CompactString" => fill_compact(TokenBucket::new(rule)),
        "gcra/CompactString" => fill_compact(Gcra::new(rule)),
        "leaky_bucket/CompactString" => fill_compact(LeakyBucket::new(rule)),
        "governor/CompactString" => {
            let before = rss();
            let g = Governor::keyed(Quota::per_second(NonZeroU32::new(100).unwrap()));
            for i in 0..KEYS {
                black_box(g.check_key(&CompactString::from(key(i))).is_ok());
            }
            let grown = rss() - before;
            black_box(&g);
            (grown, size_of::<u64>())
        }
        "floor" => {
            let before = rss();
            let algo = TokenBucket::new(rule);
            let states: Vec<BucketState> = (0..KEYS).map(|_| algo.new_state(Nanos::ZERO)).collect();
            let grown = rss() - before;
            black_box(&states);
            (grown, size_of::<BucketState>())
        }
        other => panic!("unknown contender {other}"),
    }
}

fn main() {
    if let Ok(name) = std::env::var("RATESIM_MEMORY_ONE") {
        let (grown, state) = measure(&name);
        println!("{grown} {state}");
        return;
    }
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let exe = std::env::current_exe().expect("own path");
    println!("| contender | RSS growth for {KEYS} keys | bytes/key | bytes stored per state |");
    println!("|---|---:|---:|---:|");
    for name in CONTENDERS {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let out = Command::new(&exe)
            .env("RATESIM_MEMORY_ONE", name)
            .output()
            .expect("child runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut parts = text
            .split_whitespace()
            .map(|p| p.parse::<u64>().unwrap_or(0));
        let (grown, state) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        println!(
            "| {name} | {:.1} MB | {:.0} | {state} |",
            grown as f64 / 1e6,
            grown as f64 / KEYS as f64
        );
    }
}
