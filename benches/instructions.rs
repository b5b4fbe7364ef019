//! Instructions and cache misses per decision, for `valgrind --tool=callgrind`: cells of
//! the limiter bench without criterion, so that a count taken on a busy machine means
//! something. It fills a limiter with 1,000,000 keys, then makes 200,000 decisions over
//! the first KEYS of them, round-robin, inside `counted_decisions` (the function to
//! count). Plain contenders take `u32` keys on a fake clock moved one nanosecond a
//! decision (the `fake_u32` cells); `string/…` ones take `String` keys (`client-0`, …)
//! on the real clock (the `real_string` cells). Ours answer through `allow`, yes or no
//! like governor's `check_key`; `whole/…` ones through `try_acquire`, the whole
//! `Decision` (`remaining` and the waits worked out), as the timed bench's cells do:
//!
//! ```sh
//! cargo bench --bench instructions --no-run      # prints the binary's path
//! valgrind --tool=callgrind --cache-sim=yes --D1=32768,8,64 --LL=524288,8,64 \
//!     --collect-atstart=no --toggle-collect='*counted_decisions*' \
//!     target/release/deps/instructions-<hash> token_bucket 10000
//! ```
//!
//! Divide the counts callgrind prints by 200,000. CONTENDER is `token_bucket`, `gcra` or
//! `governor`, with `string/` before it for `String` keys and `whole/` before ours for the
//! whole decision (`string/whole/gcra`); KEYS is 1 to
//! 1,000,000. Run by `cargo bench` itself (no arguments)
//! it only says how to use it.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use governor::{Quota, RateLimiter as Governor};
use ratesim::{Algorithm, FakeClock, Gcra, Nanos, RateLimiter, Rule, TokenBucket};

const HELD: u32 = 1_000_000;
const DECISIONS: u32 = 200_000;

fn rule() -> Rule {
    Rule::new(1_000_000_000, Nanos::from_secs(1)).expect("a valid rule")
}

/// The counted loop: `decide` once per step, the key walking round-robin over `0..keys`.
#[inline(never)]
fn counted_decisions(keys: u32, mut decide: impl FnMut(u32) -> bool) {
    let mut key = 0;
    for _ in 0..DECISIONS {
        black_box(decide(key));
        key += 1;
        if key == keys {
            key = 0;
        }
    }
}

/// `whole`: decide through `try_acquire`, which works out the whole `Decision`; otherwise
/// through `allow`, yes or no.
fn ratesim<A: Algorithm>(algorithm: A, keys: u32, whole: bool) {
    let clock = FakeClock::new(Nanos::ZERO);
    let limiter: RateLimiter<A, u32, FakeClock> = RateLimiter::with_clock(algorithm, clock.clone());
    for key in 0..HELD {
        black_box(limiter.try_acquire(&key));
    }
    if whole {
        counted_decisions(keys, |key| {
            clock.advance(Nanos::new(1));
            black_box(limiter.try_acquire(&key)).allowed
        });
    } else {
        counted_decisions(keys, |key| {
            clock.advance(Nanos::new(1));
            limiter.allow(&key)
        });
    }
}

fn names() -> Vec<String> {
    (0..HELD).map(|i| format!("client-{i}")).collect()
}

fn ratesim_string<A: Algorithm>(algorithm: A, keys: u32, whole: bool) {
    let names = names();
    let limiter: RateLimiter<A, String> = RateLimiter::new(algorithm);
    for name in &names {
        black_box(limiter.try_acquire(name.as_str()));
    }
    if whole {
        counted_decisions(keys, |key| {
            black_box(limiter.try_acquire(names[key as usize].as_str())).allowed
        });
    } else {
        counted_decisions(keys, |key| limiter.allow(names[key as usize].as_str()));
    }
}

fn governor_string(keys: u32) {
    let names = names();
    let limiter = Governor::keyed(quota());
    for name in &names {
        let _ = black_box(limiter.check_key(name));
    }
    counted_decisions(keys, |key| limiter.check_key(&names[key as usize]).is_ok());
}

fn quota() -> Quota {
    Quota::per_second(NonZeroU32::new(1_000_000_000).expect("non-zero"))
}

fn governor(keys: u32) {
    let clock = FakeRelativeClock::default();
    let limiter = Governor::dashmap_with_clock(quota(), clock.clone());
    for key in 0..HELD {
        let _ = black_box(limiter.check_key(&key));
    }
    counted_decisions(keys, |key| {
        clock.advance(Duration::from_nanos(1));
        limiter.check_key(&key).is_ok()
    });
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let keys = args.get(1).and_then(|k| k.parse::<u32>().ok());
    let contender = args.first().map(String::as_str).unwrap_or_default();
    let (string, contender) = match contender.strip_prefix("string/") {
        Some(rest) => (true, rest),
        None => (false, contender),
    };
    let (whole, contender) = match contender.strip_prefix("whole/") {
        Some(rest) => (true, rest),
        None => (false, contender),
    };
    match (string, whole, contender, keys) {
        (false, _, "token_bucket", Some(keys @ 1..=HELD)) => {
            ratesim(TokenBucket::new(rule()), keys, whole)
        }
        (false, _, "gcra", Some(keys @ 1..=HELD)) => ratesim(Gcra::new(rule()), keys, whole),
        (false, false, "governor", Some(keys @ 1..=HELD)) => governor(keys),
        (true, _, "token_bucket", Some(keys @ 1..=HELD)) => {
            ratesim_string(TokenBucket::new(rule()), keys, whole)
        }
        (true, _, "gcra", Some(keys @ 1..=HELD)) => ratesim_string(Gcra::new(rule()), keys, whole),
        (true, false, "governor", Some(keys @ 1..=HELD)) => governor_string(keys),
        _ => eprintln!(
            "instructions: a harness for callgrind, not a timing bench; run its binary as \
             `instructions [string/][whole/]token_bucket|gcra KEYS` or \
             `instructions [string/]governor KEYS` (see benches/instructions.rs)"
        ),
    }
}
