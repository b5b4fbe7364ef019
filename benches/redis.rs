//! The Redis store per decision (issue 13, item 10): every algorithm and a composite of
//! three, over a unix socket and TCP loopback, one client and 16 concurrent clients on
//! one hot key, each next to a plain `SET` sent the same way in the same run (the
//! reference redis-cell quotes: a decision ≈ 2× a `SET`).
//!
//! - `redis_1_client/<name>/<unix|tcp>`: one connection, decisions on server time over
//!   1 000 keys in turn, the rule generous so nearly all are admitted.
//! - `redis_16_clients/<name>/unix`: 16 threads on one key; the time is wall time per
//!   decision over all 16 together (so decisions/s = 1 / time).
//!
//! - `latency`: p50 and p99 of single decisions (5,000 timed one by one, one client,
//!   unix and TCP), printed as a table next to `SET`'s; criterion reports medians only.
//!
//! Needs `redis-server` on PATH (the bench starts and stops its own, like the tests).
//! Run: `cargo bench --features redis --bench redis` (about 2 minutes).

#[path = "../tests/redis_support/mod.rs"]
mod redis_support;

use std::hint::black_box;
use std::net::TcpListener;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ratesim::redis::{Now, RedisLimiter, RedisStore};
use ratesim::{
    FixedWindow, Gcra, LeakyBucket, Nanos, Rule, SlidingWindowCounter, SlidingWindowLog,
    TokenBucket,
};

const KEYS: usize = 1_000;
const CLIENTS: usize = 16;

fn rule() -> Rule {
    Rule::new(1_000_000_000, Nanos::from_secs(1)).unwrap()
}

/// Every algorithm on the generous rule, and a composite of three.
fn limiters(store: &RedisStore) -> Vec<(&'static str, RedisLimiter)> {
    let r = rule();
    let composite = store
        .composite(vec![
            store.limiter(TokenBucket::new(r)).unwrap(),
            store.limiter(FixedWindow::new(r)).unwrap(),
            store.limiter(SlidingWindowLog::new(r)).unwrap(),
        ])
        .unwrap();
    vec![
        ("token_bucket", store.limiter(TokenBucket::new(r)).unwrap()),
        ("leaky_bucket", store.limiter(LeakyBucket::new(r)).unwrap()),
        ("gcra", store.limiter(Gcra::new(r)).unwrap()),
        ("fixed_window", store.limiter(FixedWindow::new(r)).unwrap()),
        (
            "sliding_window_counter",
            store.limiter(SlidingWindowCounter::new(r)).unwrap(),
        ),
        (
            "sliding_window_log",
            store.limiter(SlidingWindowLog::new(r)).unwrap(),
        ),
        ("composite_tb_fw_log", composite),
    ]
    .into_iter()
    .map(|(n, l)| (n, l.with_timeout(Duration::from_secs(5))))
    .collect()
}

/// A free loopback port (the OS picks one; it is released before the server binds it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn one_client(c: &mut Criterion) {
    let port = free_port().to_string();
    let Some(server) = redis_support::Server::start(&["--port", &port]) else {
        return;
    };
    let keys: Vec<String> = (0..KEYS).map(|i| format!("client{i}")).collect();
    for (transport, url) in [
        ("unix", server.url()),
        ("tcp", format!("redis://127.0.0.1:{port}")),
    ] {
        let mut group = c.benchmark_group("redis_1_client");
        let mut con = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .unwrap();
        group.bench_function(format!("set/{transport}"), |b| {
            b.iter(|| {
                let () = redis::cmd("SET")
                    .arg("k")
                    .arg("0 1")
                    .query(&mut con)
                    .unwrap();
            })
        });
        let store = RedisStore::open(&url, "bench").unwrap();
        for (name, limiter) in limiters(&store) {
            let mut i = 0;
            group.bench_function(format!("{name}/{transport}"), |b| {
                b.iter(|| {
                    i = (i + 1) % KEYS;
                    black_box(limiter.try_acquire(&keys[i], Now::Server).unwrap())
                })
            });
        }
        group.finish();
    }
}

/// `iters` calls of `decide` spread over `CLIENTS` threads; the wall time of all.
fn concurrently(iters: u64, decide: &(impl Fn() + Sync)) -> Duration {
    let start = Barrier::new(CLIENTS + 1);
    std::thread::scope(|s| {
        for _ in 0..CLIENTS {
            s.spawn(|| {
                start.wait();
                for _ in 0..iters.div_ceil(CLIENTS as u64) {
                    decide();
                }
            });
        }
        start.wait();
        let began = Instant::now();
        // The scope joins every thread before it returns.
        began
    })
    .elapsed()
}

fn sixteen_clients(c: &mut Criterion) {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let mut group = c.benchmark_group("redis_16_clients");
    let url = server.url();
    let store = RedisStore::open(&url, "bench16").unwrap();
    // One connection per thread: redis-rs connections are not shared.
    let set_client = redis::Client::open(url.as_str()).unwrap();
    group.bench_function("set/unix", |b| {
        b.iter_custom(|iters| {
            let connections = std::sync::Mutex::new(Vec::new());
            let set = || {
                let mut con = connections
                    .lock()
                    .unwrap()
                    .pop()
                    .unwrap_or_else(|| set_client.get_connection().unwrap());
                let () = redis::cmd("SET")
                    .arg("hot")
                    .arg("0 1")
                    .query(&mut con)
                    .unwrap();
                connections.lock().unwrap().push(con);
            };
            concurrently(iters, &set)
        })
    });
    for (name, limiter) in limiters(&store) {
        group.bench_function(format!("{name}/unix"), |b| {
            b.iter_custom(|iters| {
                concurrently(iters, &|| {
                    black_box(limiter.try_acquire("hot", Now::Server).unwrap());
                })
            })
        });
    }
    group.finish();
}

/// The p50 and p99 of `samples` calls of `call`, in µs.
fn percentiles(samples: usize, mut call: impl FnMut()) -> (f64, f64) {
    let mut times: Vec<Duration> = (0..samples)
        .map(|_| {
            let began = Instant::now();
            call();
            began.elapsed()
        })
        .collect();
    times.sort();
    let at = |q: usize| times[(samples * q / 100).min(samples - 1)].as_secs_f64() * 1e6;
    (at(50), at(99))
}

fn latency(_: &mut Criterion) {
    const SAMPLES: usize = 5_000;
    let port = free_port().to_string();
    let Some(server) = redis_support::Server::start(&["--port", &port]) else {
        return;
    };
    let keys: Vec<String> = (0..KEYS).map(|i| format!("client{i}")).collect();
    println!("\nlatency per call, one client, {SAMPLES} calls each (µs):");
    println!(
        "{:<24} {:>9} {:>9} {:>9} {:>9}",
        "", "unix p50", "unix p99", "tcp p50", "tcp p99"
    );
    let urls = [server.url(), format!("redis://127.0.0.1:{port}")];
    let mut rows: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for url in &urls {
        let mut con = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .unwrap();
        let set = percentiles(SAMPLES, || {
            let () = redis::cmd("SET")
                .arg("k")
                .arg("0 1")
                .query(&mut con)
                .unwrap();
        });
        let store = RedisStore::open(url, "lat").unwrap();
        let mut measured = vec![("set".to_owned(), set)];
        for (name, limiter) in limiters(&store) {
            let mut i = 0;
            let p = percentiles(SAMPLES, || {
                i = (i + 1) % KEYS;
                black_box(limiter.try_acquire(&keys[i], Now::Server).unwrap());
            });
            measured.push((name.to_owned(), p));
        }
        for (row, (name, p)) in measured.into_iter().enumerate() {
            match rows.get_mut(row) {
                Some(r) => r.1.push(p),
                None => rows.push((name, vec![p])),
            }
        }
    }
    for (name, ps) in rows {
        let cells: Vec<String> = ps
            .iter()
            .flat_map(|(p50, p99)| [format!("{p50:>9.1}"), format!("{p99:>9.1}")])
            .collect();
        println!("{name:<24} {}", cells.join(" "));
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .without_plots()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = one_client, sixteen_clients, latency
}
criterion_main!(benches);
