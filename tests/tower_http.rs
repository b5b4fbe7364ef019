//! The tower layer over real HTTP on loopback: a real axum server bound to
//! 127.0.0.1:0 in each test, a real hyper client. Limits run on a `FakeClock`, so the
//! edges are exact; every request and body read has a timeout, so no test can hang.
//! Expected header values are written out from the rule's arithmetic, not computed by
//! the code under test.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::ConnectInfo;
use axum::routing::get;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ratesim::tower::{Checked, ForwardedFor, KeyFn, Limits, RateLimitLayer};
use ratesim::{FakeClock, Middleware, Nanos, store::InMemory};
use tokio::time::timeout;

type Mw = Middleware<InMemory<FakeClock>>;
type HttpClient = Client<HttpConnector, Empty<Bytes>>;

const LIMIT: Duration = Duration::from_secs(10);

struct Server {
    addr: SocketAddr,
    calls: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An axum app whose every route counts its calls, behind `layer`.
async fn serve<L: Limits>(layer: RateLimitLayer<L>) -> Server {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = |calls: Arc<AtomicUsize>| {
        move || {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                "hello\n"
            }
        }
    };
    let app = Router::new()
        .route("/", get(counted(calls.clone())))
        .route("/api/{*rest}", get(counted(calls.clone())))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let service = app.into_make_service_with_connect_info::<SocketAddr>();
        axum::serve(listener, service).await.unwrap();
    });
    Server { addr, calls, task }
}

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

async fn fetch(client: &HttpClient, addr: SocketAddr, path: &str, who: Option<&str>) -> Reply {
    let mut request = Request::get(format!("http://{addr}{path}"));
    if let Some(who) = who {
        request = request.header("x-forwarded-for", who);
    }
    let response = timeout(LIMIT, client.request(request.body(Empty::new()).unwrap()))
        .await
        .expect("the request timed out")
        .expect("the request failed");
    let status = response.status();
    let headers = response.headers().clone();
    let body = timeout(LIMIT, response.into_body().collect())
        .await
        .expect("reading the body timed out")
        .expect("reading the body failed")
        .to_bytes();
    Reply {
        status,
        headers,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

fn rules(text: &str) -> (Arc<Mw>, FakeClock) {
    let clock = FakeClock::default();
    let mw = Arc::new(Middleware::with_clock(clock.clone()));
    mw.reload_str(text, "test.toml").unwrap();
    (mw, clock)
}

const FIVE_PER_TEN: &str = r#"
    [[endpoint]]
    path = "/"
    algorithm = "sliding_window_log"
    max_requests = 5
    window = "10s"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_pass_with_exact_fields_and_the_sixth_is_refused_without_calling_the_service() {
    let (mw, _clock) = rules(FIVE_PER_TEN);
    let server = serve(RateLimitLayer::new(mw, ForwardedFor)).await;
    let client = client();
    for remaining in (0..5).rev() {
        let reply = fetch(&client, server.addr, "/", Some("203.0.113.1")).await;
        assert_eq!(reply.status, StatusCode::OK, "remaining {remaining}");
        assert_eq!(reply.header("ratelimit-policy"), Some(r#""/";q=5;w=10"#));
        let expected = format!(r#""/";r={remaining};t=10"#);
        assert_eq!(reply.header("ratelimit"), Some(expected.as_str()));
        assert_eq!(reply.header("retry-after"), None);
        assert_eq!(reply.body, "hello\n");
    }
    let denied = fetch(&client, server.addr, "/", Some("203.0.113.1")).await;
    assert_eq!(denied.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(denied.header("retry-after"), Some("10"));
    assert_eq!(denied.header("ratelimit"), Some(r#""/";r=0;t=10"#));
    assert_eq!(denied.header("ratelimit-policy"), Some(r#""/";q=5;w=10"#));
    assert!(
        denied.body.starts_with("ratesim: too many requests"),
        "{}",
        denied.body
    );
    assert_eq!(
        server.calls.load(Ordering::SeqCst),
        5,
        "the 429 never reached the service"
    );
    let other = fetch(&client, server.addr, "/", Some("203.0.113.2")).await;
    assert_eq!(
        other.status,
        StatusCode::OK,
        "another client has its own quota"
    );
    let unknown = fetch(&client, server.addr, "/api/x", Some("203.0.113.1")).await;
    assert_eq!(unknown.status, StatusCode::OK, "no rule: unlimited");
    assert_eq!(unknown.header("ratelimit"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_the_ceiling_of_the_exact_wait_and_never_zero() {
    let (mw, clock) = rules(
        r#"
        [[endpoint]]
        path = "/"
        algorithm = "sliding_window_log"
        max_requests = 1
        window = "10s"
    "#,
    );
    let server = serve(RateLimitLayer::new(mw, ForwardedFor)).await;
    let client = client();
    let at = |reply: &Reply| {
        (
            reply.status.as_u16(),
            reply.header("retry-after").map(str::to_owned),
        )
    };
    assert_eq!(
        at(&fetch(&client, server.addr, "/", Some("c")).await),
        (200, None)
    );
    // Waits of 9.5 s, 9 s exactly, 1 ns: ceilings 10, 9, 1.
    clock.advance(Nanos::from_millis(500));
    assert_eq!(
        at(&fetch(&client, server.addr, "/", Some("c")).await),
        (429, Some("10".into()))
    );
    clock.advance(Nanos::from_millis(500));
    assert_eq!(
        at(&fetch(&client, server.addr, "/", Some("c")).await),
        (429, Some("9".into()))
    );
    clock.advance(Nanos::new(8_999_999_999));
    assert_eq!(
        at(&fetch(&client, server.addr, "/", Some("c")).await),
        (429, Some("1".into()))
    );
    clock.advance(Nanos::new(1));
    assert_eq!(
        at(&fetch(&client, server.addr, "/", Some("c")).await),
        (200, None)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_composite_route_names_every_policy_and_the_one_that_refused() {
    let (mw, clock) = rules(
        r#"
        [[endpoint]]
        path = "api-burst"
        algorithm = "sliding_window_log"
        max_requests = 2
        window = "1s"

        [[endpoint]]
        path = "api-hour"
        algorithm = "sliding_window_log"
        max_requests = 3
        window = "60s"
    "#,
    );
    let layer = RateLimitLayer::new(mw, ForwardedFor).route("/api/*", ["api-burst", "api-hour"]);
    let server = serve(layer).await;
    let client = client();
    let both = r#""api-burst";q=2;w=1, "api-hour";q=3;w=60"#;
    let first = fetch(&client, server.addr, "/api/a", Some("c")).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.header("ratelimit-policy"), Some(both));
    assert_eq!(
        first.header("ratelimit"),
        Some(r#""api-burst";r=1;t=1, "api-hour";r=2;t=60"#)
    );
    assert_eq!(
        fetch(&client, server.addr, "/api/b", Some("c"))
            .await
            .status,
        StatusCode::OK
    );
    // Third at t=0: the burst policy refuses; the hourly one is not consumed.
    let burst = fetch(&client, server.addr, "/api/a", Some("c")).await;
    assert_eq!(burst.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(burst.header("retry-after"), Some("1"));
    assert_eq!(burst.header("ratelimit"), Some(r#""api-burst";r=0;t=1"#));
    clock.advance(Nanos::from_secs(1));
    let third = fetch(&client, server.addr, "/api/a", Some("c")).await;
    assert_eq!(
        third.status,
        StatusCode::OK,
        "the refused request did not count hourly"
    );
    assert_eq!(
        third.header("ratelimit"),
        Some(r#""api-burst";r=1;t=1, "api-hour";r=0;t=60"#)
    );
    // Fourth at t=1 s: the burst admits, the hourly refuses for 59 s.
    let hour = fetch(&client, server.addr, "/api/a", Some("c")).await;
    assert_eq!(hour.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(hour.header("retry-after"), Some("59"));
    assert_eq!(
        hour.header("ratelimit"),
        Some(r#""api-burst";r=0;t=1, "api-hour";r=0;t=60"#)
    );
    assert_eq!(server.calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_mode_serves_everything_and_reports_the_would_be_denials() {
    let (mw, _clock) = rules(FIVE_PER_TEN);
    let hooked = Arc::new(AtomicUsize::new(0));
    let seen = hooked.clone();
    let layer = RateLimitLayer::new(mw, ForwardedFor)
        .dry_run(true)
        .on_denial(move |denial| {
            assert!(denial.shadow && denial.policy == "/" && denial.client == "c");
            seen.fetch_add(1, Ordering::SeqCst);
        });
    let metrics = layer.metrics();
    let server = serve(layer).await;
    let client = client();
    let mut shadow_headers = 0;
    for i in 0..8 {
        let reply = fetch(&client, server.addr, "/", Some("c")).await;
        assert_eq!(reply.status, StatusCode::OK, "request {i}");
        assert_eq!(reply.header("retry-after"), None, "request {i}");
        match reply.header("ratelimit-shadow-denied") {
            Some(policy) => {
                assert_eq!(policy, "/");
                assert!(i >= 5, "request {i} was within the limit");
                shadow_headers += 1;
            }
            None => assert!(i < 5, "request {i} was over the limit"),
        }
    }
    assert_eq!(shadow_headers, 3);
    assert_eq!(server.calls.load(Ordering::SeqCst), 8);
    assert_eq!(
        (metrics.allowed(), metrics.shadow_denied(), metrics.denied()),
        (5, 3, 0)
    );
    assert_eq!(hooked.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_peer_address_keys_by_connect_info_and_no_key_is_a_500() {
    let (mw, _clock) = rules(FIVE_PER_TEN);
    let peer = RateLimitLayer::new(
        mw.clone(),
        KeyFn::new(|head| {
            let info = head.extensions.get::<ConnectInfo<SocketAddr>>()?;
            Some(info.0.ip().to_string())
        }),
    );
    let server = serve(peer).await;
    let client = client();
    for _ in 0..5 {
        // A forwarded-for header changes nothing: the key is the socket's peer.
        let who = Some("198.51.100.9");
        assert_eq!(
            fetch(&client, server.addr, "/", who).await.status,
            StatusCode::OK
        );
    }
    assert_eq!(
        fetch(&client, server.addr, "/", None).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        mw.check("/", "127.0.0.1").remaining,
        0,
        "counted against 127.0.0.1"
    );

    let forwarded = serve(RateLimitLayer::new(mw, ForwardedFor)).await;
    let reply = fetch(&client, forwarded.addr, "/", None).await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(reply.body.starts_with("ratesim: error:"), "{}", reply.body);
    assert_eq!(forwarded.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_reload_under_concurrent_load_switches_rules_atomically() {
    let (mw, _clock) = rules(&FIVE_PER_TEN.replace("max_requests = 5", "max_requests = 100000"));
    let layer = RateLimitLayer::new(mw.clone(), ForwardedFor);
    let server = serve(layer).await;
    let addr = server.addr;
    let done = Arc::new(AtomicUsize::new(0));
    let mut load = Vec::new();
    for task in 0..8 {
        let done = done.clone();
        load.push(tokio::spawn(async move {
            let client = client();
            let mut policies = Vec::new();
            for i in 0..60 {
                let who = format!("10.0.{task}.{}", i % 4);
                let reply = fetch(&client, addr, "/", Some(&who)).await;
                assert!(
                    matches!(reply.status.as_u16(), 200 | 429),
                    "{}",
                    reply.status
                );
                policies.push(reply.header("ratelimit-policy").unwrap().to_string());
                done.fetch_add(1, Ordering::SeqCst);
            }
            policies
        }));
    }
    // Reload once a fifth of the load is answered, while the rest is in flight.
    let started = timeout(LIMIT, async {
        while done.load(Ordering::SeqCst) < 96 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    started.await.expect("the load did not start");
    mw.reload_str(FIVE_PER_TEN, "reload.toml").unwrap();
    let mut seen = Vec::new();
    for task in load {
        let policies = timeout(Duration::from_secs(60), task)
            .await
            .expect("the load timed out")
            .expect("a load task failed");
        // Each task sees the old rule, then the new one: never back, never a mix.
        let switched = policies.iter().position(|p| p == r#""/";q=5;w=10"#);
        let (old, new) = policies.split_at(switched.unwrap_or(policies.len()));
        assert!(old.iter().all(|p| p == r#""/";q=100000;w=10"#), "{old:?}");
        assert!(new.iter().all(|p| p == r#""/";q=5;w=10"#), "{new:?}");
        seen.extend(policies);
    }
    assert_eq!(seen.len(), 480);
    let old = seen.iter().filter(|p| p.contains("q=100000")).count();
    assert!(
        (96..480).contains(&old),
        "{old} of 480 saw the old rule: the reload was not mid-load"
    );
    let client = client();
    for _ in 0..5 {
        assert_eq!(
            fetch(&client, addr, "/", Some("fresh")).await.status,
            StatusCode::OK
        );
    }
    let after = fetch(&client, addr, "/", Some("fresh")).await;
    assert_eq!(after.status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cost_extractor_weighs_requests_and_a_cost_above_the_burst_gets_no_retry_after() {
    let (mw, _clock) = rules(FIVE_PER_TEN);
    // /api/* is not a limited endpoint here; the weight comes from the query string.
    let layer = RateLimitLayer::new(mw, ForwardedFor).cost(|head| match head.uri.query() {
        Some("heavy") => 3,
        Some("huge") => 6,
        _ => 1,
    });
    let server = serve(layer).await;
    let client = client();
    let heavy = fetch(&client, server.addr, "/?heavy", Some("c")).await;
    assert_eq!(heavy.status, StatusCode::OK);
    assert_eq!(heavy.header("ratelimit"), Some(r#""/";r=2;t=10"#));
    let never = fetch(&client, server.addr, "/?huge", Some("c")).await;
    assert_eq!(never.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        never.header("retry-after"),
        None,
        "no wait lets 6 permits through 5"
    );
    assert_eq!(
        never.header("ratelimit"),
        Some(r#""/";r=2;t=10"#),
        "nothing consumed"
    );
    assert!(never.body.contains("can never pass"), "{}", never.body);
    let second = fetch(&client, server.addr, "/?heavy", Some("c")).await;
    assert_eq!(
        second.status,
        StatusCode::TOO_MANY_REQUESTS,
        "3 > 2 remaining"
    );
    assert_eq!(second.header("retry-after"), Some("10"));
    for remaining in [1, 0] {
        let light = fetch(&client, server.addr, "/", Some("c")).await;
        let expected = format!(r#""/";r={remaining};t=10"#);
        assert_eq!(light.header("ratelimit"), Some(expected.as_str()));
    }
    assert_eq!(server.calls.load(Ordering::SeqCst), 3);
}

/// A store that answers later, as an async Redis backend will: the in-memory verdict,
/// delivered after a real await.
struct Later(Arc<Mw>);

impl Limits for Later {
    fn check<E: AsRef<str>>(&self, endpoints: &[E], client: &str, cost: u64) -> Checked {
        let Checked::Now(verdict) = Limits::check(&*self.0, endpoints, client, cost) else {
            unreachable!("memory answers now")
        };
        Checked::Later(Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            verdict
        }))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_answers_later_gets_the_same_answers_through_the_layer() {
    let (mw, _clock) = rules(FIVE_PER_TEN);
    let server = serve(RateLimitLayer::new(Arc::new(Later(mw)), ForwardedFor)).await;
    let client = client();
    for remaining in (0..5).rev() {
        let reply = fetch(&client, server.addr, "/", Some("c")).await;
        assert_eq!(reply.status, StatusCode::OK);
        let expected = format!(r#""/";r={remaining};t=10"#);
        assert_eq!(reply.header("ratelimit"), Some(expected.as_str()));
        assert_eq!(reply.body, "hello\n");
    }
    let denied = fetch(&client, server.addr, "/", Some("c")).await;
    assert_eq!(denied.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(denied.header("retry-after"), Some("10"));
    assert_eq!(server.calls.load(Ordering::SeqCst), 5);
}
