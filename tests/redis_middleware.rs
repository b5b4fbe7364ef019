//! The `Middleware` on the Redis store: the same decisions and headers as in memory,
//! hot reload, plugins refused, and a dead server failing by policy with a typed error.

mod redis_support;

use ratesim::redis::RedisStore;
use ratesim::{FakeClock, Nanos, Rule};

fn rule(max: u64, w: u64, burst: u64) -> Rule {
    Rule::new(max, Nanos::new(w))
        .unwrap()
        .with_burst(burst)
        .unwrap()
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
    // The RedisStore itself is a Store: `endpoints()`' defaults (server time, closed).
    let plugins = ratesim::Middleware::with_store(store, registry);
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
