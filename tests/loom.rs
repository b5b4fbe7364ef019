//! loom model checks of the keyed limiter's synchronisation: the real `RateLimiter`
//! code, compiled against `loom::sync` through `src/sync.rs`.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release --test loom`
//! (`.ci/run` does). Without `--cfg loom` this file is empty.
#![cfg(loom)]

use std::sync::atomic::{AtomicUsize, Ordering};

use loom::thread;
use ratesim::{Algorithm, FakeClock, FixedWindow, Nanos, RateLimiter, Rule, TokenBucket};

type Limiter = RateLimiter<FixedWindow, String, FakeClock>;

fn quota(max: u64) -> FixedWindow {
    FixedWindow::new(Rule::new(max, Nanos::from_secs(10)).unwrap())
}

/// `loom::model`, counting the interleavings it explores: it prints the count (run with
/// `--nocapture` to see it) and asserts there was more than one, so a model that
/// accidentally runs single-threaded cannot pass silently.
fn model(name: &str, f: impl Fn() + Sync + Send + 'static) {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let before = RUNS.load(Ordering::SeqCst);
    loom::model(move || {
        RUNS.fetch_add(1, Ordering::SeqCst);
        f();
    });
    let explored = RUNS.load(Ordering::SeqCst) - before;
    eprintln!("loom: {name}: {explored} interleavings explored");
    assert!(
        explored > 1,
        "{name}: only {explored} interleaving explored"
    );
}

fn limiter(max: u64) -> Limiter {
    // The clock is frozen: nothing refills while the threads race.
    RateLimiter::with_clock(quota(max), FakeClock::default())
}

/// A token bucket of one: the limiter stores its states packed into two words, so a
/// request unpacks, decides and packs back, all inside the shard's critical section.
fn packed_bucket() -> TokenBucket {
    let bucket = TokenBucket::new(Rule::new(1, Nanos::from_secs(10)).unwrap());
    assert!(bucket.packs());
    bucket
}

/// Two requests race for a quota of one: exactly one may pass.
fn race_for_the_last_permit<A: Algorithm>(make: fn() -> RateLimiter<A, String, FakeClock>) {
    model("last permit", move || {
        let l = loom::sync::Arc::new(make());
        let other = l.clone();
        let t = thread::spawn(move || other.allow("k"));
        let mine = l.allow("k");
        let theirs = t.join().unwrap();
        assert!(
            mine ^ theirs,
            "exactly one of two requests may pass (mine {mine}, theirs {theirs})"
        );
        assert_eq!(l.len(), 1);
    });
}

#[test]
fn two_threads_racing_for_the_last_permit_exactly_one_wins() {
    race_for_the_last_permit(|| limiter(1));
}

#[test]
#[should_panic(expected = "exactly one of two requests may pass")]
fn the_model_catches_a_limiter_whose_check_and_consume_is_not_atomic() {
    race_for_the_last_permit(|| {
        RateLimiter::broken_with_split_critical_section(quota(1), FakeClock::default())
    });
}

#[test]
fn two_threads_racing_for_a_packed_last_permit_exactly_one_wins() {
    race_for_the_last_permit(|| RateLimiter::with_clock(packed_bucket(), FakeClock::default()));
}

#[test]
#[should_panic(expected = "exactly one of two requests may pass")]
fn the_model_catches_a_packed_limiter_whose_check_and_consume_is_not_atomic() {
    race_for_the_last_permit(|| {
        RateLimiter::broken_with_split_critical_section(packed_bucket(), FakeClock::default())
    });
}

/// Request A and the janitor race on a held but idle key; a third request follows.
/// Eviction may happen before or after A, but A's permit must never be lost, so exactly
/// one of A and the follow-up passes.
#[test]
fn an_acquire_racing_evict_idle_never_grants_a_free_request() {
    model("acquire vs evict_idle", || {
        let l = loom::sync::Arc::new(limiter(1));
        l.with_state("k", |_, _, _| ()); // held, idle
        let janitor = l.clone();
        let t = thread::spawn(move || janitor.evict_idle());
        let a = l.allow("k");
        t.join().unwrap();
        let follow_up = l.allow("k");
        assert!(a, "A had a full quota");
        assert!(
            !follow_up,
            "eviction raced A's request and granted a free permit"
        );
    });
}

#[test]
fn an_acquire_racing_reset_is_either_before_it_or_after_it() {
    model("acquire vs reset", || {
        let l = loom::sync::Arc::new(limiter(2));
        assert!(l.allow("k"));
        let resetter = l.clone();
        let t = thread::spawn(move || resetter.reset("k"));
        let a = l.try_acquire("k");
        t.join().unwrap();
        let after = l.peek("k").remaining;
        // Before the reset: A takes the last permit, then the key is forgiven (2 left).
        // After it: A takes one from a fresh quota (1 left).
        assert!(a.allowed);
        assert!(
            (a.remaining, after) == (0, 2) || (a.remaining, after) == (1, 1),
            "not linearisable: A saw {} left, afterwards {after} left",
            a.remaining
        );
    });
}
