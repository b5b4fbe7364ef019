//! The Redis store on a real `redis-server`: the representable bound end to end, key
//! expiry (design §7), hash-tagged keys (§8), NOSCRIPT, and a composite of one algorithm.
//! The hot key is `redis_hot_key.rs`; the middleware on Redis, `redis_middleware.rs`.

mod redis_support;

use std::time::Duration;

use ratesim::redis::{Bound, FailureKind, Now, RedisError, RedisStore, Scripted};
use ratesim::{
    Decision, FakeClock, FixedWindow, Gcra, InsufficientCapacity, LeakyBucket, Nanos, RateLimiter,
    Rule, SlidingWindowCounter, SlidingWindowLog, TokenBucket,
};
use redis::Commands;

fn rule(max: u64, w: u64, burst: u64) -> Rule {
    Rule::new(max, Nanos::new(w))
        .unwrap()
        .with_burst(burst)
        .unwrap()
}

/// Runs `check` for each algorithm of the bucket family.
fn each_bucket(
    mut check: impl FnMut(
        &str,
        &dyn Fn(Rule) -> Result<ratesim::redis::RedisLimiter, ratesim::redis::Unrepresentable>,
    ),
) {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "t").unwrap();
    check("token_bucket", &|r| store.limiter(TokenBucket::new(r)));
    check("leaky_bucket", &|r| store.limiter(LeakyBucket::new(r)));
    check("gcra", &|r| store.limiter(Gcra::new(r)));
}

/// The in-memory decisions for the same instants, to compare with.
fn memory<A: Scripted>(
    algo: A,
    steps: &[(u64, u64)],
) -> Vec<Result<Decision, InsufficientCapacity>> {
    let clock = FakeClock::new(Nanos::ZERO);
    let limiter = RateLimiter::<A, String, FakeClock>::with_clock(algo, clock.clone());
    steps
        .iter()
        .map(|&(at, cost)| {
            clock.set(Nanos::new(at));
            limiter.try_acquire_n("k", cost)
        })
        .collect()
}

#[test]
fn the_largest_exact_rule_decides_as_in_memory_and_one_unit_past_is_refused() {
    // W = 1 ns, max = 2^20 (g = 1): the bound is burst + 2^20 ≤ 2^53.
    let largest = (1u64 << 53) - (1 << 20);
    let ok = rule(1 << 20, 1, largest);
    let past = rule(1 << 20, 1, largest + 1);
    // A whole burst, the denial, a partial refill, the full refill, near u64::MAX.
    let far = u64::MAX - (1 << 40);
    let steps = [
        (0, largest),
        (0, 1),
        (5, 3 << 20),
        (5, largest),
        (1 << 34, largest),
        (1 << 34, largest + 1),
        (far, largest),
        (far - 7, 1), // backwards
        (far + (1 << 33), 0),
    ];
    each_bucket(|name, make| {
        let limiter = make(ok).unwrap();
        let got: Vec<_> = steps
            .iter()
            .map(|&(at, cost)| {
                limiter
                    .try_acquire_n("k", cost, Now::Caller(Nanos::new(at)))
                    .map_err(|e| match e {
                        RedisError::InsufficientCapacity(e) => e,
                        other => panic!("{other}"),
                    })
            })
            .collect();
        let want = match name {
            "token_bucket" => memory(TokenBucket::new(ok), &steps),
            "leaky_bucket" => memory(LeakyBucket::new(ok), &steps),
            _ => memory(Gcra::new(ok), &steps),
        };
        assert_eq!(got, want, "{name}");
        assert!(
            !got[1].unwrap().allowed && got[4].unwrap().allowed,
            "{got:?}"
        );

        let refused = make(past).unwrap_err();
        assert_eq!(
            refused.bound,
            Bound::Exact {
                value: (1 << 53) + 1
            }
        );
        assert_eq!(refused.algorithm, name);
        let text = refused.to_string();
        assert!(text.contains("2^53") && text.contains(name), "{text}");
    });
}

#[test]
fn the_longest_refill_is_accepted_and_one_nanosecond_more_is_refused() {
    let longest = 8_990_000_000_000_000u64; // max = W = 1: a full refill takes `burst` ns
    each_bucket(|name, make| {
        let limiter = make(rule(1, 1, longest)).unwrap();
        let d = limiter
            .try_acquire_n("k", longest, Now::Caller(Nanos::new(1)))
            .unwrap();
        assert_eq!(
            (d.allowed, d.remaining, d.reset_after),
            (true, 0, Nanos::new(longest))
        );
        let d = limiter
            .try_acquire_n("k", longest, Now::Caller(Nanos::new(1 + longest)))
            .unwrap();
        assert!(d.allowed, "{name}: refilled exactly at the refill time");
        let refused = make(rule(1, 1, longest + 1)).unwrap_err();
        assert_eq!(
            refused.bound,
            Bound::RefillTime {
                value: u128::from(longest) + 1
            }
        );
        assert!(refused.to_string().contains("104 days"));
    });
}

/// `<sec> <usec>` of the server's clock, in ns.
/// The absolute instant (Unix ms) at which `key` expires: -1 without one, -2 if absent.
fn expire_ms(con: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("PEXPIRETIME").arg(key).query(con).unwrap()
}

fn server_ns(con: &mut redis::Connection) -> u128 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(con).unwrap();
    u128::from(s) * 1_000_000_000 + u128::from(us) * 1000
}

#[test]
fn server_time_keys_expire_at_the_idle_instant_never_earlier() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "ttl").unwrap();
    let mut con = server.connection("");
    // 10 per second, burst 10: 100 ms per token.
    let r = rule(10, 1_000_000_000, 10);
    for limiter in [
        store.limiter(TokenBucket::new(r)).unwrap(),
        store.limiter(LeakyBucket::new(r)).unwrap(),
        store.limiter(Gcra::new(r)).unwrap(),
    ] {
        let name = limiter.algorithm();
        let key = limiter.redis_key("alice", Now::Server);
        // A cost-0 request on a fresh key leaves it idle: nothing is stored.
        let d = limiter.try_acquire_n("alice", 0, Now::Server).unwrap();
        assert_eq!(
            (d.allowed, d.remaining, d.reset_after),
            (true, 10, Nanos::ZERO)
        );
        assert!(
            !con.exists::<_, bool>(&key).unwrap(),
            "{name}: idle key kept"
        );

        let d = limiter.try_acquire_n("alice", 3, Now::Server).unwrap();
        assert_eq!((d.allowed, d.remaining), (true, 7));
        assert_eq!(d.reset_after, Nanos::from_millis(300), "{name}");
        // The state records the server instant of the decision: the key expires at
        // the first millisecond at or after that instant + reset_after.
        let state: String = con.get(&key).unwrap();
        let parts: Vec<u128> = state.split(' ').map(|p| p.parse().unwrap()).collect();
        let decided = parts[1] * 1_000_000_000 + parts[2];
        let idle = decided + u128::from(d.reset_after.as_u64());
        let expire_ms = expire_ms(&mut con, &key);
        assert_eq!(expire_ms as u128, idle.div_ceil(1_000_000), "{name}");
        // Redis deletes only once its clock (the one TIME reads) is past the mark.
        assert!(expire_ms as u128 * 1_000_000 >= idle);

        // Right up to the idle instant the state is still there; then it is gone, and
        // the next request sees a fresh bucket.
        while server_ns(&mut con) + 20_000_000 < idle {
            assert!(
                con.exists::<_, bool>(&key).unwrap(),
                "{name}: expired early"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        while server_ns(&mut con) <= (expire_ms as u128 + 1) * 1_000_000 {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(
            !con.exists::<_, bool>(&key).unwrap(),
            "{name}: never expired"
        );
        let d = limiter.try_acquire("alice", Now::Server).unwrap();
        assert_eq!(d.remaining, 9, "{name}");
    }
}

/// The numbers of a stored state or log entry.
fn numbers(raw: &str) -> Vec<u128> {
    raw.split(' ').map(|p| p.parse().unwrap()).collect()
}

#[test]
fn windows_and_the_log_expire_at_the_idle_instant_never_earlier() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "ttl").unwrap();
    let mut con = server.connection("");
    let w = 1_000_000_000u128;
    let r = rule(10, 1_000_000_000, 1);
    for limiter in [
        store.limiter(FixedWindow::new(r)).unwrap(),
        store.limiter(SlidingWindowCounter::new(r)).unwrap(),
        store.limiter(SlidingWindowLog::new(r)).unwrap(),
    ] {
        let name = limiter.algorithm().to_owned();
        let keys = limiter.redis_keys("alice", Now::Server);
        let d = limiter.try_acquire_n("alice", 0, Now::Server).unwrap();
        assert_eq!((d.allowed, d.remaining), (true, 10));
        for key in &keys {
            assert!(
                !con.exists::<_, bool>(key).unwrap(),
                "{name}: idle key kept"
            );
        }
        let d = limiter.try_acquire("alice", Now::Server).unwrap();
        assert_eq!((d.allowed, d.remaining), (true, 9), "{name}");
        // The idle instant, from what the script stored: the window's end (fixed), the
        // end of the window after the count's (counter), the entry's expiry (log).
        let state = numbers(&con.get::<_, String>(&keys[0]).unwrap());
        let idle = match name.as_str() {
            "fixed_window" => state[0] * 1_000_000_000 + state[1] + w,
            "sliding_window_counter" => {
                let last = state[0] * 1_000_000_000 + state[1];
                (last / w + 2) * w
            }
            _ => {
                let newest: String = con.lindex(&keys[1], -1).unwrap();
                let e = numbers(&newest);
                e[0] * 1_000_000_000 + e[1] + w
            }
        };
        for key in &keys {
            let expire_ms = expire_ms(&mut con, key);
            assert_eq!(expire_ms as u128, idle.div_ceil(1_000_000), "{name} {key}");
        }
        while server_ns(&mut con) + 20_000_000 < idle {
            for key in &keys {
                assert!(con.exists::<_, bool>(key).unwrap(), "{name}: expired early");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        while server_ns(&mut con) <= idle.div_ceil(1_000_000) * 1_000_000 + 1_000_000 {
            std::thread::sleep(Duration::from_millis(2));
        }
        for key in &keys {
            assert!(
                !con.exists::<_, bool>(key).unwrap(),
                "{name}: never expired"
            );
        }
        let d = limiter.try_acquire("alice", Now::Server).unwrap();
        assert_eq!(d.remaining, 9, "{name}: fresh again");
    }
}

/// How many times the server has run `command` (lower case) since its statistics were
/// last reset (the calls a script makes are counted as the command's own).
fn calls(con: &mut redis::Connection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

fn sets_run(con: &mut redis::Connection) -> u64 {
    calls(con, "set")
}

fn reset_stats(con: &mut redis::Connection) {
    redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query::<()>(con)
        .unwrap();
}

const HOUR: u128 = 3_600_000_000_000;

/// On the server's clock, `admissions` admitted calls of `decide`, then a denied one,
/// all in one window of an hour (retried on the rare run that straddles the top of an
/// hour): asserts that the admissions ran `admission_sets` `SET`s and the denial none,
/// and that `keys` and their expiries are as the admissions left them.
fn a_denial_writes_nothing(
    con: &mut redis::Connection,
    keys: &[String],
    admissions: usize,
    admission_sets: u64,
    decide: &dyn Fn() -> bool,
) {
    let look = |con: &mut redis::Connection| -> Vec<(String, i64)> {
        (keys.iter())
            .map(|k| (con.get(k).unwrap(), expire_ms(con, k)))
            .collect()
    };
    loop {
        con.del::<_, ()>(keys).unwrap();
        let start = server_ns(con) / HOUR;
        reset_stats(con);
        for _ in 0..admissions {
            assert!(decide(), "admitted");
        }
        assert_eq!(sets_run(con), admission_sets, "each admission writes");
        let after_admissions = look(con);
        reset_stats(con);
        let allowed = decide();
        let sets = sets_run(con);
        if server_ns(con) / HOUR == start {
            assert!(!allowed);
            assert_eq!(sets, 0, "a denial in the counted window rewrote its state");
            assert_eq!(look(con), after_admissions, "states and expiries");
            return;
        }
    }
}

#[test]
fn a_fixed_window_denial_on_the_server_clock_writes_nothing() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "deny").unwrap();
    let mut con = server.connection("");
    let fixed = |max| FixedWindow::new(rule(max, HOUR as u64, 1));
    let limiter = store.limiter(fixed(2)).unwrap();
    let keys = limiter.redis_keys("eve", Now::Server);
    // The fast script (one rule deciding), then the general one (per-rule detail).
    let fast = || limiter.try_acquire("eve", Now::Server).unwrap().allowed;
    a_denial_writes_nothing(&mut con, &keys, 2, 2, &fast);
    let general = || {
        limiter
            .try_acquire_all("eve", 1, Now::Server)
            .unwrap()
            .decision
            .allowed
    };
    a_denial_writes_nothing(&mut con, &keys, 2, 2, &general);
    // A composite: the second rule's count is left as it was too.
    let both = store
        .limiter(ratesim::Composite::new(vec![fixed(2), fixed(100)]).unwrap())
        .unwrap();
    let keys = both.redis_keys("eve", Now::Server);
    let composite = || both.try_acquire("eve", Now::Server).unwrap().allowed;
    a_denial_writes_nothing(&mut con, &keys, 2, 4, &composite);
    // A caller's instant still writes on a denial: it renews the safety TTL.
    let t = Now::Caller(Nanos::new(5));
    for _ in 0..2 {
        assert!(limiter.try_acquire("eve", t).unwrap().allowed);
    }
    reset_stats(&mut con);
    assert!(!limiter.try_acquire("eve", t).unwrap().allowed);
    assert_eq!(sets_run(&mut con), 1, "the safety TTL is renewed");
}

#[test]
fn a_log_denial_on_the_server_clock_leaves_the_lists_expiry_alone() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "logdeny").unwrap();
    let mut con = server.connection("");
    let limiter = store
        .limiter(SlidingWindowLog::new(rule(2, HOUR as u64, 1)))
        .unwrap();
    let keys = limiter.redis_keys("eve", Now::Server);
    let fast = || limiter.try_acquire("eve", Now::Server).unwrap().allowed;
    let general = || {
        (limiter.try_acquire_all("eve", 1, Now::Server).unwrap())
            .decision
            .allowed
    };
    for decide in [&fast as &dyn Fn() -> bool, &general] {
        con.del::<_, ()>(&keys).unwrap();
        reset_stats(&mut con);
        assert!(decide() && decide());
        assert_eq!(
            calls(&mut con, "pexpireat"),
            2,
            "each entry logged moves it"
        );
        let expires = expire_ms(&mut con, &keys[1]);
        reset_stats(&mut con);
        assert!(!decide());
        assert_eq!(
            calls(&mut con, "pexpireat"),
            0,
            "a denial moved the list's expiry"
        );
        assert_eq!(sets_run(&mut con), 1, "the state records the instant");
        assert_eq!(expire_ms(&mut con, &keys[1]), expires);
    }
}

#[test]
fn caller_instants_set_only_the_safety_ttl_and_never_delete() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "fake").unwrap();
    let mut con = server.connection("");
    let limiter = store.limiter(TokenBucket::new(rule(1, 1_000, 2))).unwrap();
    let key = limiter.redis_key("bob", Now::Caller(Nanos::ZERO));
    limiter
        .try_acquire_n("bob", 0, Now::Caller(Nanos::new(500)))
        .unwrap();
    assert!(
        con.exists::<_, bool>(&key).unwrap(),
        "an idle key is kept (it remembers `last`)"
    );
    // Fake time has no relation to the server's clock: only the safety TTL, refreshed
    // by every write, so a key left by a killed process expires on its own.
    let most = ratesim::redis::CALLER_TTL.as_millis() as i64;
    let pttl = con.pttl::<_, i64>(&key).unwrap();
    assert!(
        pttl > most - 60_000 && pttl <= most,
        "the safety TTL: {pttl}"
    );
    // Backwards after an idle state: waits are still measured from the state's `last`.
    limiter
        .try_acquire_n("bob", 2, Now::Caller(Nanos::new(500)))
        .unwrap();
    let d = limiter
        .try_acquire("bob", Now::Caller(Nanos::new(100)))
        .unwrap();
    assert_eq!((d.allowed, d.retry_after), (false, Nanos::new(400 + 1000)));
}

#[test]
fn keys_are_hash_tagged_per_client_and_separate_rules_and_time_modes() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "app").unwrap();
    let a = store.limiter(TokenBucket::new(rule(5, 1_000, 5))).unwrap();
    let b = store.limiter(Gcra::new(rule(100, 60_000, 10))).unwrap();
    let tag = |k: &str| k[k.find('{').unwrap()..=k.find('}').unwrap()].to_owned();
    for client in ["alice", "we}ird{client", "{x}"] {
        let (ka, kb) = (
            a.redis_key(client, Now::Server),
            b.redis_key(client, Now::Server),
        );
        assert!(ka.starts_with("app:{"), "{ka}");
        assert_eq!(tag(&ka), tag(&kb), "one client's rules share one slot");
        assert_eq!(tag(&ka).len(), 18, "a fixed-width hex tag: {ka}");
        assert_ne!(ka, kb, "rules do not share state");
        assert_ne!(
            ka,
            a.redis_key(client, Now::Caller(Nanos::ZERO)),
            "nor time modes"
        );
    }
    assert_ne!(
        tag(&a.redis_key("alice", Now::Server)),
        tag(&a.redis_key("bob", Now::Server))
    );
    // A composite's parts (and a log's entry list) all share the client's slot.
    let log = store
        .limiter(SlidingWindowLog::new(rule(5, 1_000, 1)))
        .unwrap();
    let both = store.composite(vec![a.clone(), log]).unwrap();
    let keys = both.redis_keys("alice", Now::Server);
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.iter().all(|k| tag(k) == tag(&keys[0])), "{keys:?}");
    assert!(keys[2].ends_with(":1:log"), "{keys:?}");
    assert_eq!(both.algorithm(), "composite");
    let e = RedisStore::open(&server.url(), "a{b}").unwrap_err();
    assert_eq!(e.kind(), FailureKind::InvalidConfig);
}

#[test]
fn a_flushed_script_cache_is_reloaded_and_a_cost_above_capacity_never_reaches_redis() {
    let Some(mut server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "ns").unwrap();
    let limiter = store.limiter(LeakyBucket::new(rule(2, 1_000, 2))).unwrap();
    assert!(limiter.try_acquire("k", Now::Server).unwrap().allowed);
    let mut con = server.connection("");
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut con).unwrap();
    let d = limiter.try_acquire("k", Now::Caller(Nanos::ZERO)).unwrap();
    assert!(d.allowed, "NOSCRIPT: SCRIPT LOAD and retried");

    server.kill();
    let e = limiter
        .try_acquire_n("k", 3, Now::Server)
        .expect_err("cost 3 > capacity 2");
    assert_eq!(
        e,
        RedisError::InsufficientCapacity(InsufficientCapacity {
            cost: 3,
            capacity: 2
        }),
        "refused before any round trip (the server is down)"
    );
}

#[test]
fn a_composite_of_one_algorithm_is_one_limiter_that_decides_as_in_memory() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "one").unwrap();
    // 3 per second and 5 per 10 s, both sliding logs: the second binds from the 4th.
    let make = || {
        ratesim::Composite::new(vec![
            SlidingWindowLog::new(rule(3, 1_000_000_000, 1)),
            SlidingWindowLog::new(rule(5, 10_000_000_000, 1)),
        ])
        .unwrap()
    };
    let redis = store.limiter(make()).unwrap();
    assert_eq!(
        (redis.algorithm(), redis.capacity()),
        ("sliding_window_log", 3)
    );
    let clock = FakeClock::new(Nanos::ZERO);
    let memory = RateLimiter::<_, String, FakeClock>::with_clock(make(), clock.clone());
    let mut denied_by = Vec::new();
    for (i, at) in [
        0u64,
        1,
        2,
        3,
        1_000_000_000,
        1_000_000_001,
        2_500_000_000,
        9,
        4,
    ]
    .into_iter()
    .enumerate()
    {
        clock.set(Nanos::new(at));
        let cost = 1 + (i as u64 % 2);
        let want = memory.try_acquire_all("k", cost);
        let got = redis
            .try_acquire_all("k", cost, Now::Caller(Nanos::new(at)))
            .unwrap();
        assert_eq!(got, want, "step {i} at {at} cost {cost}");
        denied_by.push(got.denied_by);
    }
    assert!(
        denied_by.contains(&Some(0)) && denied_by.contains(&Some(1)),
        "{denied_by:?}"
    );
}

/// Two limiters' first pipelines sent at once (an eviction sweep of 5,000 keys each, on
/// their own connections) to a server that has not seen the script: each must run
/// whole. The server reads a long pipeline in parts, so another connection's
/// `SCRIPT LOAD` can land between its commands; a pipeline answered `NOSCRIPT` only in
/// part has run the rest and cannot be resent, and failed the simulator's run (seen
/// once in tests/redis_faults.rs under load). Twenty rounds, the scripts flushed
/// before each, fresh limiters each time.
#[test]
fn first_pipelines_sent_at_once_run_whole() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let mut con = server.connection("");
    let keys: Vec<String> = (0..5_000).map(|i| format!("k{i}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let r = rule(10, 1_000_000_000, 10);
    for round in 0..20 {
        let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut con).unwrap();
        let barrier = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            for side in ["a", "b"] {
                let (barrier, keys, url) = (&barrier, &keys, server.url());
                s.spawn(move || {
                    let store = RedisStore::open(&url, side).unwrap();
                    let limiter = store.limiter(TokenBucket::new(r)).unwrap();
                    barrier.wait();
                    let swept = limiter.evict_idle(keys, Nanos::from_secs(1));
                    assert!(swept.is_ok(), "round {round}, side {side}: {swept:?}");
                });
            }
        });
    }
}
