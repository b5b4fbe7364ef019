//! The tower layer's cost per request, next to tower_governor 0.8 and no layer at all.
//!
//! - In process (criterion, `tower/<contender>/<keys>`): the service is called directly
//!   with a noop waker, no sockets. Every contender builds the same request (a client
//!   IP in `X-Forwarded-For`, 1 key or 10,000 keys round-robin), decides allow/deny
//!   *with* rate-limit headers (ratesim: `RateLimit-Policy` + `RateLimit`; governor:
//!   `.use_headers()`, its `x-ratelimit-*`), and the inner service answers 200. The
//!   limits are generous (nearly every request admitted) for both.
//! - End to end (`RATESIM_TOWER_E2E=1 cargo bench --bench tower`): an axum server on
//!   127.0.0.1 and 4 hyper clients (one connection each), 3 interleaved rounds of
//!   no layer / ratesim / tower_governor; prints requests/s, p50/p99 latency and the
//!   process's CPU-seconds per 10,000 requests (the machine is shared: compare rounds
//!   side by side, not with other runs).
//!
//! - Instructions (`RATESIM_TOWER_CALLS=<contender>/<keys>/<requests>`): just that many
//!   requests through one contender, then exit, for `valgrind --tool=callgrind`: the
//!   difference between two request counts, divided, is the contender's instructions
//!   per request, which a loaded machine does not blur (a wall-clock time does).
//!
//! - Interleaved (`RATESIM_TOWER_INTERLEAVED=<batches>`): the three contenders in one
//!   process, taking turns every 1,000 requests (the order rotating each turn), for 1
//!   and 10,000 keys; prints each one's median, 25th and 75th percentile batch time per
//!   request. On a shared machine a load spike then hits every contender alike, where
//!   criterion's contender-after-contender runs see different moments of the load.
//!
//! Run: `cargo bench --features tower --bench tower -- --noplot` (plots need a font).

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use criterion::{BenchmarkId, Criterion};
use http::{HeaderValue, Request, Response};
use http_body_util::{BodyExt, Empty};
use ratesim::Middleware;
use ratesim::tower::{ForwardedFor, RateLimitLayer};
use tower::{Layer, Service};
use tower_governor::GovernorLayer;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::SmartIpKeyExtractor;

const RULES: &str = r#"
[[endpoint]]
path = "/"
algorithm = "gcra"
max_requests = 1000000000
window = "1s"
"#;

/// The inner service: 200 with a tiny body, ready at once.
#[derive(Clone)]
struct Hello;

impl<B> Service<Request<B>> for Hello {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Response<Body>, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: Request<B>) -> Self::Future {
        std::future::ready(Ok(Response::new(Body::from("hello"))))
    }
}

fn ratesim_layer() -> RateLimitLayer {
    let rules = Arc::new(Middleware::new());
    rules.reload_str(RULES, "bench").expect("valid rules");
    RateLimitLayer::new(rules, ForwardedFor)
}

fn governor_layer() -> GovernorLayer<SmartIpKeyExtractor, governor_mw::Headers, Body> {
    let config = GovernorConfigBuilder::default()
        .per_nanosecond(1)
        .burst_size(1_000_000)
        .key_extractor(SmartIpKeyExtractor)
        .use_headers()
        .finish()
        .expect("valid quota");
    GovernorLayer::new(config)
}

mod governor_mw {
    pub type Headers = governor::middleware::StateInformationMiddleware;
}

fn ips(keys: usize) -> Vec<HeaderValue> {
    (0..keys)
        .map(|i| {
            HeaderValue::try_from(format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255)).unwrap()
        })
        .collect()
}

/// One request through `service`, polled to completion with a noop waker.
fn once<S>(service: &mut S, ip: &HeaderValue) -> u16
where
    S: Service<Request<()>, Response = Response<Body>>,
{
    let mut cx = Context::from_waker(Waker::noop());
    assert!(service.poll_ready(&mut cx).is_ready());
    let mut request = Request::new(());
    *request.uri_mut() = http::Uri::from_static("/");
    request.headers_mut().insert("x-forwarded-for", ip.clone());
    let mut future = pin!(service.call(request));
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(Ok(response)) => response.status().as_u16(),
        _ => unreachable!("every contender answers at once"),
    }
}

fn in_process(c: &mut Criterion) {
    let mut group = c.benchmark_group("tower");
    for keys in [1usize, 10_000] {
        let ips = ips(keys);
        let mut none = Hello;
        let mut ours = ratesim_layer().layer(Hello);
        let mut theirs = governor_layer().layer(Hello);
        // The same answer from each: allowed, with headers (checked, not assumed).
        let Ok(first) = block(ours.call(with_ip(&ips[0])));
        assert_eq!(first.headers().len(), 2, "ratesim's two fields");
        let Ok(first) = block(theirs.call(with_ip(&ips[0])));
        assert!(first.headers().contains_key("x-ratelimit-remaining"));
        let mut i = 0;
        let mut next = move || {
            i = (i + 1) % keys;
            i
        };
        group.bench_function(BenchmarkId::new("no_layer", keys), |b| {
            b.iter(|| black_box(once(&mut none, &ips[next()])))
        });
        group.bench_function(BenchmarkId::new("ratesim", keys), |b| {
            b.iter(|| black_box(once(&mut ours, &ips[next()])))
        });
        group.bench_function(BenchmarkId::new("tower_governor", keys), |b| {
            b.iter(|| black_box(once(&mut theirs, &ips[next()])))
        });
    }
    group.finish();
}

fn with_ip(ip: &HeaderValue) -> Request<()> {
    let mut request = Request::new(());
    *request.uri_mut() = http::Uri::from_static("/");
    request.headers_mut().insert("x-forwarded-for", ip.clone());
    request
}

fn block<F: Future>(future: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(future).poll(&mut cx) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("ready at once"),
    }
}

/// User + system CPU-seconds of this process so far (Linux `/proc/self/stat`).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

async fn serve(contender: &str) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
    let app = match contender {
        "ratesim" => app.layer(ratesim_layer()),
        "tower_governor" => app.layer(governor_layer()),
        _ => app,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    (addr, task)
}

const CLIENTS: usize = 4;
const PER_CLIENT: usize = 5_000;

async fn e2e_round(contender: &str) -> (f64, Duration, Duration, f64) {
    let (addr, server) = serve(contender).await;
    let cpu = cpu_seconds();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        tasks.push(tokio::spawn(async move {
            let client =
                hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                    .pool_max_idle_per_host(1)
                    .build_http::<Empty<Bytes>>();
            let mut latencies = Vec::with_capacity(PER_CLIENT);
            for i in 0..PER_CLIENT {
                let ip = format!("10.0.{c}.{}", i % 250);
                let request = Request::get(format!("http://{addr}/"))
                    .header("x-forwarded-for", ip)
                    .body(Empty::new())
                    .unwrap();
                let sent = Instant::now();
                let response =
                    tokio::time::timeout(Duration::from_secs(10), client.request(request))
                        .await
                        .expect("request timed out")
                        .expect("request failed");
                assert_eq!(response.status(), 200);
                response.into_body().collect().await.expect("body");
                latencies.push(sent.elapsed());
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("client task"));
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    server.abort();
    all.sort();
    let n = all.len();
    (
        n as f64 / wall,
        all[n / 2],
        all[n * 99 / 100],
        cpu / n as f64 * 10_000.0,
    )
}

fn end_to_end() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!("| round | contender | req/s | p50 | p99 | CPU-s per 10k requests |");
    println!("|---|---|---:|---:|---:|---:|");
    for round in 1..=3 {
        for contender in ["no_layer", "ratesim", "tower_governor"] {
            let (rate, p50, p99, cpu) = runtime.block_on(e2e_round(contender));
            println!("| {round} | {contender} | {rate:.0} | {p50:?} | {p99:?} | {cpu:.3} |");
        }
    }
}

/// `RATESIM_TOWER_INTERLEAVED=<batches>`: the contenders taking turns, 1,000 requests a
/// turn; the quartiles of each one's batch times.
fn interleaved(batches: usize) {
    const BATCH: usize = 1_000;
    println!("| keys | contender | p25 | median | p75 | batches |");
    println!("|---:|---|---:|---:|---:|---:|");
    for keys in [1usize, 10_000] {
        let ips = ips(keys);
        let mut none = Hello;
        let mut ours = ratesim_layer().layer(Hello);
        let mut theirs = governor_layer().layer(Hello);
        let mut times: [Vec<f64>; 3] = Default::default();
        let mut i = 0;
        for batch in 0..batches {
            for turn in 0..3 {
                let contender = (batch + turn) % 3;
                let start = Instant::now();
                for _ in 0..BATCH {
                    i = (i + 1) % keys;
                    let status = match contender {
                        0 => once(&mut none, &ips[i]),
                        1 => once(&mut ours, &ips[i]),
                        _ => once(&mut theirs, &ips[i]),
                    };
                    assert_eq!(black_box(status), 200, "every request admitted");
                }
                times[contender].push(start.elapsed().as_nanos() as f64 / BATCH as f64);
            }
        }
        for (name, mut t) in ["no_layer", "ratesim", "tower_governor"]
            .into_iter()
            .zip(times)
        {
            t.sort_by(f64::total_cmp);
            let q = |f: usize| t[t.len() * f / 4] / 1000.0;
            println!(
                "| {keys} | {name} | {:.3} µs | {:.3} µs | {:.3} µs | {} |",
                q(1),
                q(2),
                q(3),
                t.len()
            );
        }
    }
}

/// `RATESIM_TOWER_CALLS=<contender>/<keys>/<requests>`: that many requests, no timing.
fn calls(spec: &str) {
    let parts: Vec<&str> = spec.split('/').collect();
    let [contender, keys, requests] = parts[..] else {
        panic!("RATESIM_TOWER_CALLS={spec}: expected <contender>/<keys>/<requests>");
    };
    let keys: usize = keys.parse().expect("keys: a number");
    let requests: usize = requests.parse().expect("requests: a number");
    let ips = ips(keys);
    let run = |service: &mut dyn FnMut(&HeaderValue) -> u16| {
        let mut admitted = 0;
        for i in 0..requests {
            admitted += usize::from(service(&ips[i % keys]) == 200);
        }
        assert_eq!(admitted, requests, "every request admitted");
    };
    match contender {
        "no_layer" => run(&mut |ip| once(&mut Hello, ip)),
        "ratesim" => {
            let mut service = ratesim_layer().layer(Hello);
            run(&mut |ip| once(&mut service, ip))
        }
        "tower_governor" => {
            let mut service = governor_layer().layer(Hello);
            run(&mut |ip| once(&mut service, ip))
        }
        other => panic!("unknown contender {other}"),
    }
}

fn main() {
    if std::env::var_os("RATESIM_TOWER_E2E").is_some() {
        end_to_end();
        return;
    }
    if let Ok(batches) = std::env::var("RATESIM_TOWER_INTERLEAVED") {
        interleaved(
            batches
                .parse()
                .expect("RATESIM_TOWER_INTERLEAVED: a number of batches"),
        );
        return;
    }
    if let Ok(spec) = std::env::var("RATESIM_TOWER_CALLS") {
        calls(&spec);
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    in_process(&mut criterion);
    criterion.final_summary();
}
