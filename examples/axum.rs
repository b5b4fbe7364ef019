//! An axum service behind ratesim's tower layer.
//!
//! ```text
//! cargo run --example axum --features tower          # http://127.0.0.1:3000
//! PORT=8080 cargo run --example axum --features tower
//! curl -i http://127.0.0.1:3000/                      # 5 per 10 s per client IP
//! curl -i http://127.0.0.1:3000/api/items             # 2 per second and 20 per minute
//! ```
//!
//! The limits are the TOML rules file the simulator reads (`ratesim run --rules`-style
//! `[[endpoint]]` tables); `GET /api/*` is a composite of two named policies.
//!
//! With `REDIS_URL` set (and built with `--features tower,redis`), the limits live in
//! Redis and every process serving with the same URL shares them:
//!
//! ```text
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --example axum --features tower,redis
//! REDIS_URL=redis://127.0.0.1:6379 PORT=3001 cargo run --example axum --features tower,redis
//! ```
//!
//! Keys are under the prefix `ratesim-example` (or `REDIS_PREFIX`); Redis's clock decides,
//! and a Redis that does not answer within 200 ms denies (fails closed).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::routing::get;
use ratesim::Middleware;
use ratesim::tower::{KeyFn, Limits, RateLimitLayer};

const RULES: &str = r#"
[[endpoint]]
path = "/"
algorithm = "sliding_window_log"
max_requests = 5
window = "10s"

[[endpoint]]
path = "api-per-second"
algorithm = "token_bucket"
max_requests = 2
window = "1s"

[[endpoint]]
path = "api-per-minute"
algorithm = "sliding_window_counter"
max_requests = 20
window = "60s"
"#;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("ratesim: error: {message}");
            ExitCode::from(2)
        }
    }
}

async fn run() -> Result<(), String> {
    let port: u16 = match std::env::var("PORT") {
        Ok(text) => text
            .parse()
            .map_err(|_| format!("PORT must be a port number (0-65535), not `{text}`"))?,
        Err(_) => 3000,
    };
    match std::env::var("REDIS_URL") {
        Ok(url) => serve(redis_limits(&url).await?, port, "Redis").await,
        Err(_) => {
            let rules = Middleware::new();
            rules
                .reload_str(RULES, "examples/axum.rs")
                .map_err(|e| e.to_string())?;
            serve(Arc::new(rules), port, "memory").await
        }
    }
}

/// The rules in Redis at `url`, shared by every process serving with the same URL.
#[cfg(feature = "redis")]
async fn redis_limits(url: &str) -> Result<Arc<ratesim::tower::RedisLimits>, String> {
    use ratesim::redis::RedisStore;
    let prefix = std::env::var("REDIS_PREFIX").unwrap_or_else(|_| "ratesim-example".into());
    // Checks the URL once, blocking briefly: before serving, never on a request.
    let store = RedisStore::open(url, &prefix).map_err(|e| format!("REDIS_URL: {e}"))?;
    let rules = Middleware::with_store(store.endpoints(), ratesim::Registry::default());
    rules
        .reload_str(RULES, "examples/axum.rs")
        .map_err(|e| e.to_string())?;
    let redis = store
        .connect_async()
        .await
        .map_err(|e| format!("REDIS_URL: {e}"))?;
    Ok(Arc::new(ratesim::tower::RedisLimits::new(
        Arc::new(rules),
        redis,
    )))
}

#[cfg(not(feature = "redis"))]
async fn redis_limits(_: &str) -> Result<Arc<Middleware>, String> {
    Err(
        "REDIS_URL is set, but this build has no Redis store: run with \
         `--features tower,redis`, or unset REDIS_URL to keep the limits in memory"
            .into(),
    )
}

async fn serve<L: Limits>(limits: Arc<L>, port: u16, store: &str) -> Result<(), String> {
    // The client is the socket's peer IP (axum's ConnectInfo). Behind a trusted proxy
    // that overwrites X-Forwarded-For, `ratesim::tower::ForwardedFor` instead.
    let client_ip = KeyFn::new(|head| {
        let ConnectInfo(peer) = head.extensions.get::<ConnectInfo<SocketAddr>>()?;
        Some(peer.ip().to_string())
    });
    let layer = RateLimitLayer::new(limits, client_ip)
        .route("/api/*", ["api-per-second", "api-per-minute"]);
    let app = Router::new()
        .route("/", get(|| async { "hello from ratesim's tower layer\n" }))
        .route("/api/{*rest}", get(|| async { "{\"items\": []}\n" }))
        .layer(layer);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e} (set PORT to another port)"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!(
        "listening on http://{addr} (GET / is 5 per 10 s per client IP; GET /api/* is 2/s \
         and 20/min; limits in {store})"
    );
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, service)
        .await
        .map_err(|e| format!("serving: {e}"))
}
