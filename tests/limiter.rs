//! The keyed limiter and the middleware: isolation, eviction, concurrency, costs.
//! (The forced eviction-between-lookup-and-lock race is a unit test in `limiter.rs`,
//! where the request path's internal hook is reachable.)

use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use ratesim::{
    BoxedAlgorithm, EndpointRule, FakeClock, InsufficientCapacity, Middleware, Nanos, RateLimiter,
    Registry, Rule,
};

fn every_algorithm() -> Vec<String> {
    Registry::default().names().map(str::to_string).collect()
}

fn limiter(
    name: &str,
    rule: Rule,
    clock: &FakeClock,
) -> RateLimiter<BoxedAlgorithm, String, FakeClock> {
    RateLimiter::with_clock(
        Registry::default().create(name, rule).unwrap(),
        clock.clone(),
    )
}

#[test]
fn keys_never_share_a_quota() {
    let rule = Rule::new(2, Nanos::from_secs(10)).unwrap();
    for name in every_algorithm() {
        let clock = FakeClock::default();
        let l = limiter(&name, rule, &clock);
        assert!(l.allow("alice") && l.allow("alice"), "{name}");
        assert!(!l.allow("alice"), "{name}: alice is out");
        assert!(
            l.allow("bob") && l.allow("bob"),
            "{name}: bob has his own quota"
        );
        assert_eq!(l.len(), 2);
    }
}

#[test]
fn sixteen_threads_hammering_one_key_never_over_admit() {
    const THREADS: usize = 16;
    const ATTEMPTS: usize = 200;
    let rule = Rule::new(500, Nanos::from_secs(3_600)).unwrap();
    for name in every_algorithm() {
        let clock = FakeClock::new(Nanos::from_secs(1)); // frozen: no refill during the race
        let l = limiter(&name, rule, &clock);
        let admitted = AtomicU64::new(0);
        let start = Barrier::new(THREADS);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    start.wait();
                    for _ in 0..ATTEMPTS {
                        if l.allow("hot") {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(
            admitted.load(Ordering::Relaxed),
            500,
            "{name}: 3200 attempts on a quota of 500"
        );
        assert_eq!(l.peek("hot").remaining, 0, "{name}");
    }
}

#[test]
fn eviction_runs_concurrently_with_requests_without_losing_consumption() {
    // A janitor evicts in a loop while workers consume; with the clock frozen nothing
    // refills, so exactly the quota may pass however the threads interleave.
    let rule = Rule::new(300, Nanos::from_secs(3_600)).unwrap();
    for name in every_algorithm() {
        let clock = FakeClock::new(Nanos::from_secs(1));
        let l = limiter(&name, rule, &clock);
        let admitted = AtomicU64::new(0);
        let done = std::sync::atomic::AtomicBool::new(false);
        thread::scope(|s| {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    l.evict_idle();
                }
            });
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        for _ in 0..200 {
                            if l.allow("k") {
                                admitted.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    })
                })
                .collect();
            for w in workers {
                w.join().unwrap();
            }
            done.store(true, Ordering::Relaxed);
        });
        assert_eq!(admitted.load(Ordering::Relaxed), 300, "{name}");
    }
}

#[test]
fn idle_keys_are_evicted_and_busy_ones_kept() {
    let rule = Rule::new(1, Nanos::from_secs(10)).unwrap();
    for name in every_algorithm() {
        let clock = FakeClock::default();
        let l = limiter(&name, rule, &clock);
        assert!(l.allow("early"));
        clock.set(Nanos::from_secs(25));
        assert!(l.allow("late"));
        assert_eq!(
            l.evict_idle(),
            1,
            "{name}: only `early` is back to a full quota"
        );
        assert_eq!(l.len(), 1);
        assert!(!l.allow("late"), "{name}: `late` kept its consumption");
        clock.set(Nanos::from_secs(60));
        assert_eq!(l.evict_idle(), 1, "{name}");
        assert!(l.is_empty());
    }
}

#[test]
fn reset_forgets_a_key() {
    let clock = FakeClock::default();
    let l = limiter(
        "fixed_window",
        Rule::new(1, Nanos::from_secs(10)).unwrap(),
        &clock,
    );
    assert!(l.allow("k"));
    assert!(!l.allow("k"));
    l.reset("k");
    assert!(l.is_empty());
    assert!(l.allow("k"));
}

#[test]
fn peek_reports_without_consuming() {
    let clock = FakeClock::default();
    let l = limiter(
        "sliding_window_log",
        Rule::new(2, Nanos::from_secs(10)).unwrap(),
        &clock,
    );
    assert!(l.allow("k"));
    for _ in 0..3 {
        let d = l.peek("k");
        assert!(d.allowed);
        assert_eq!(d.remaining, 1);
    }
    assert!(l.allow("k"));
    let d = l.peek("k");
    assert!(!d.allowed);
    assert_eq!(d.retry_after, Nanos::from_secs(10));
}

#[test]
fn a_cost_above_capacity_is_an_error_not_a_denial() {
    let clock = FakeClock::default();
    let rule = Rule::new(5, Nanos::from_secs(10))
        .unwrap()
        .with_burst(8)
        .unwrap();
    for name in every_algorithm() {
        let l = limiter(&name, rule, &clock);
        let capacity = if name.contains("bucket") || name == "gcra" {
            8
        } else {
            5
        };
        assert_eq!(
            l.try_acquire_n("k", capacity + 1),
            Err(InsufficientCapacity {
                cost: capacity + 1,
                capacity
            }),
            "{name}"
        );
        let d = l.try_acquire_n("k", capacity).unwrap();
        assert!(d.allowed && d.remaining == 0, "{name}: {d:?}");
        let d = l.try_acquire_n("k", 2).unwrap();
        assert!(!d.allowed && d.retry_after > Nanos::ZERO, "{name}: {d:?}");
        assert!(
            l.try_acquire_n("k", 0).unwrap().allowed,
            "{name}: cost 0 always passes"
        );
    }
}

#[test]
fn integer_keys_work_as_well_as_strings() {
    let clock = FakeClock::default();
    let algorithm = Registry::default()
        .create("gcra", Rule::new(1, Nanos::from_secs(1)).unwrap())
        .unwrap();
    let l: RateLimiter<_, u64, _> = RateLimiter::with_clock(algorithm, clock);
    assert!(l.allow(&7));
    assert!(!l.allow(&7));
    assert!(l.allow(&8));
}

#[test]
fn middleware_limits_per_endpoint_and_client_and_leaves_unknown_endpoints_unlimited() {
    let mw = Middleware::with_clock(FakeClock::default());
    mw.add_rule(
        "/login",
        Rule::new(1, Nanos::from_secs(60)).unwrap(),
        "fixed_window",
    )
    .unwrap();
    assert!(mw.check("/login", "alice").allowed);
    assert!(!mw.check("/login", "alice").allowed);
    assert!(mw.check("/login", "bob").allowed);
    for _ in 0..100 {
        assert!(mw.check("/search", "alice").allowed);
    }
    assert_eq!(mw.check("/search", "alice").remaining, u64::MAX);
    assert!(
        mw.add_rule("/x", Rule::new(1, Nanos::from_secs(1)).unwrap(), "nope")
            .is_err()
    );
}

#[test]
fn replacing_rules_keeps_state_for_unchanged_endpoints_and_resets_changed_ones() {
    let mw = Middleware::with_clock(FakeClock::default());
    let one = Rule::new(1, Nanos::from_secs(60)).unwrap();
    let spec = |rule, algorithm: &str| EndpointRule {
        rule,
        algorithm: algorithm.to_string(),
    };
    mw.replace_rules([
        ("/a", spec(one, "fixed_window")),
        ("/b", spec(one, "fixed_window")),
    ])
    .unwrap();
    assert!(mw.check("/a", "c").allowed);
    assert!(mw.check("/b", "c").allowed);
    let two = Rule::new(2, Nanos::from_secs(60)).unwrap();
    mw.replace_rules([
        ("/a", spec(one, "fixed_window")),
        ("/b", spec(two, "fixed_window")),
    ])
    .unwrap();
    assert!(!mw.check("/a", "c").allowed, "unchanged /a kept its state");
    assert!(
        mw.check("/b", "c").allowed && mw.check("/b", "c").allowed,
        "changed /b starts fresh"
    );
    // An unknown algorithm rejects the whole reload and leaves the old rules in place.
    assert!(mw.replace_rules([("/a", spec(one, "bogus"))]).is_err());
    assert_eq!(mw.rule("/b"), Some(spec(two, "fixed_window")));
    mw.replace_rules([]).unwrap();
    assert!(mw.check("/a", "c").allowed, "no rule any more: unlimited");
}

#[test]
fn middleware_serves_checks_while_rules_are_reloaded() {
    // Every check sees one whole rule (10 or 20 per minute), never a half-built map or a
    // panic. With one fresh client per check, `remaining` reveals the quota seen.
    let mw = Middleware::with_clock(FakeClock::default());
    let spec = |max| EndpointRule {
        rule: Rule::new(max, Nanos::from_secs(60)).unwrap(),
        algorithm: "fixed_window".into(),
    };
    mw.replace_rules([("/a", spec(10)), ("/b", spec(10))])
        .unwrap();
    let client = AtomicU64::new(0);
    thread::scope(|s| {
        s.spawn(|| {
            for i in 0..200u64 {
                let max = 10 + (i % 2) * 10;
                mw.replace_rules([("/a", spec(max)), ("/b", spec(max))])
                    .unwrap();
            }
        });
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..2_000 {
                    let c = client.fetch_add(1, Ordering::Relaxed).to_string();
                    let d = mw.check("/a", &c);
                    assert!(d.allowed);
                    assert!(d.remaining == 9 || d.remaining == 19, "{d:?}");
                }
            });
        }
    });
}
