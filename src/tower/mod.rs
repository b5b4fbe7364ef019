//! A tower [`Layer`] that limits an HTTP service (axum, hyper, tonic) with a
//! [`Middleware`]'s rules: the same endpoint map, the same TOML rules file, the same
//! decisions and header fields as the simulator.
//!
//! - **Endpoints**: a request's path is its endpoint, unless a [route](RateLimitLayer::route)
//!   maps it (exactly, or by a `prefix*` pattern) to one or more middleware endpoints,
//!   checked in order: several endpoints make a *composite* limit whose header fields
//!   list one named policy per endpoint. An endpoint without a rule is unlimited. The
//!   first refusing endpoint ends the check: the endpoints after it are not consumed,
//!   those before it are (a refused request still counts against them, as with several
//!   nginx `limit_req` zones). For one all-or-nothing decision over several rules, use
//!   the library's `Composite` directly.
//! - **Cost**: 1 permit per request, or what a [`cost`](RateLimitLayer::cost) function
//!   of the request head says.
//! - **Clients**: a [`KeyExtractor`] ([`PeerIp`], [`HeaderKey`], [`ForwardedFor`] — read
//!   its trust caveat — or any [`KeyFn`]). No key: 500, the service is not called.
//! - **Allowed**: the response gets `RateLimit-Policy` and `RateLimit` (IETF draft).
//! - **Denied**: 429 with the same fields, `Retry-After` in whole seconds rounded up
//!   from the exact wait (never 0 when a wait remains) and a one-line body; the inner
//!   service is not called. A denial no wait can cure (cost above the burst) has no
//!   `Retry-After`.
//! - **Shadow mode** ([`dry_run`](RateLimitLayer::dry_run)): decide, count and report,
//!   never refuse. A would-be denial is served with `RateLimit-Shadow-Denied: <policy>`,
//!   counted in [`LayerMetrics`] and passed to the [`on_denial`](RateLimitLayer::on_denial)
//!   hook.
//! - **Hot reload**: the layer holds the `Arc<Middleware>`; `reload_file` / `reload_str`
//!   on it swap the rules under load, each request seeing the old or the new set.
//! - **Stores**: the layer is generic over [`Limits`]: in memory (a [`Middleware`]; the
//!   critical section is one key's short lock, no I/O, no await), or in Redis with
//!   feature `redis` (`RedisLimits`: the blocking store's Lua scripts sent on redis-rs'
//!   tokio connection manager, each endpoint's failure policy and timeout, so several
//!   processes share one limit); see the [`limits`] module.
//!
//! ```
//! use std::sync::Arc;
//! use ratesim::Middleware;
//! use ratesim::tower::{ForwardedFor, RateLimitLayer};
//!
//! let rules = Arc::new(Middleware::new());
//! rules.reload_str(r#"
//!     [[endpoint]]
//!     path = "/"
//!     algorithm = "sliding_window_log"
//!     max_requests = 5
//!     window = "10s"
//! "#, "rules.toml")?;
//! let layer = RateLimitLayer::new(rules, ForwardedFor);
//! # let _ = layer;
//! # Ok::<(), ratesim::RulesError>(())
//! ```

mod key;
pub mod limits;
#[cfg(feature = "redis")]
mod redis;
mod service;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ::tower::Layer;

pub use key::{ForwardedFor, HeaderKey, KeyExtractor, KeyFn, PeerIp, RequestHead};
pub use limits::{Checked, HeaderFields, Limits, Verdict};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis::RedisLimits;
pub use service::{RateLimitService, ResponseFuture};

use crate::middleware::Middleware;

/// Counters of the layer's outcomes, shared by every service the layer made.
#[derive(Debug, Default)]
pub struct LayerMetrics {
    allowed: AtomicU64,
    denied: AtomicU64,
    shadow_denied: AtomicU64,
    no_key: AtomicU64,
}

impl LayerMetrics {
    /// Requests admitted by every limit (unlimited endpoints included).
    pub fn allowed(&self) -> u64 {
        self.allowed.load(Ordering::Relaxed)
    }
    /// Requests refused with 429.
    pub fn denied(&self) -> u64 {
        self.denied.load(Ordering::Relaxed)
    }
    /// Requests a limit would have refused, served because of shadow mode.
    pub fn shadow_denied(&self) -> u64 {
        self.shadow_denied.load(Ordering::Relaxed)
    }
    /// Requests answered 500 because the key extractor found no key.
    pub fn no_key(&self) -> u64 {
        self.no_key.load(Ordering::Relaxed)
    }
}

/// A denial, real or shadow, as the [`on_denial`](RateLimitLayer::on_denial) hook sees it.
#[derive(Debug, Clone, Copy)]
pub struct Denial<'a> {
    /// The request path.
    pub path: &'a str,
    /// The client key.
    pub client: &'a str,
    /// The endpoint (policy) that denied.
    pub policy: &'a str,
    /// True in shadow mode: the request was served anyway.
    pub shadow: bool,
}

type Hook = Arc<dyn Fn(&Denial<'_>) + Send + Sync>;
type Cost = Arc<dyn Fn(&RequestHead<'_>) -> u64 + Send + Sync>;

struct Route {
    pattern: String,
    prefix: bool,
    endpoints: Vec<String>,
}

/// What every service of one layer shares.
pub(crate) struct Shared<L> {
    limits: Arc<L>,
    key: Arc<dyn KeyExtractor>,
    routes: Arc<Vec<Route>>,
    dry_run: bool,
    metrics: Arc<LayerMetrics>,
    hook: Option<Hook>,
    cost: Option<Cost>,
}

impl<L> Shared<L> {
    fn route(&self, path: &str) -> Option<&[String]> {
        self.routes
            .iter()
            .find(|r| {
                if r.prefix {
                    path.starts_with(&r.pattern)
                } else {
                    path == r.pattern
                }
            })
            .map(|r| r.endpoints.as_slice())
    }
}

/// Builds [`RateLimitService`]s that limit requests with `L` (by default an in-memory
/// [`Middleware`]).
pub struct RateLimitLayer<L = Middleware> {
    shared: Arc<Shared<L>>,
}

impl<L> Clone for RateLimitLayer<L> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            shared: self.shared.clone(),
        }
    }
}

impl<L: Limits> RateLimitLayer<L> {
    /// A layer deciding with `limits`, keying clients with `key`; paths are endpoints.
    pub fn new(limits: Arc<L>, key: impl KeyExtractor) -> Self {
        RateLimitLayer {
            shared: Arc::new(Shared {
                limits,
                key: Arc::new(key),
                routes: Arc::new(Vec::new()),
                dry_run: false,
                metrics: Arc::default(),
                hook: None,
                cost: None,
            }),
        }
    }

    /// Requests whose path is `pattern` (or starts with it, when `pattern` ends in `*`)
    /// are checked against `endpoints`, in order: all must admit. Routes are tried in the
    /// order added; the first match wins.
    pub fn route<E: Into<String>>(
        self,
        pattern: &str,
        endpoints: impl IntoIterator<Item = E>,
    ) -> Self {
        let (pattern, prefix) = match pattern.strip_suffix('*') {
            Some(prefix) => (prefix, true),
            None => (pattern, false),
        };
        let route = Route {
            pattern: pattern.to_string(),
            prefix,
            endpoints: endpoints.into_iter().map(Into::into).collect(),
        };
        self.edit(|shared| {
            let mut routes: Vec<Route> = shared
                .routes
                .iter()
                .map(|r| Route {
                    pattern: r.pattern.clone(),
                    prefix: r.prefix,
                    endpoints: r.endpoints.clone(),
                })
                .collect();
            routes.push(route);
            shared.routes = Arc::new(routes);
        })
    }

    /// Shadow mode: decide and report, never refuse (default: off).
    pub fn dry_run(self, on: bool) -> Self {
        self.edit(|shared| shared.dry_run = on)
    }

    /// Calls `hook` on every denial, real or shadow (e.g. to feed a metrics registry).
    /// It runs on the request path: keep it short.
    pub fn on_denial(self, hook: impl Fn(&Denial<'_>) + Send + Sync + 'static) -> Self {
        self.edit(|shared| shared.hook = Some(Arc::new(hook)))
    }

    /// Weighs each request with `cost` permits instead of 1 (e.g. per-route weights or
    /// a batch size). A cost above an endpoint's burst can never pass: 429 without
    /// `Retry-After`.
    pub fn cost(self, cost: impl Fn(&RequestHead<'_>) -> u64 + Send + Sync + 'static) -> Self {
        self.edit(|shared| shared.cost = Some(Arc::new(cost)))
    }

    /// The counters, shared by every service this layer makes.
    pub fn metrics(&self) -> Arc<LayerMetrics> {
        self.shared.metrics.clone()
    }

    /// The limits the layer decides with (e.g. to hot-reload the rules).
    pub fn limits(&self) -> &Arc<L> {
        &self.shared.limits
    }

    fn edit(self, f: impl FnOnce(&mut Shared<L>)) -> Self {
        let mut shared = Shared {
            limits: self.shared.limits.clone(),
            key: self.shared.key.clone(),
            routes: self.shared.routes.clone(),
            dry_run: self.shared.dry_run,
            metrics: self.shared.metrics.clone(),
            hook: self.shared.hook.clone(),
            cost: self.shared.cost.clone(),
        };
        f(&mut shared);
        RateLimitLayer {
            shared: Arc::new(shared),
        }
    }
}

impl<L: Limits, S> Layer<S> for RateLimitLayer<L> {
    type Service = RateLimitService<L, S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService::new(self.shared.clone(), inner)
    }
}
