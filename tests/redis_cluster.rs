//! The Redis store on a real Redis Cluster: three `redis-server` masters this test
//! starts on free loopback ports in a temp dir, joined by `redis-cli --cluster create`.
//! Decisions equal the in-memory ones for every algorithm, a composite and the
//! `Middleware` (answers and headers); a client's keys share one slot; a slot migrated
//! mid-stream (`ASK` while its keys move, `MOVED` after, the script missing on the new
//! master) changes no decision; a stopped master costs one timeout and charges a
//! request at most once; seeds that cannot work are typed errors.

mod redis_support;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ratesim::redis::{FailureKind, FailurePolicy, Now, RedisError, RedisLimiter, RedisStore};
use ratesim::{
    BoxedAlgorithm, Composite, Decision, FakeClock, InsufficientCapacity, Nanos, RateLimiter,
    Registry, Rule,
};

/// Three masters of one cluster, killed on drop.
struct Cluster {
    dir: tempfile::TempDir,
    ports: Vec<u16>,
    children: Vec<Child>,
}

/// A loopback port nothing listens on now (the kernel's pick; the listener is closed
/// before the server binds it, so another process could take it first: the server then
/// fails to start and the test says so).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

fn tools_installed() -> bool {
    let runs = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    runs("redis-server") && runs("redis-cli")
}

impl Cluster {
    /// A fresh cluster in state `ok`, or `None` (after a loud SKIPPED line) when
    /// `redis-server`/`redis-cli` are not installed and RATESIM_REQUIRE_REDIS is unset.
    fn start() -> Option<Cluster> {
        if !tools_installed() {
            assert!(
                std::env::var_os("RATESIM_REQUIRE_REDIS").is_none(),
                "RATESIM_REQUIRE_REDIS is set but redis-server/redis-cli are not on PATH"
            );
            eprintln!(
                "SKIPPED: redis-server or redis-cli not found (apt-get install redis-server)"
            );
            println!("SKIPPED: redis-server or redis-cli not found (apt-get install redis-server)");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("ratesim-cluster")
            .tempdir()
            .expect("a temp dir");
        let mut cluster = Cluster {
            dir,
            ports: Vec::new(),
            children: Vec::new(),
        };
        for i in 0..3 {
            let (child, port) = cluster.spawn_node(i);
            cluster.children.push(child);
            cluster.ports.push(port);
        }
        let nodes: Vec<String> = cluster
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&nodes)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli runs");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for i in 0..3 {
            cluster.wait_until(&format!("node {i} reports cluster_state:ok"), || {
                cluster
                    .try_node(i)
                    .and_then(|mut c| redis::cmd("CLUSTER").arg("INFO").query::<String>(&mut c))
                    .is_ok_and(|info| info.contains("cluster_state:ok"))
            });
        }
        Some(cluster)
    }

    /// Starts node `i` on a fresh pair of free ports and waits until it answers PING.
    /// A port taken between our check and the server's bind (a client's ephemeral
    /// port) makes the server exit: then new ports are tried, up to three times.
    fn spawn_node(&self, i: usize) -> (Child, u16) {
        let node_dir = self.dir.path().join(format!("n{i}"));
        std::fs::create_dir_all(&node_dir).expect("a node dir");
        for _ in 0..3 {
            let port = free_port();
            let bus = free_port();
            if bus == port || self.ports.contains(&port) || self.ports.contains(&bus) {
                continue;
            }
            let mut child = Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args([
                    "--cluster-enabled",
                    "yes",
                    "--cluster-port",
                    &bus.to_string(),
                ])
                .args(["--cluster-config-file", "nodes.conf"])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(&node_dir)
                .arg("--logfile")
                .arg(node_dir.join("log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server starts");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if child.try_wait().ok().flatten().is_some() {
                    break; // exited: most likely the port was taken
                }
                let answers = redis::Client::open(format!("redis://127.0.0.1:{port}"))
                    .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(500)))
                    .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                    .is_ok();
                if answers {
                    return (child, port);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!(
            "node {i} did not start on three pairs of ports; logs:\n{}",
            self.logs()
        );
    }

    fn wait_until(&self, what: &str, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ready() {
            assert!(
                Instant::now() < deadline,
                "the cluster did not get ready in 20 s: {what}; logs:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn logs(&self) -> String {
        (0..3)
            .map(|i| {
                let path = self.dir.path().join(format!("n{i}/log"));
                std::fs::read_to_string(path).unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("\n---\n")
    }

    fn urls(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect()
    }

    fn try_node(&self, i: usize) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}", self.ports[i]))?
            .get_connection_with_timeout(Duration::from_secs(2))
    }

    /// A plain (not cluster-aware) connection to node `i`.
    fn node(&self, i: usize) -> redis::Connection {
        self.try_node(i).expect("a connection to a cluster node")
    }

    /// The node id of node `i`.
    fn id(&self, i: usize) -> String {
        redis::cmd("CLUSTER")
            .arg("MYID")
            .query(&mut self.node(i))
            .unwrap()
    }

    /// The slot of `key`.
    fn slot(&self, key: &str) -> u16 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut self.node(0))
            .unwrap()
    }

    /// The index of the master that serves `slot`, as every node sees it (they must
    /// agree), from `CLUSTER NODES`: `<id> <host:port@bus> <flags> … <slot ranges>`.
    fn owner(&self, slot: u16) -> usize {
        let owners: Vec<usize> = (0..3)
            .map(|i| {
                let nodes: String = redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query(&mut self.node(i))
                    .unwrap();
                let line = nodes
                    .lines()
                    .find(|line| {
                        line.split(' ').skip(8).any(|range| {
                            let mut ends = range.split('-').map(str::parse::<u16>);
                            match (ends.next(), ends.next()) {
                                (Some(Ok(lo)), Some(Ok(hi))) => (lo..=hi).contains(&slot),
                                (Some(Ok(one)), None) => one == slot,
                                _ => false, // `[slot->-id]`: a migration marker
                            }
                        })
                    })
                    .unwrap_or_else(|| panic!("slot {slot} unserved:\n{nodes}"));
                let addr = line.split(' ').nth(1).unwrap();
                let port: u16 = addr.split(['@', ':']).nth(1).unwrap().parse().unwrap();
                self.ports.iter().position(|p| *p == port).unwrap()
            })
            .collect();
        assert!(owners.windows(2).all(|w| w[0] == w[1]), "{owners:?}");
        owners[0]
    }

    /// How many errors of `code` (`MOVED`, `ASK`, `NOSCRIPT`) node `i` has replied.
    fn error_count(&self, i: usize, code: &str) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("errorstats")
            .query(&mut self.node(i))
            .unwrap();
        let prefix = format!("errorstat_{code}:count=");
        info.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map_or(0, |n| n.trim().parse().unwrap())
    }

    fn signal(&self, i: usize, sig: &str) {
        let ok = Command::new("kill")
            .arg(sig)
            .arg(self.children[i].id().to_string())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} node {i}");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill(); // SIGKILL ends a stopped (SIGSTOP) node too
            let _ = child.wait();
        }
    }
}

/// How long a decision may take here: the machine may be busy, and a timeout is a
/// failure of these tests, not a result.
const PATIENCE: Duration = Duration::from_secs(5);

/// The rule every single-algorithm stream runs on: 5 per second, burst 8.
fn rule() -> Rule {
    Rule::new(5, Nanos::from_secs(1))
        .unwrap()
        .with_burst(8)
        .unwrap()
}

/// One Redis limiter and its in-memory twin on a fake clock.
struct Pair {
    name: String,
    redis: RedisLimiter,
    memory: RateLimiter<BoxedAlgorithm, String, FakeClock>,
    clock: FakeClock,
}

impl Pair {
    fn new(store: &RedisStore, name: &str, rule: Rule) -> Pair {
        let clock = FakeClock::new(Nanos::ZERO);
        let algo = Registry::default().create(name, rule).unwrap();
        Pair {
            name: name.to_owned(),
            redis: redis_support::limiter(store, name, rule).with_timeout(PATIENCE),
            memory: RateLimiter::with_clock(algo, clock.clone()),
            clock,
        }
    }

    /// One decision on both sides; they must be equal.
    fn check(&self, key: &str, now: u64, cost: u64, context: &str) -> Decision {
        self.clock.set(Nanos::new(now));
        let want = self.memory.try_acquire_n(key, cost);
        let got = match self
            .redis
            .try_acquire_n(key, cost, Now::Caller(Nanos::new(now)))
        {
            Ok(d) => Ok(d),
            Err(RedisError::InsufficientCapacity(e)) => Err(e),
            Err(e) => panic!(
                "{} key {key} at {now} ({context}): redis failed: {e}",
                self.name
            ),
        };
        assert_eq!(
            got, want,
            "{} key {key} now={now} cost={cost} ({context})",
            self.name
        );
        want.unwrap_or(Decision {
            allowed: false,
            remaining: 0,
            retry_after: Nanos::MAX,
            reset_after: Nanos::MAX,
        })
    }
}

/// A composite of three algorithms in Redis and in memory.
struct CompositePair {
    redis: RedisLimiter,
    memory: RateLimiter<Composite<BoxedAlgorithm>, String, FakeClock>,
    clock: FakeClock,
}

impl CompositePair {
    fn new(store: &RedisStore) -> CompositePair {
        let rules = [
            ("token_bucket", rule()),
            ("fixed_window", Rule::new(12, Nanos::from_secs(3)).unwrap()),
            (
                "sliding_window_log",
                Rule::new(7, Nanos::from_secs(2)).unwrap(),
            ),
        ];
        let redis = rules
            .iter()
            .map(|(name, rule)| redis_support::limiter(store, name, *rule))
            .collect();
        let memory = rules
            .iter()
            .map(|(name, rule)| Registry::default().create(name, *rule).unwrap())
            .collect();
        let clock = FakeClock::new(Nanos::ZERO);
        CompositePair {
            redis: store.composite(redis).unwrap().with_timeout(PATIENCE),
            memory: RateLimiter::with_clock(Composite::new(memory).unwrap(), clock.clone()),
            clock,
        }
    }

    fn check(&self, key: &str, now: u64, cost: u64, context: &str) {
        self.clock.set(Nanos::new(now));
        let want = self.memory.try_acquire_all(key, cost);
        let got = self
            .redis
            .try_acquire_all(key, cost, Now::Caller(Nanos::new(now)))
            .unwrap_or_else(|e| panic!("composite key {key} at {now} ({context}): {e}"));
        assert_eq!(
            got, want,
            "composite key {key} now={now} cost={cost} ({context})"
        );
    }
}

/// `add_rule` on either store's Middleware.
trait AddRule {
    fn add(&self, endpoint: &str, rule: Rule, algorithm: &str);
}

impl<S: ratesim::Store> AddRule for ratesim::Middleware<S> {
    fn add(&self, endpoint: &str, rule: Rule, algorithm: &str) {
        self.add_rule(endpoint, rule, algorithm).unwrap();
    }
}

/// xorshift64: a deterministic stream of steps and costs.
struct Rng(u64);

impl Rng {
    fn below(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m
    }
}

#[test]
fn a_three_master_cluster_decides_as_in_memory_and_keeps_a_client_in_one_slot() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let store = RedisStore::open_cluster(&cluster.urls(), "clu").unwrap();
    assert!(store.is_cluster());
    let debug = format!("{store:?}");
    assert!(
        debug.contains("cluster") && debug.contains("clu"),
        "{debug}"
    );

    let pairs: Vec<Pair> = redis_support::ALGORITHMS
        .iter()
        .map(|name| Pair::new(&store, name, rule()))
        .collect();
    let composite = CompositePair::new(&store);
    let clients: Vec<String> = (0..12).map(|i| format!("client-{i}")).collect();

    // Every client's keys, over every limiter, share one slot; the clients spread over
    // all three masters, so the test routes to each of them.
    let mut masters = std::collections::BTreeSet::new();
    for client in &clients {
        let mut keys = composite.redis.redis_keys(client, Now::Caller(Nanos::ZERO));
        for pair in &pairs {
            keys.extend(pair.redis.redis_keys(client, Now::Caller(Nanos::ZERO)));
        }
        assert!(keys.len() >= 10, "{keys:?}");
        let slots: Vec<u16> = keys.iter().map(|k| cluster.slot(k)).collect();
        assert!(
            slots.iter().all(|s| *s == slots[0]),
            "{client}: keys in slots {slots:?}: {keys:?}"
        );
        masters.insert(cluster.owner(slots[0]));
    }
    assert_eq!(
        masters.len(),
        3,
        "12 clients should reach all three masters"
    );

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut now = 1_000_000_000u64;
    let (mut decisions, mut denied) = (0u64, 0u64);
    for step in 0..60 {
        now += rng.below(400_000_000);
        for client in &clients {
            let cost = [0, 1, 1, 1, 2, 8, 9][rng.below(7) as usize];
            for pair in &pairs {
                let d = pair.check(client, now, cost, &format!("step {step}"));
                decisions += 1;
                denied += u64::from(!d.allowed);
            }
            composite.check(client, now, cost, &format!("step {step}"));
        }
    }
    println!("{decisions} identical decisions on the cluster ({denied} denied)");
    assert!(denied > decisions / 10, "the stream should hit the limits");

    // The simulator's calls on a cluster: a peek reads what memory reads and changes
    // nothing (the next decisions still agree), and an eviction far in the future finds
    // every client idle and deletes its keys, one call per key (no pipelining there).
    for pair in &pairs {
        pair.clock.set(Nanos::new(now));
        for client in &clients {
            let peeked = pair.redis.peek_n(client, 0, Nanos::new(now)).unwrap();
            assert_eq!(
                peeked.remaining,
                pair.memory.peek(client).remaining,
                "{} {client}: peek",
                pair.name
            );
            pair.check(client, now, 1, "after a peek");
        }
        let later = Nanos::new(now + 86_400_000_000_000);
        let names: Vec<&str> = clients.iter().map(String::as_str).collect();
        let evicted = pair.redis.evict_idle(&names, later).unwrap();
        assert!(evicted.iter().all(|&e| e), "{}: {evicted:?}", pair.name);
        let key = &pair.redis.redis_keys(&clients[0], Now::Caller(later))[0];
        let node = cluster.owner(cluster.slot(key));
        let exists: bool = redis::cmd("EXISTS")
            .arg(key)
            .query(&mut cluster.node(node))
            .unwrap();
        assert!(!exists, "{}: {key} survived its eviction", pair.name);
    }

    // The Middleware on the cluster: the same answers and headers as in memory.
    let clock = FakeClock::new(Nanos::from_secs(1_000));
    let on_cluster = ratesim::Middleware::with_store(
        store
            .endpoints()
            .with_clock(clock.clone())
            .with_timeout(PATIENCE),
        Registry::default(),
    );
    let in_memory = ratesim::Middleware::with_clock(clock.clone());
    for mw in [&on_cluster as &dyn AddRule, &in_memory] {
        mw.add(
            "/login",
            Rule::new(3, Nanos::from_secs(60)).unwrap(),
            "sliding_window_log",
        );
        mw.add("/search", rule(), "token_bucket");
    }
    for i in 0..30 {
        clock.advance(Nanos::from_millis(90));
        for endpoint in ["/login", "/search", "/unknown"] {
            for client in &clients[..4] {
                assert_eq!(
                    on_cluster.check_with_headers(endpoint, client),
                    in_memory.check_with_headers(endpoint, client),
                    "middleware request {i} {endpoint} {client}"
                );
            }
        }
    }

    // The state lives on the master that owns the client's slot, and only there.
    let key = &pairs[0]
        .redis
        .redis_keys("client-0", Now::Caller(Nanos::ZERO))[0];
    let owner = cluster.owner(cluster.slot(key));
    for i in 0..3 {
        let count: u64 = redis::cmd("CLUSTER")
            .arg("COUNTKEYSINSLOT")
            .arg(cluster.slot(key))
            .query(&mut cluster.node(i))
            .unwrap();
        assert_eq!(count > 0, i == owner, "node {i}: {count} keys in the slot");
    }
}

#[test]
fn decisions_stay_equal_while_a_slot_migrates_to_another_master() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let store = RedisStore::open_cluster(&cluster.urls()[..1], "mig").unwrap();
    let pairs: Vec<Pair> = redis_support::ALGORITHMS
        .iter()
        .map(|name| Pair::new(&store, name, rule()))
        .collect();
    let composite = CompositePair::new(&store);
    let client = "mover";
    let keys_of = |pair: &Pair| pair.redis.redis_keys(client, Now::Caller(Nanos::ZERO));
    let slot = cluster.slot(&keys_of(&pairs[0])[0]);
    let source = cluster.owner(slot);
    let target = (source + 1) % 3;
    let (source_id, target_id) = (cluster.id(source), cluster.id(target));

    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut now = 5_000_000_000u64;
    // Every limiter decides for the client at the same instants; all must match memory.
    let mut stream = |phase: &str, steps: usize, only_first: bool| {
        for step in 0..steps {
            now += rng.below(300_000_000);
            let cost = [0, 1, 1, 2, 8][rng.below(5) as usize];
            let context = format!("{phase}, step {step}");
            let chosen = if only_first { &pairs[..1] } else { &pairs[..] };
            for pair in chosen {
                pair.check(client, now, cost, &context);
            }
            if !only_first {
                composite.check(client, now, cost, &context);
            }
        }
    };

    stream("before the migration", 20, false);
    let (moved, asked) = (
        cluster.error_count(source, "MOVED"),
        cluster.error_count(source, "ASK"),
    );
    let noscript = cluster.error_count(target, "NOSCRIPT");

    // Open the migration: the target imports, the source migrates.
    let setslot = |node: usize, args: &[&str]| {
        redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg(args)
            .query::<()>(&mut cluster.node(node))
            .unwrap();
    };
    setslot(target, &["IMPORTING", &source_id]);
    setslot(source, &["MIGRATING", &target_id]);
    stream("migrating, keys still on the source", 5, false);

    // Move the token bucket's key first: the source answers ASK for it alone.
    let target_port = cluster.ports[target];
    let migrate = |keys: &[String]| {
        redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(target_port)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("KEYS")
            .arg(keys)
            .query::<String>(&mut cluster.node(source))
            .unwrap();
    };
    migrate(&keys_of(&pairs[0]));
    stream("the token bucket's key moved", 5, true);
    assert!(
        cluster.error_count(source, "ASK") > asked,
        "the source should have answered ASK for the moved key"
    );

    // Then every other key of the slot.
    let rest: Vec<String> = redis::cmd("CLUSTER")
        .arg("GETKEYSINSLOT")
        .arg(slot)
        .arg(1000)
        .query(&mut cluster.node(source))
        .unwrap();
    assert!(rest.len() >= 6, "{rest:?}");
    migrate(&rest);
    stream("keys moved, slot still migrating", 5, false);

    // The new master forgets its scripts, then the slot becomes its own everywhere.
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query::<()>(&mut cluster.node(target))
        .unwrap();
    for node in [target, source, (source + 2) % 3] {
        setslot(node, &["NODE", &target_id]);
    }
    stream("after the migration", 20, false);

    assert_eq!(cluster.owner(slot), target);
    assert!(
        cluster.error_count(source, "MOVED") > moved,
        "the store's stale slot map should have met a MOVED"
    );
    assert!(
        cluster.error_count(target, "NOSCRIPT") > noscript,
        "the flushed script should have been reloaded on NOSCRIPT"
    );
    let left: u64 = redis::cmd("CLUSTER")
        .arg("COUNTKEYSINSLOT")
        .arg(slot)
        .query(&mut cluster.node(source))
        .unwrap();
    assert_eq!(left, 0, "no key of the slot stays on the source");
}

#[test]
fn a_stopped_master_costs_one_timeout_and_charges_a_request_at_most_once() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let store = RedisStore::open_cluster(&cluster.urls(), "stop").unwrap();
    let timeout = Duration::from_millis(150);
    let window = Rule::new(5, Nanos::from_secs(3600)).unwrap();
    let limiter = redis_support::limiter(&store, "fixed_window", window)
        .with_policy(FailurePolicy::Open)
        .with_timeout(timeout);
    let at = Now::Caller(Nanos::from_secs(10));
    let client = "paused";
    let other = (0..100)
        .map(|i| format!("other-{i}"))
        .find(|k| {
            let slot = |k: &str| cluster.slot(&limiter.redis_key(k, at));
            cluster.owner(slot(k)) != cluster.owner(slot(client))
        })
        .unwrap();
    // Only the call under test has the short timeout: the machine may be busy.
    let patient = limiter.clone().with_timeout(PATIENCE);
    // Warm up: the script is loaded and the connection pooled.
    assert!(patient.try_acquire(&other, at).unwrap().allowed);
    let master = cluster.owner(cluster.slot(&limiter.redis_key(client, at)));

    cluster.signal(master, "-STOP");
    let started = Instant::now();
    let result = limiter.try_acquire(client, at);
    let waited = started.elapsed();
    cluster.signal(master, "-CONT");
    match result {
        Err(RedisError::Unavailable {
            error, fallback, ..
        }) => {
            assert_eq!(error.kind(), FailureKind::Timeout, "{error}");
            assert!(fallback.allowed, "failing open admits");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    // redis-rs alone resends the script on each of the 4 retries, each after a full
    // timeout: 5 × 150 ms.
    assert!(
        waited < timeout * 4,
        "waited {waited:?} for a {timeout:?} timeout"
    );

    // The stopped master may have run the request once after it resumed, never more:
    // of the 5 permits, at least 4 are left.
    std::thread::sleep(Duration::from_millis(300));
    let mut allowed = 0;
    for _ in 0..6 {
        let d = patient
            .try_acquire(client, at)
            .unwrap_or_else(|e| panic!("after the resume: {e}"));
        allowed += u32::from(d.allowed);
    }
    assert!(
        allowed >= 4,
        "only {allowed} of 5 permits left: the timed-out request was charged more than once"
    );
    // A cost above the capacity is refused before anything is sent, as on one server.
    assert_eq!(
        limiter.try_acquire_n(client, 6, at),
        Err(RedisError::InsufficientCapacity(InsufficientCapacity {
            cost: 6,
            capacity: 5
        }))
    );
}

#[test]
fn cluster_seeds_that_cannot_work_are_typed_errors_without_the_password() {
    let none: [&str; 0] = [];
    let e = RedisStore::open_cluster(&none, "x").unwrap_err();
    assert_eq!(e.kind(), FailureKind::InvalidConfig, "{e}");
    // redis-rs reads slots as IP and port, so a unix socket cannot be a seed.
    let e = RedisStore::open_cluster(&["redis+unix:///tmp/nothing.sock"], "x").unwrap_err();
    assert_eq!(e.kind(), FailureKind::InvalidConfig, "{e}");
    let e = RedisStore::open_cluster(&["not a url"], "x").unwrap_err();
    assert_eq!(e.kind(), FailureKind::InvalidConfig, "{e}");
    let e = RedisStore::open_cluster(&["redis://127.0.0.1:1"], "a{b}").unwrap_err();
    assert_eq!(e.kind(), FailureKind::InvalidConfig, "{e}");
    // Nobody listens: a connection error that names no password.
    let secret = "cluster-Secret-9";
    let url = format!("redis://:{secret}@127.0.0.1:{}", free_port());
    let e = RedisStore::open_cluster(&[url.as_str(), url.as_str()], "x").unwrap_err();
    assert_eq!(e.kind(), FailureKind::Connection, "{e}");
    assert!(
        !e.to_string().contains(secret) && !format!("{e:?}").contains(secret),
        "{e}"
    );
    let builder = RedisStore::builder("x").cluster(&[url.as_str()]);
    assert!(!format!("{builder:?}").contains(secret), "{builder:?}");
}
