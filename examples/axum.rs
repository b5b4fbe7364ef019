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
//! `REDIS_URL` (shared limits across processes) is not supported yet: the async Redis
//! store is still to come, and the example says so rather than silently using memory.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::routing::get;
use ratesim::Middleware;
use ratesim::tower::{KeyFn, RateLimitLayer};

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
    if std::env::var_os("REDIS_URL").is_some() {
        return Err(
            "REDIS_URL is set, but the tower layer's async Redis store is not \
                    supported yet; unset REDIS_URL to use the in-memory limits"
                .into(),
        );
    }
    let port: u16 = match std::env::var("PORT") {
        Ok(text) => text
            .parse()
            .map_err(|_| format!("PORT must be a port number (0-65535), not `{text}`"))?,
        Err(_) => 3000,
    };
    let rules = Arc::new(Middleware::new());
    rules
        .reload_str(RULES, "examples/axum.rs")
        .map_err(|e| e.to_string())?;
    // The client is the socket's peer IP (axum's ConnectInfo). Behind a trusted proxy
    // that overwrites X-Forwarded-For, `ratesim::tower::ForwardedFor` instead.
    let client_ip = KeyFn::new(|head| {
        let ConnectInfo(peer) = head.extensions.get::<ConnectInfo<SocketAddr>>()?;
        Some(peer.ip().to_string())
    });
    let layer =
        RateLimitLayer::new(rules, client_ip).route("/api/*", ["api-per-second", "api-per-minute"]);
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
        "listening on http://{addr} (GET / is 5 per 10 s per client IP; GET /api/* is 2/s and 20/min)"
    );
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, service)
        .await
        .map_err(|e| format!("serving: {e}"))
}
