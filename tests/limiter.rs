//! The keyed limiter and the middleware: isolation, eviction, concurrency, costs.
//! (The forced eviction-between-lookup-and-lock race is a unit test in `limiter.rs`,
//! where the request path's internal hook is reachable.)

use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use ratesim::{
    Algorithm, BoxedAlgorithm, Composite, EndpointRule, FakeClock, InsufficientCapacity,
    Middleware, Nanos, RateLimiter, Registry, Rule,
};

/// The six textbook algorithms (`all`): these tests state their bounds and capacities;
/// the presets are checked against their real peers in `tests/presets_*.rs`.
fn every_algorithm() -> Vec<String> {
    Registry::default().resolve(&["all"]).unwrap()
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

/// One step of a xorshift generator: the tests' pseudo-random, reproducible streams.
fn xorshift(x: &mut u64) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
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
fn a_limiter_is_empty_only_until_a_key_is_seen_and_its_debug_names_the_algorithm() {
    let clock = FakeClock::default();
    let l = limiter(
        "token_bucket",
        Rule::new(2, Nanos::from_secs(1)).unwrap(),
        &clock,
    );
    assert!(l.is_empty());
    assert!(l.allow("a"));
    assert!(!l.is_empty(), "one key is held");
    let debug = format!("{l:?}");
    assert!(
        debug.starts_with("RateLimiter") && debug.contains("token_bucket"),
        "{debug}"
    );
}

#[test]
fn the_middleware_evicts_the_idle_clients_of_every_endpoint() {
    let clock = FakeClock::default();
    let mw = Middleware::with_clock(clock.clone());
    let spec = EndpointRule {
        rule: Rule::new(1, Nanos::from_secs(60)).unwrap(),
        algorithm: "fixed_window".into(),
    };
    mw.replace_rules([("/a", spec.clone()), ("/b", spec)])
        .unwrap();
    for (endpoint, client) in [("/a", "x"), ("/a", "y"), ("/b", "x")] {
        assert!(mw.check(endpoint, client).allowed);
    }
    assert_eq!(mw.evict_idle(), 0, "inside the window nothing is idle");
    clock.set(Nanos::from_secs(120));
    assert_eq!(mw.evict_idle(), 3, "every client of both endpoints");
    assert_eq!(mw.evict_idle(), 0, "already gone");
}

#[cfg(feature = "toml-rules")]
#[test]
fn rules_reload_from_a_file_and_a_missing_file_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rules.toml");
    let rules = |max: u64| {
        format!(
            "[[endpoint]]\npath = \"/login\"\nalgorithm = \"fixed_window\"\n\
             max_requests = {max}\nwindow = \"60s\"\n"
        )
    };
    std::fs::write(&path, rules(3)).unwrap();
    let mw = Middleware::with_clock(FakeClock::default());
    mw.reload_file(&path).unwrap();
    assert_eq!(mw.rule("/login").unwrap().rule.max_requests(), 3);
    std::fs::write(&path, rules(7)).unwrap();
    mw.reload_file(&path).unwrap();
    assert_eq!(mw.rule("/login").unwrap().rule.max_requests(), 7);
    let missing = dir.path().join("missing.toml");
    let error = mw.reload_file(&missing).unwrap_err();
    assert!(error.to_string().contains("missing.toml"), "{error}");
    assert_eq!(mw.rule("/login").unwrap().rule.max_requests(), 7);
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
fn inspect_reads_a_held_state_in_place_and_never_inserts() {
    let clock = FakeClock::default();
    let rule = Rule::new(3, Nanos::from_secs(10)).unwrap();
    let l = RateLimiter::with_clock(ratesim::SlidingWindowLog::new(rule), clock.clone());
    assert_eq!(l.inspect("ghost", |s| s.len()), None);
    assert_eq!(l.len(), 0, "inspecting an unknown key must not add it");
    assert!(l.allow("k"));
    clock.advance(Nanos::from_secs(1));
    assert!(l.allow("k"));
    assert_eq!(l.inspect("k", |s| s.len()), Some(2), "two logged instants");
    assert_eq!(l.snapshot("k").map(|s| s.len()), Some(2));
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
fn allow_admits_and_consumes_exactly_as_try_acquire() {
    // `allow` skips working out `remaining` and the waits; the answer and what it
    // consumes must be the same. One limiter answers through `allow`, the other through
    // `try_acquire`, on the same pseudo-random requests; then every state must agree.
    let rule = Rule::new(3, Nanos::from_secs(1)).unwrap();
    for name in every_algorithm() {
        let clock_a = FakeClock::default();
        let clock_b = FakeClock::default();
        let yes_no = limiter(&name, rule, &clock_a);
        let full = limiter(&name, rule, &clock_b);
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut denied = 0;
        for i in 0..2_000 {
            xorshift(&mut x);
            let step = Nanos::new(x % 200_000_000);
            clock_a.advance(step);
            clock_b.advance(step);
            let key = format!("k{}", x % 3);
            let allowed = yes_no.allow(key.as_str());
            assert_eq!(
                allowed,
                full.try_acquire(key.as_str()).allowed,
                "{name}, request {i}"
            );
            denied += usize::from(!allowed);
            let probe =
                |a: &BoxedAlgorithm, s: &mut _, now| (a.remaining(s, now), a.reset_after(s, now));
            assert_eq!(
                yes_no.with_state(key.as_str(), probe),
                full.with_state(key.as_str(), probe),
                "{name}, request {i}"
            );
        }
        assert!(
            denied > 100,
            "{name}: the stream must also test denials ({denied})"
        );
        assert_eq!(yes_no.len(), full.len(), "{name}");
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

#[test]
fn a_composite_limit_consumes_nothing_when_any_rule_denies() {
    let registry = Registry::default();
    let clock = FakeClock::default();
    let per_sec = registry
        .create("fixed_window", Rule::new(3, Nanos::from_secs(1)).unwrap())
        .unwrap();
    let per_min = registry
        .create(
            "sliding_window_log",
            Rule::new(5, Nanos::from_secs(60)).unwrap(),
        )
        .unwrap();
    let l = RateLimiter::with_clock(
        Composite::new(vec![per_sec, per_min]).unwrap(),
        clock.clone(),
    );
    let admitted: Vec<bool> = (0..4)
        .map(|_| l.try_acquire_all("k", 1).decision.allowed)
        .collect();
    assert_eq!(admitted, [true, true, true, false]);
    let d = l.try_acquire_all("k", 1);
    assert_eq!(d.denied_by, Some(0), "the per-second rule denied");
    assert_eq!(d.decision.retry_after, Nanos::from_secs(1));
    assert_eq!(
        d.per_rule[1].remaining, 2,
        "the per-minute rule lost nothing to the denials"
    );
    clock.set(Nanos::from_secs(1));
    assert!(l.try_acquire_all("k", 1).decision.allowed);
    assert!(l.try_acquire_all("k", 1).decision.allowed);
    let d = l.try_acquire_all("k", 1);
    assert_eq!(d.denied_by, Some(1), "now the per-minute rule binds");
    assert_eq!(d.decision.retry_after, Nanos::from_secs(59));
    assert_eq!(
        d.per_rule[0].remaining, 1,
        "the per-second rule lost nothing either"
    );
}

#[test]
fn sixteen_threads_on_a_composite_limit_never_over_admit_any_rule() {
    // Three phases one second apart: the per-second rule (40) binds in the first two,
    // the per-hour rule (100) in the third. Any torn check-then-consume would show up
    // as more than 40 in a phase or more than 100 in total.
    let registry = Registry::default();
    let clock = FakeClock::default();
    let per_sec = registry
        .create("token_bucket", Rule::new(40, Nanos::from_secs(1)).unwrap())
        .unwrap();
    let per_hour = registry
        .create(
            "fixed_window",
            Rule::new(100, Nanos::from_secs(3_600)).unwrap(),
        )
        .unwrap();
    let l = RateLimiter::with_clock(
        Composite::new(vec![per_sec, per_hour]).unwrap(),
        clock.clone(),
    );
    let mut per_phase = Vec::new();
    for phase in 0..3 {
        clock.set(Nanos::from_secs(phase));
        let admitted = AtomicU64::new(0);
        thread::scope(|s| {
            for _ in 0..16 {
                s.spawn(|| {
                    for _ in 0..20 {
                        if l.try_acquire_all("k", 1).decision.allowed {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        per_phase.push(admitted.into_inner());
    }
    assert_eq!(per_phase, [40, 40, 20]);
}

#[test]
fn the_middleware_returns_ietf_ratelimit_headers_and_retry_after_on_denial() {
    let mw = Middleware::with_clock(FakeClock::default());
    mw.add_rule(
        "/login",
        Rule::new(2, Nanos::from_secs(60)).unwrap(),
        "sliding_window_log",
    )
    .unwrap();
    let first = mw.check_with_headers("/login", "alice");
    assert_eq!(first.status(), 200);
    assert_eq!(
        first.headers,
        [
            ("RateLimit-Policy", r#""/login";q=2;w=60"#.to_string()),
            ("RateLimit", r#""/login";r=1;t=60"#.to_string()),
        ]
    );
    mw.check_with_headers("/login", "alice");
    let denied = mw.check_with_headers("/login", "alice");
    assert_eq!(denied.status(), 429);
    assert_eq!(denied.headers[1].1, r#""/login";r=0;t=60"#);
    assert_eq!(denied.headers[2], ("Retry-After", "60".to_string()));
    let free = mw.check_with_headers("/search", "alice");
    assert!(free.decision.allowed && free.headers.is_empty());
}

/// A cost above the rule's burst never passes: denied with a `retry_after` of
/// `Nanos::MAX` and no `Retry-After` field; the rest of the decision is the client's
/// state as it stands, and nothing is consumed.
#[test]
fn the_middleware_denies_a_cost_above_the_burst_for_ever_and_consumes_nothing() {
    let mw = Middleware::with_clock(FakeClock::default());
    let rule = Rule::new(5, Nanos::from_secs(10)).unwrap();
    mw.add_rule("/upload", rule, "token_bucket").unwrap();
    let first = mw.check_n_with_headers("/upload", "alice", 2);
    assert_eq!(first.decision.remaining, 3);
    let never = mw.check_n_with_headers("/upload", "alice", 6);
    assert_eq!(never.status(), 429);
    assert!(!never.decision.allowed);
    assert_eq!(never.decision.retry_after, Nanos::MAX);
    assert_eq!(never.decision.remaining, 3);
    assert!(never.headers.iter().all(|(name, _)| *name != "Retry-After"));
    let rest = mw.check_n_with_headers("/upload", "alice", 3);
    assert!(rest.decision.allowed && rest.decision.remaining == 0);
}

#[cfg(feature = "toml-rules")]
const RULES_V1: &str = r#"
[[endpoint]]
path = "/a"
algorithm = "fixed_window"
max_requests = 10
window = "60s"

[[endpoint]]
path = "/b"
algorithm = "fixed_window"
max_requests = 10
window = "60s"
"#;

#[test]
#[cfg(feature = "toml-rules")]
fn rules_reload_from_toml_and_bad_files_change_nothing() {
    let mw = Middleware::with_clock(FakeClock::default());
    mw.reload_str(RULES_V1, "v1.toml").unwrap();
    assert_eq!(mw.rules().len(), 2);
    let cases = [
        ("[[endpoint]]\npath = \"/a\"\n", "missing field"),
        (
            "[[endpoint]]\npath = \"/a\"\nalgorithm = \"fixed_window\"\nmax_requests = 0\nwindow = \"1s\"\n",
            "max_requests must be at least 1",
        ),
        (
            "[[endpoint]]\npath = \"/a\"\nalgorithm = \"nope\"\nmax_requests = 1\nwindow = \"1s\"\n",
            "endpoint `/a`: unknown algorithm `nope`",
        ),
        (
            "[[endpoint]]\npath = \"/a\"\nalgorithm = \"gcra\"\nmax_requests = 1\nwindow = \"1 fortnight\"\n",
            "window",
        ),
        (
            "[[endpoint]]\npath = \"/a\"\nalgorithm = \"gcra\"\nmax_requests = 1\nwindow = \"1s\"\ncolour = 3\n",
            "unknown field",
        ),
        ("[[endpoint]\n", "line 1"),
    ];
    for (text, expected) in cases {
        let err = mw.reload_str(text, "bad.toml").unwrap_err().to_string();
        assert!(
            err.starts_with("bad.toml: ") && err.contains(expected),
            "{err}"
        );
        assert_eq!(
            mw.rules().len(),
            2,
            "a bad file must leave the rules alone: {err}"
        );
    }
    let twice = format!(
        "{RULES_V1}\n[[endpoint]]\npath = \"/a\"\nalgorithm = \"gcra\"\nmax_requests = 1\nwindow = \"1s\"\n"
    );
    assert!(
        mw.reload_str(&twice, "x")
            .unwrap_err()
            .to_string()
            .contains("listed twice")
    );
}

#[test]
#[cfg(feature = "toml-rules")]
fn hot_reloads_while_threads_check_never_show_a_torn_rule_set() {
    // Version 1 limits /a and /b to 10; version 2 limits /a and /b to 20 and adds /c.
    // Every snapshot a reader takes must be wholly one version.
    let rules_v2 = RULES_V1.replace("= 10", "= 20")
        + "\n[[endpoint]]\npath = \"/c\"\nalgorithm = \"gcra\"\nmax_requests = 1\nwindow = \"1s\"\n";
    let mw = Middleware::with_clock(FakeClock::default());
    mw.reload_str(RULES_V1, "v1").unwrap();
    let client = AtomicU64::new(0);
    thread::scope(|s| {
        s.spawn(|| {
            for i in 0..300 {
                let text = if i % 2 == 0 {
                    rules_v2.as_str()
                } else {
                    RULES_V1
                };
                mw.reload_str(text, "reload").unwrap();
            }
        });
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..1_000 {
                    let snapshot = mw.rules();
                    let quotas: Vec<u64> = snapshot
                        .iter()
                        .map(|(_, r)| r.rule.max_requests())
                        .collect();
                    assert!(
                        quotas == [10, 10] || quotas == [20, 20, 1],
                        "torn view: {snapshot:?}"
                    );
                    let c = client.fetch_add(1, Ordering::Relaxed).to_string();
                    let d = mw.check("/a", &c);
                    assert!(
                        d.allowed && (d.remaining == 9 || d.remaining == 19),
                        "{d:?}"
                    );
                }
            });
        }
    });
}
