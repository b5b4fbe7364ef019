//! [`RedisEndpoints`]: the [`Store`] that gives each [`Middleware`](crate::Middleware)
//! endpoint a [`RedisLimiter`], so its headers, hot reload and composites of rules work
//! across servers sharing one Redis. It only maps a registry entry to the built-in
//! algorithm the script computes and picks the instant; the decisions are the limiter's.

use std::sync::Arc;
use std::time::Duration;

use super::{DEFAULT_TIMEOUT, FailurePolicy, Now, RedisError, RedisLimiter, RedisStore};
use super::{Scripted, Unrepresentable};
use crate::algorithm::TokenBucket;
use crate::algorithm::{FixedWindow, Gcra, LeakyBucket, SlidingWindowCounter, SlidingWindowLog};
use crate::registry::{Builtin, Registry, UnknownAlgorithm};
use crate::rule::{Decision, Rule};
use crate::store::EndpointRule;
use crate::store::{KeyedLimiter, Store};
use crate::time::{Clock, Nanos};

/// Endpoints' limiters in Redis, on the server's clock unless given one
/// ([`with_clock`](RedisEndpoints::with_clock), for tests and the simulator).
#[derive(Clone)]
pub struct RedisEndpoints {
    store: RedisStore,
    clock: Option<Arc<dyn Clock>>,
    policy: FailurePolicy,
    timeout: Duration,
}

/// Why an endpoint's rule cannot be enforced in Redis.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// The registry does not know the name.
    #[error(transparent)]
    Unknown(#[from] UnknownAlgorithm),
    /// The name is not (or no longer) a built-in: Redis has scripts only for those.
    #[error("`{0}` is not a built-in algorithm; the Redis store computes only the built-ins")]
    NotScripted(String),
    /// The script cannot compute the rule exactly.
    #[error(transparent)]
    Unrepresentable(#[from] Unrepresentable),
}

impl RedisStore {
    /// The store for a [`Middleware`](crate::Middleware): every endpoint's clients keep
    /// their states in this Redis, decided on the server's clock, failing closed after
    /// [`DEFAULT_TIMEOUT`].
    pub fn endpoints(&self) -> RedisEndpoints {
        RedisEndpoints {
            store: self.clone(),
            clock: None,
            policy: FailurePolicy::Closed,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// A limiter for the built-in `algorithm` on `rule`.
    pub fn builtin(&self, algorithm: Builtin, rule: Rule) -> Result<RedisLimiter, Unrepresentable> {
        fn make<A: Scripted>(store: &RedisStore, a: A) -> Result<RedisLimiter, Unrepresentable> {
            store.limiter(a)
        }
        match algorithm {
            Builtin::TokenBucket => make(self, TokenBucket::new(rule)),
            Builtin::LeakyBucket => make(self, LeakyBucket::new(rule)),
            Builtin::Gcra => make(self, Gcra::new(rule)),
            Builtin::FixedWindow => make(self, FixedWindow::new(rule)),
            Builtin::SlidingWindowCounter => make(self, SlidingWindowCounter::new(rule)),
            Builtin::SlidingWindowLog => make(self, SlidingWindowLog::new(rule)),
        }
    }
}

impl RedisEndpoints {
    /// The same store deciding at `clock`'s instants ([`Now::Caller`]) instead of the
    /// server's: the same stream then gives the in-memory decisions. Keys get only the safety TTL [`CALLER_TTL`](super::CALLER_TTL).
    pub fn with_clock(self, clock: impl Clock + 'static) -> RedisEndpoints {
        RedisEndpoints {
            clock: Some(Arc::new(clock)),
            ..self
        }
    }

    /// The same store answering `policy`'s decision when Redis cannot.
    pub fn with_policy(self, policy: FailurePolicy) -> RedisEndpoints {
        RedisEndpoints { policy, ..self }
    }

    /// The same store giving up on Redis after `timeout`.
    pub fn with_timeout(self, timeout: Duration) -> RedisEndpoints {
        RedisEndpoints { timeout, ..self }
    }
}

/// A [`RedisStore`] is a [`Store`] as it stands: [`RedisStore::endpoints`]' defaults (the
/// server's clock, failing closed after [`DEFAULT_TIMEOUT`]). So every type called a
/// store in this crate is one: `Middleware::with_store(RedisStore::open(url)?, registry)`.
impl Store for RedisStore {
    type Limiter = EndpointLimiter;
    type Error = EndpointError;

    fn limiter(
        &self,
        spec: &EndpointRule,
        registry: &Registry,
    ) -> Result<EndpointLimiter, EndpointError> {
        self.endpoints().limiter(spec, registry)
    }
}

impl Store for RedisEndpoints {
    type Limiter = EndpointLimiter;
    type Error = EndpointError;

    fn limiter(
        &self,
        spec: &EndpointRule,
        registry: &Registry,
    ) -> Result<EndpointLimiter, EndpointError> {
        let builtin = registry
            .entry(&spec.algorithm)?
            .builtin()
            .ok_or_else(|| EndpointError::NotScripted(spec.algorithm.clone()))?;
        let limiter = self
            .store
            .builtin(builtin, spec.rule)?
            .with_policy(self.policy)
            .with_timeout(self.timeout);
        Ok(EndpointLimiter {
            limiter,
            clock: self.clock.clone(),
        })
    }
}

/// One endpoint's [`RedisLimiter`] and where its instants come from.
#[derive(Clone)]
pub struct EndpointLimiter {
    limiter: RedisLimiter,
    clock: Option<Arc<dyn Clock>>,
}

impl EndpointLimiter {
    /// The Redis limiter.
    pub fn limiter(&self) -> &RedisLimiter {
        &self.limiter
    }

    /// The instant its decisions are made at: the server's clock, or the clock given
    /// to [`RedisEndpoints::with_clock`].
    pub fn now(&self) -> Now {
        match &self.clock {
            Some(clock) => Now::Caller(clock.now()),
            None => Now::Server,
        }
    }
}

impl KeyedLimiter for EndpointLimiter {
    type Error = RedisError;

    fn acquire(&self, key: &str) -> Result<Decision, RedisError> {
        self.limiter.try_acquire(key, self.now())
    }

    /// The failure policy's decision (cost 1 always fits, so there is one).
    fn fallback(&self, error: &RedisError) -> Decision {
        error.fallback().unwrap_or(Decision {
            allowed: false,
            remaining: 0,
            retry_after: Nanos::MAX,
            reset_after: Nanos::MAX,
        })
    }
}

impl std::fmt::Debug for RedisEndpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisEndpoints")
            .field("store", &self.store)
            .field("server_time", &self.clock.is_none())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}
