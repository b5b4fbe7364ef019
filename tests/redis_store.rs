//! The Redis store on a real `redis-server`: the representable bound end to end, key
//! expiry (design §7), hash-tagged keys (§8), NOSCRIPT, and no over-admission with 16
//! threads over 2 processes on one hot key.

mod redis_support;

use std::process::Command;
use std::sync::Barrier;
use std::time::{Duration, Instant};

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
        let expire_ms: i64 = redis::cmd("PEXPIRETIME").arg(&key).query(&mut con).unwrap();
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
            let expire_ms: i64 = redis::cmd("PEXPIRETIME").arg(key).query(&mut con).unwrap();
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

#[test]
fn caller_instants_set_no_ttl_and_never_delete() {
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
    assert_eq!(con.pttl::<_, i64>(&key).unwrap(), -1, "no TTL on fake time");
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

const HOT_URL: &str = "RATESIM_REDIS_HOT_URL";
const HOT_ALGO: &str = "RATESIM_REDIS_HOT_ALGORITHM";
const HOT_SECS: f64 = 1.0;
const HOUR: u64 = 3_600_000_000_000;

/// The hot key's limiter for `name`, on server time. The buckets: 2000/s, burst 50
/// (the design's hot-key measurement). The windows and the log: 3000 per hour, so a
/// run almost always sits inside one window and must admit exactly 3000.
fn hot_limiter(store: &RedisStore, name: &str) -> ratesim::redis::RedisLimiter {
    let r = if name.contains("bucket") || name == "gcra" {
        rule(2000, 1_000_000_000, 50)
    } else {
        rule(3000, HOUR, 1)
    };
    redis_support::limiter(store, name, r).with_timeout(Duration::from_secs(2))
}

/// 8 threads, one connection each, hammering one key until `HOT_SECS` have passed.
/// Returns (admitted, decisions).
fn hammer(url: &str, name: &str) -> (u64, u64) {
    let store = RedisStore::open(url, "hot").unwrap();
    let limiter = hot_limiter(&store, name);
    let start = Barrier::new(8);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let end = Instant::now() + Duration::from_secs_f64(HOT_SECS);
                    let (mut admitted, mut decisions) = (0, 0);
                    while Instant::now() < end {
                        let d = limiter.try_acquire("login", Now::Server).unwrap();
                        admitted += u64::from(d.allowed);
                        decisions += 1;
                    }
                    (admitted, decisions)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    })
}

/// The second process of the hot-key test (the test binary re-invoked); a no-op when
/// run on its own.
#[test]
fn hot_key_child() {
    if let (Ok(url), Ok(name)) = (std::env::var(HOT_URL), std::env::var(HOT_ALGO)) {
        let (admitted, decisions) = hammer(&url, &name);
        println!("HOT admitted={admitted} decisions={decisions}");
    }
}

/// The most `name` may admit between the server instants `t0` and `t1` (ns), and
/// whether it must admit exactly that many (a contended run inside one window).
fn hot_bound(name: &str, t0: u128, t1: u128) -> (u128, bool) {
    if name.contains("bucket") || name == "gcra" {
        return (50 + (t1 - t0) * 2000 / 1_000_000_000, false);
    }
    // Fixed window and counter: at most the quota per aligned window touched (the
    // counter's estimate is never below its own window's count). The log: at most the
    // quota in any hour, and the run is far shorter.
    let hour = u128::from(HOUR);
    let windows = t1 / hour - t0 / hour + 1;
    let bound = if name == "sliding_window_log" {
        1
    } else {
        windows
    };
    (3000 * bound, windows == 1)
}

#[test]
fn sixteen_threads_in_two_processes_never_over_admit_one_hot_key() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let mut con = server.connection("");
    for name in redis_support::ALGORITHMS {
        let t0 = server_ns(&mut con);
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "hot_key_child",
                "--exact",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(HOT_URL, server.url())
            .env(HOT_ALGO, name)
            .output_async();
        let (mine, my_decisions) = hammer(&server.url(), name);
        let out = child.wait_with_output().unwrap();
        let t1 = server_ns(&mut con);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find_map(|l| l.split_once("HOT ").map(|(_, rest)| rest))
            .unwrap_or_else(|| panic!("child said nothing: {stdout}"));
        let field = |key: &str| -> u64 {
            line.split(' ')
                .find_map(|kv| kv.strip_prefix(key))
                .unwrap()
                .parse()
                .unwrap()
        };
        let (theirs, their_decisions) = (field("admitted="), field("decisions="));
        let admitted = mine + theirs;
        let decisions = my_decisions + their_decisions;
        // Measured on the server's clock around everything both processes did.
        let (bound, exact) = hot_bound(name, t0, t1);
        println!(
            "{name}: {decisions} decisions ({:.0}/s) by 16 threads in 2 processes, {admitted} admitted ≤ {bound}",
            decisions as f64 / HOT_SECS
        );
        assert!(
            mine > 0 && theirs > 0,
            "{name}: both processes admitted some"
        );
        assert!(
            u128::from(admitted) <= bound,
            "{name}: {admitted} > {bound}"
        );
        assert!(
            decisions > admitted,
            "{name}: the key was contended past its rate"
        );
        if exact {
            assert_eq!(u128::from(admitted), bound, "{name}: under-admitted");
        }
    }
}

trait OutputAsync {
    fn output_async(&mut self) -> std::process::Child;
}

impl OutputAsync for Command {
    fn output_async(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap()
    }
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

#[test]
fn the_middleware_on_redis_answers_as_in_memory_with_headers_and_hot_reload() {
    let Some(mut server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "mw").unwrap();
    let clock = FakeClock::new(Nanos::from_secs(1_000));
    let redis = ratesim::Middleware::with_store(
        store.endpoints().with_clock(clock.clone()),
        ratesim::Registry::default(),
    );
    let memory = ratesim::Middleware::with_clock(clock.clone());
    let login = rule(3, 60_000_000_000, 3);
    let search = rule(5, 1_000_000_000, 2);
    for mw in [&redis as &dyn Rules, &memory] {
        mw.set("/login", login, "sliding_window_log");
        mw.set("/search", search, "token_bucket");
    }
    let requests = |n: usize| {
        for i in 0..n {
            clock.advance(Nanos::from_millis(90));
            for (endpoint, client) in [("/login", "alice"), ("/search", "bob"), ("/x", "carol")] {
                let want = memory.check_with_headers(endpoint, client);
                let got = redis.check_with_headers(endpoint, client);
                assert_eq!(got, want, "request {i} {endpoint} {client}");
            }
        }
    };
    requests(40);
    // Hot reload: /login unchanged keeps its clients' states, /search changes and starts
    // fresh, in both stores alike.
    let wider = rule(10, 1_000_000_000, 10);
    let reload = |mw: &dyn Rules| {
        mw.replace(vec![
            ("/login", login, "sliding_window_log"),
            ("/search", wider, "fixed_window"),
        ])
    };
    reload(&redis);
    reload(&memory);
    requests(40);

    // A plugin algorithm has no script: refused, and the rules stay as they were.
    let mut registry = ratesim::Registry::default();
    registry.register("mine", "a plugin", |r| {
        ratesim::Registry::default().create("gcra", r).unwrap()
    });
    let plugins = ratesim::Middleware::with_store(store.endpoints(), registry);
    let e = plugins.add_rule("/p", login, "mine").unwrap_err();
    assert!(e.to_string().contains("not a built-in"), "{e}");
    assert!(plugins.add_rule("/p", login, "nope").is_err());
    // Server time, and the store's failure reaches the caller typed, by policy.
    plugins.add_rule("/p", login, "gcra").unwrap();
    assert!(plugins.check("/p", "dave").allowed);
    server.kill();
    let e = plugins.try_check("/p", "dave").unwrap_err();
    assert_eq!(
        e.fallback().map(|d| d.allowed),
        Some(false),
        "fails closed: {e}"
    );
    assert!(!plugins.check("/p", "dave").allowed);
}

/// What the test needs of a middleware, on either store.
trait Rules {
    fn set(&self, endpoint: &str, rule: Rule, algorithm: &str);
    fn replace(&self, rules: Vec<(&str, Rule, &str)>);
}

impl<S: ratesim::Store> Rules for ratesim::Middleware<S> {
    fn set(&self, endpoint: &str, rule: Rule, algorithm: &str) {
        self.add_rule(endpoint, rule, algorithm).unwrap();
    }
    fn replace(&self, rules: Vec<(&str, Rule, &str)>) {
        let rules = rules.into_iter().map(|(e, rule, a)| {
            let spec = ratesim::EndpointRule {
                rule,
                algorithm: a.to_owned(),
            };
            (e, spec)
        });
        self.replace_rules(rules).unwrap();
    }
}
