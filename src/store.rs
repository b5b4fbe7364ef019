//! Where an endpoint's client keys keep their state: the seam [`Middleware`] is generic
//! over. A [`Store`] turns an endpoint's rule into a [`KeyedLimiter`]; the middleware
//! keeps the endpoint map, the keys (`"{endpoint}:{client_id}"`), hot reload and the
//! HTTP headers, the same on every store. [`InMemory`] is the process's own sharded map
//! ([`RateLimiter`]); `ratesim::redis::RedisEndpoints` (feature `redis`) keeps the states
//! in Redis so many servers share one limit. This module holds no state of its own.
//!
//! [`Middleware`]: crate::Middleware

use std::convert::Infallible;

use crate::algorithm::BoxedAlgorithm;
use crate::limiter::RateLimiter;
use crate::registry::{Registry, UnknownAlgorithm};
use crate::rule::{Decision, Rule};
use crate::time::{Clock, MonotonicClock};

/// One endpoint's limit: a rule and the name of the algorithm that enforces it (also
/// `ratesim::middleware::EndpointRule`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointRule {
    /// The limit.
    pub rule: Rule,
    /// A registry name, e.g. `"sliding_window_log"`.
    pub algorithm: String,
}

/// Builds one endpoint's limiter for its rule.
pub trait Store: Send + Sync {
    /// The limiter an endpoint gets.
    type Limiter: KeyedLimiter;
    /// Why a rule cannot be given a limiter: at least an unknown algorithm name.
    type Error: std::error::Error + From<UnknownAlgorithm> + Send + Sync + 'static;

    /// A limiter enforcing `spec`, its algorithm resolved in `registry`. It starts with
    /// every key fresh.
    fn limiter(
        &self,
        spec: &EndpointRule,
        registry: &Registry,
    ) -> Result<Self::Limiter, Self::Error>;
}

/// One endpoint's limiter: an atomic check-and-consume per key.
pub trait KeyedLimiter: Send + Sync {
    /// Why the store could not decide (`Infallible` in memory).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Checks and consumes one permit for `key`.
    fn acquire(&self, key: &str) -> Result<Decision, Self::Error>;

    /// The decision to act on when [`acquire`](KeyedLimiter::acquire) failed: the
    /// store's failure policy.
    fn fallback(&self, error: &Self::Error) -> Decision;

    /// Forgets idle keys; returns how many. Stores whose keys expire on their own
    /// (Redis) have nothing to do.
    fn evict_idle(&self) -> usize {
        0
    }
}

/// The states in this process, in a [`RateLimiter`] per endpoint reading `clock`.
#[derive(Debug, Clone, Default)]
pub struct InMemory<C = MonotonicClock> {
    clock: C,
}

impl<C: Clock + Clone> InMemory<C> {
    /// Limiters reading `clock`.
    pub fn new(clock: C) -> InMemory<C> {
        InMemory { clock }
    }

    /// The clock every limiter reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<C: Clock + Clone> Store for InMemory<C> {
    type Limiter = RateLimiter<BoxedAlgorithm, String, C>;
    type Error = UnknownAlgorithm;

    fn limiter(
        &self,
        spec: &EndpointRule,
        registry: &Registry,
    ) -> Result<Self::Limiter, UnknownAlgorithm> {
        let algorithm = registry.create(&spec.algorithm, spec.rule)?;
        Ok(RateLimiter::with_clock(algorithm, self.clock.clone()))
    }
}

impl<C: Clock> KeyedLimiter for RateLimiter<BoxedAlgorithm, String, C> {
    type Error = Infallible;

    fn acquire(&self, key: &str) -> Result<Decision, Infallible> {
        Ok(self.try_acquire(key))
    }

    fn fallback(&self, error: &Infallible) -> Decision {
        match *error {}
    }

    fn evict_idle(&self) -> usize {
        RateLimiter::evict_idle(self)
    }
}
