//! The tower layer on Redis: two server *processes* sharing one real `redis-server`
//! never admit more than the limit together; the async store decides exactly as memory
//! does; a Redis that is gone or stalled is answered by the failure policy within the
//! timeout. Each test starts its own `redis-server` on a unix socket in a temp dir and
//! skips loudly without one (unless `RATESIM_REQUIRE_REDIS` is set: then it fails).
//!
//! The server processes are this test binary again, running the ignored
//! `server_process` test with `RATESIM_TOWER_SERVE` set: no other binary to build.

mod redis_support;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::routing::get;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ratesim::redis::{FailurePolicy, RedisEndpoints, RedisStore};
use ratesim::store::InMemory;
use ratesim::tower::{Checked, HeaderKey, Limits, RateLimitLayer, RedisLimits, Verdict};
use ratesim::{Clock, FakeClock, Middleware, Nanos, Registry};

type HttpClient = Client<HttpConnector, Empty<Bytes>>;

/// The shared limit: 40 per hour, so nothing refills while the test runs.
const LIMIT: usize = 40;
const SHARED_RULES: &str = r#"
[[endpoint]]
path = "/"
algorithm = "sliding_window_log"
max_requests = 40
window = "1h"
"#;

fn client_key() -> HeaderKey {
    HeaderKey::new(http::HeaderName::from_static("x-client"))
}

/// A server process: killed (and reaped) on drop. It also exits by itself when its
/// stdin closes, so a test that dies cannot leave it behind.
struct Process {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts this test binary as a server keeping its limits in `store` (`redis:URL` or
/// `memory`), and waits for the address it listens on.
fn spawn_server(store: &str) -> Process {
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["server_process", "--exact", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env("RATESIM_TOWER_SERVE", store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server process starts");
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // The harness may print `test server_process ... ` on the same line.
            if let Some((_, addr)) = line.split_once("LISTENING ") {
                let _ = tx.send(addr.trim().to_string());
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(addr) => Process {
            addr: addr.parse().expect("an address"),
            child,
        },
        Err(_) => {
            let _ = child.kill();
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut stderr);
            }
            panic!("the server process did not listen within 30 s; stderr:\n{stderr}");
        }
    }
}

/// The body of a server process (see the module doc); does nothing when run as a test.
#[test]
#[ignore = "a server process of the two-process test, started by it"]
fn server_process() {
    let Ok(store) = std::env::var("RATESIM_TOWER_SERVE") else {
        return;
    };
    // The parent holds our stdin: when it closes, the parent is gone, and so are we.
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route("/", get(|| async { "hello\n" }));
        let app = match store.strip_prefix("redis:") {
            Some(url) => {
                let store = RedisStore::open(url, "two-process").unwrap();
                let rules = Middleware::with_store(store.endpoints(), Registry::default());
                rules.reload_str(SHARED_RULES, "shared").unwrap();
                let redis = store.connect_async().await.unwrap();
                let limits = Arc::new(RedisLimits::new(Arc::new(rules), redis));
                app.layer(RateLimitLayer::new(limits, client_key()))
            }
            None => {
                let rules = Middleware::new();
                rules.reload_str(SHARED_RULES, "shared").unwrap();
                app.layer(RateLimitLayer::new(Arc::new(rules), client_key()))
            }
        };
        println!("LISTENING {addr}");
        axum::serve(listener, app).await.unwrap();
    });
}

/// What the hammering saw: per server, the admissions' `RateLimit` remaining values
/// and the number of refusals.
#[derive(Debug, Default)]
struct Tally {
    admitted: Vec<Vec<u64>>,
    refused: Vec<usize>,
}

impl Tally {
    fn admitted(&self) -> usize {
        self.admitted.iter().map(Vec::len).sum()
    }
}

/// `tasks` concurrent clients per server, each sending `per_task` requests as the one
/// client `hammer`, all at once against every server.
async fn hammer(servers: &[SocketAddr], tasks: usize, per_task: usize) -> Tally {
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let mut handles = Vec::new();
    for (s, addr) in servers.iter().enumerate() {
        for _ in 0..tasks {
            let (client, addr) = (client.clone(), *addr);
            handles.push(tokio::spawn(async move {
                let mut seen = Vec::new();
                for _ in 0..per_task {
                    let request = Request::get(format!("http://{addr}/"))
                        .header("x-client", "hammer")
                        .body(Empty::new())
                        .unwrap();
                    let response = tokio::time::timeout(Duration::from_secs(20), async {
                        client.request(request).await
                    })
                    .await
                    .expect("a response within 20 s")
                    .expect("a response");
                    let status = response.status();
                    let ratelimit = response
                        .headers()
                        .get("ratelimit")
                        .map(|v| v.to_str().unwrap().to_string());
                    response.into_body().collect().await.expect("the body");
                    seen.push((status, ratelimit));
                }
                (s, seen)
            }));
        }
    }
    let mut tally = Tally {
        admitted: vec![Vec::new(); servers.len()],
        refused: vec![0; servers.len()],
    };
    for handle in handles {
        let (s, seen) = handle.await.expect("a client task");
        for (status, ratelimit) in seen {
            let ratelimit = ratelimit.expect("every answer has a RateLimit field");
            match status {
                StatusCode::OK => tally.admitted[s].push(remaining(&ratelimit)),
                StatusCode::TOO_MANY_REQUESTS => tally.refused[s] += 1,
                other => panic!("unexpected status {other}"),
            }
        }
    }
    tally
}

/// `r` of a `RateLimit` item: `"/";r=12;t=3600`.
fn remaining(field: &str) -> u64 {
    let r = field.split(';').find_map(|p| p.strip_prefix("r="));
    r.and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no r= in {field:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_server_processes_sharing_one_redis_never_admit_more_than_the_limit_together() {
    let Some(redis) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = format!("redis:{}", redis.url());
    let servers = [spawn_server(&store), spawn_server(&store)];
    let addrs: Vec<SocketAddr> = servers.iter().map(|p| p.addr).collect();
    // 2 servers × 8 clients × 25 requests = 400 requests for 40 permits.
    let tally = hammer(&addrs, 8, 25).await;
    let refused: usize = tally.refused.iter().sum();
    assert_eq!(tally.admitted() + refused, 400, "{tally:?}");
    assert_eq!(
        tally.admitted(),
        LIMIT,
        "the two servers together admitted {} (per server {:?}) for a shared limit of {LIMIT}",
        tally.admitted(),
        tally.admitted.iter().map(Vec::len).collect::<Vec<_>>()
    );
    // Each admission consumed one permit of the one shared state: across both
    // processes, the remaining counts they reported are exactly 39, 38, …, 0.
    let mut remainders: Vec<u64> = tally.admitted.concat();
    remainders.sort_unstable();
    let expected: Vec<u64> = (0..LIMIT as u64).collect();
    assert_eq!(remainders, expected, "per server {:?}", tally.admitted);
    eprintln!(
        "admitted per server: {:?}, refused per server: {:?}",
        tally.admitted.iter().map(Vec::len).collect::<Vec<_>>(),
        tally.refused
    );
}

/// The control: the same two processes with limits in memory admit the limit *each*.
/// It shows the shared test above can fail, and what it would see if sharing broke.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_server_processes_with_limits_in_memory_admit_the_limit_each() {
    let servers = [spawn_server("memory"), spawn_server("memory")];
    let addrs: Vec<SocketAddr> = servers.iter().map(|p| p.addr).collect();
    let tally = hammer(&addrs, 4, 25).await;
    for (s, admitted) in tally.admitted.iter().enumerate() {
        assert_eq!(admitted.len(), LIMIT, "server {s}: {tally:?}");
    }
    assert_eq!(tally.admitted(), 2 * LIMIT);
}

const ALL_RULES: &str = r#"
[[endpoint]]
path = "tb"
algorithm = "token_bucket"
max_requests = 3
window = "2s"
burst = 5

[[endpoint]]
path = "lb"
algorithm = "leaky_bucket"
max_requests = 4
window = "3s"

[[endpoint]]
path = "gcra"
algorithm = "gcra"
max_requests = 2
window = "1500ms"
burst = 3

[[endpoint]]
path = "fw"
algorithm = "fixed_window"
max_requests = 3
window = "2s"

[[endpoint]]
path = "swc"
algorithm = "sliding_window_counter"
max_requests = 4
window = "2s"

[[endpoint]]
path = "swl"
algorithm = "sliding_window_log"
max_requests = 3
window = "2500ms"
"#;

async fn verdict(checked: Checked) -> Verdict {
    match checked {
        Checked::Now(v) => v,
        Checked::Later(future) => future.await,
    }
}

/// The layer's async Redis store and the in-memory middleware, fed the same requests at
/// the same fake instants, give identical verdicts: decision, denying endpoint and
/// every header field, for every algorithm, composite routes, costs above 1 and a cost
/// no wait can cure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_redis_store_decides_every_request_as_memory_does() {
    let Some(redis) = redis_support::Server::start(&[]) else {
        return;
    };
    let clock = FakeClock::default();
    let memory: Middleware<InMemory<FakeClock>> = Middleware::with_clock(clock.clone());
    memory.reload_str(ALL_RULES, "rules").unwrap();
    let store = RedisStore::open(&redis.url(), "differential").unwrap();
    let rules = Middleware::with_store(
        store.endpoints().with_clock(clock.clone()),
        Registry::default(),
    );
    rules.reload_str(ALL_RULES, "rules").unwrap();
    let remote = RedisLimits::new(Arc::new(rules), store.connect_async().await.unwrap());
    let routes: [&[&str]; 9] = [
        &["tb"],
        &["lb"],
        &["gcra"],
        &["fw"],
        &["swc"],
        &["swl"],
        &["tb", "swl"],
        &["fw", "gcra", "swc"],
        &["unlimited", "lb"],
    ];
    // A fixed pseudo-random walk: steps of 0-700 ms, mixed routes, clients and costs.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut denied, mut never) = (0, 0);
    for i in 0..1500 {
        clock.advance(Nanos::from_millis(next() % 700));
        let route = routes[(next() % routes.len() as u64) as usize];
        let client = format!("c{}", next() % 3);
        let cost = [1, 1, 1, 2, 3, 6][(next() % 6) as usize];
        let expected = verdict(Limits::check(&memory, route, &client, cost)).await;
        let got = verdict(Limits::check(&remote, route, &client, cost)).await;
        assert_eq!(
            got,
            expected,
            "request {i} at {:?}: {route:?} by {client}, cost {cost}",
            clock.now()
        );
        denied += usize::from(!expected.allowed);
        never += usize::from(expected.never);
    }
    assert_eq!(remote.failures(), 0);
    // The walk reached denials, including never-passing costs, not only admissions.
    assert!(denied > 300 && never > 20, "denied {denied}, never {never}");
}

struct Served {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve_on(store: &RedisStore, endpoints: RedisEndpoints) -> (Served, Arc<RedisLimits>) {
    let rules = Middleware::with_store(endpoints, Registry::default());
    rules
        .reload_str(
            r#"
            [[endpoint]]
            path = "/"
            algorithm = "token_bucket"
            max_requests = 1
            window = "3s"
            burst = 100
            "#,
            "rules",
        )
        .unwrap();
    let limits = Arc::new(RedisLimits::new(
        Arc::new(rules),
        store.connect_async().await.unwrap(),
    ));
    let app = Router::new()
        .route("/", get(|| async { "hello\n" }))
        .layer(RateLimitLayer::new(limits.clone(), client_key()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (Served { addr, task }, limits)
}

/// Status, `Retry-After` and how long the answer took.
async fn get_root(addr: SocketAddr) -> (StatusCode, Option<String>, Duration) {
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let request = Request::get(format!("http://{addr}/"))
        .header("x-client", "c")
        .body(Empty::new())
        .unwrap();
    let sent = Instant::now();
    let response = tokio::time::timeout(Duration::from_secs(20), client.request(request))
        .await
        .expect("an answer within 20 s")
        .expect("an answer");
    let took = sent.elapsed();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (response.status(), retry, took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_or_dead_redis_is_answered_by_the_failure_policy_within_the_timeout() {
    let Some(mut redis) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&redis.url(), "failures").unwrap();
    let timeout = Duration::from_millis(300);
    let endpoints = store.endpoints().with_timeout(timeout);
    let (closed, closed_limits) =
        serve_on(&store, endpoints.clone().with_policy(FailurePolicy::Closed)).await;
    let (open, open_limits) = serve_on(&store, endpoints.with_policy(FailurePolicy::Open)).await;
    assert_eq!(get_root(closed.addr).await.0, StatusCode::OK);
    assert_eq!(get_root(open.addr).await.0, StatusCode::OK);

    // Stalled (SIGSTOP): no reply ever comes; each answer waits the timeout, no more.
    redis.pause();
    let (status, retry, took) = get_root(closed.addr).await;
    // Closed: denied, retry after one permit's interval (3 s / 1).
    assert_eq!(
        (status, retry.as_deref()),
        (StatusCode::TOO_MANY_REQUESTS, Some("3"))
    );
    assert!(took >= timeout && took < timeout * 4, "took {took:?}");
    let (status, retry, took) = get_root(open.addr).await;
    assert_eq!((status, retry), (StatusCode::OK, None));
    assert!(took >= timeout && took < timeout * 4, "took {took:?}");
    redis.resume();

    // Dead: the connection breaks; answered by policy, not hung, not panicking.
    redis.kill();
    assert_eq!(get_root(closed.addr).await.0, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(get_root(open.addr).await.0, StatusCode::OK);
    assert_eq!(closed_limits.failures(), 2);
    assert_eq!(open_limits.failures(), 2);
}
