//! The layer on Redis (features `tower` + `redis`): [`RedisLimits`] decides each
//! request with the Lua scripts of the blocking store, sent asynchronously on redis-rs'
//! tokio connection manager, so several service processes share one limit.
//!
//! Everything but the transport is shared with the rest of the library: the rules, hot
//! reload and header fields are a [`Middleware`] on [`RedisEndpoints`] (what
//! `Middleware::check_with_headers` would answer, without its blocking call), the keys,
//! scripts and replies are the [`RedisLimiter`](crate::redis::RedisLimiter)'s, and the
//! failure policy and timeout are each endpoint's (`RedisEndpoints::with_policy`,
//! `with_timeout`). A route's endpoints are decided one round trip each, in order, the
//! first denial ending the check, exactly as in memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::limits::{Checked, Limits, join};
use crate::middleware::{HttpDecision, Middleware, with_headers};
use crate::redis::{AsyncRedis, RedisEndpoints, RedisError};
use crate::rule::{Decision, UNLIMITED};
use crate::store::KeyedLimiter;
use crate::time::Nanos;

/// Limits in Redis, decided without blocking: a [`Middleware`] on [`RedisEndpoints`]
/// (its rules and failure policy) and an [`AsyncRedis`] connection to the same server.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use ratesim::redis::{FailurePolicy, RedisStore};
/// use ratesim::tower::{ForwardedFor, RateLimitLayer, RedisLimits};
/// use ratesim::{Middleware, Registry};
///
/// // Blocks once, briefly, to check the URL: do it before serving.
/// let store = RedisStore::open("redis://127.0.0.1:6379", "myapp")?;
/// let endpoints = store.endpoints().with_policy(FailurePolicy::Open);
/// let rules = Arc::new(Middleware::with_store(endpoints, Registry::default()));
/// rules.reload_file("rules.toml".as_ref())?;
/// let limits = RedisLimits::new(rules, store.connect_async().await?);
/// let layer = RateLimitLayer::new(Arc::new(limits), ForwardedFor);
/// # let _ = layer;
/// # Ok(())
/// # }
/// ```
pub struct RedisLimits {
    rules: Arc<Middleware<RedisEndpoints>>,
    redis: AsyncRedis,
    failures: Arc<AtomicU64>,
}

impl RedisLimits {
    /// Limits with `rules`' endpoints, decided on `redis` (a connection to the server of
    /// the store `rules` was made with; its key prefix is the store's).
    pub fn new(rules: Arc<Middleware<RedisEndpoints>>, redis: AsyncRedis) -> RedisLimits {
        RedisLimits {
            rules,
            redis,
            failures: Arc::default(),
        }
    }

    /// The rules (e.g. to hot-reload them: `reload_file`, `reload_str`).
    pub fn rules(&self) -> &Arc<Middleware<RedisEndpoints>> {
        &self.rules
    }

    /// Decisions Redis could not make (timeout, connection, server error), answered
    /// by the endpoint's failure policy instead.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }
}

impl Limits for RedisLimits {
    fn check<E: AsRef<str>>(&self, endpoints: &[E], client: &str, cost: u64) -> Checked {
        let endpoints: Vec<String> = endpoints.iter().map(|e| e.as_ref().to_owned()).collect();
        let client = client.to_owned();
        let rules = self.rules.clone();
        let redis = self.redis.clone();
        let failures = self.failures.clone();
        Checked::Later(Box::pin(async move {
            let mut decisions = Vec::with_capacity(endpoints.len());
            for endpoint in &endpoints {
                let decision = decide(&rules, &redis, &failures, endpoint, &client, cost).await;
                let denied = !decision.decision.allowed;
                decisions.push(decision);
                if denied {
                    break;
                }
            }
            join(endpoints.iter().map(String::as_str).zip(decisions))
        }))
    }
}

/// One endpoint's decision with its header fields, as the blocking
/// `Middleware::check_with_headers` (cost 1) and the in-memory `check_n_with_headers`
/// would give it.
async fn decide(
    rules: &Middleware<RedisEndpoints>,
    redis: &AsyncRedis,
    failures: &AtomicU64,
    endpoint: &str,
    client: &str,
    cost: u64,
) -> HttpDecision {
    let Some(limit) = rules.limit(endpoint) else {
        return HttpDecision {
            decision: UNLIMITED,
            headers: Vec::new(),
        };
    };
    let limiter = &limit.limiter;
    let key = format!("{endpoint}:{client}");
    let now = limiter.now();
    let mut answer = limiter
        .limiter()
        .try_acquire_n_async(redis, &key, cost, now)
        .await;
    if let Err(RedisError::InsufficientCapacity(_)) = answer {
        // Never passes: denied with no wait that helps, and the key's state as a
        // request of cost 0 (which consumes nothing) sees it, as in memory.
        answer = limiter
            .limiter()
            .try_acquire_n_async(redis, &key, 0, now)
            .await
            .map(|state| Decision {
                allowed: false,
                retry_after: Nanos::MAX,
                ..state
            });
    }
    let decision = answer.unwrap_or_else(|e| {
        failures.fetch_add(1, Ordering::Relaxed);
        limiter.fallback(&e)
    });
    with_headers(&limit.spec, endpoint, decision)
}
