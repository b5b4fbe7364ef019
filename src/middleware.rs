//! Endpoint → limiter, the way an HTTP server would use the library.
//!
//! The key of a request is `"{endpoint}:{client_id}"`; an endpoint with no rule is
//! unlimited. The endpoint map is immutable once built and replaced as a whole behind
//! one pointer swap, so a request sees either the old rules or the new ones, never a mix.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use crate::algorithm::BoxedAlgorithm;
use crate::limiter::RateLimiter;
use crate::registry::{Registry, UnknownAlgorithm};
use crate::rule::{Decision, Rule, UNLIMITED};
use crate::time::{Clock, MonotonicClock};

/// One endpoint's limit: a rule and the name of the algorithm that enforces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointRule {
    /// The limit.
    pub rule: Rule,
    /// A registry name, e.g. `"sliding_window_log"`.
    pub algorithm: String,
}

struct Limit<C> {
    spec: EndpointRule,
    limiter: RateLimiter<BoxedAlgorithm, String, C>,
}

type Rules<C> = Arc<HashMap<String, Arc<Limit<C>>>>;

/// Maps endpoints to limiters.
///
/// ```
/// use ratesim::{FakeClock, Middleware, Nanos, Rule};
/// let mw = Middleware::with_clock(FakeClock::default());
/// mw.add_rule("/login", Rule::new(3, Nanos::from_secs(60))?, "sliding_window_log")?;
/// for _ in 0..3 {
///     assert!(mw.check("/login", "alice").allowed);
/// }
/// let denied = mw.check("/login", "alice");
/// assert_eq!((denied.allowed, denied.retry_after_secs()), (false, 60));
/// assert!(mw.check("/login", "bob").allowed, "clients are separate keys");
/// assert!(mw.check("/search", "alice").allowed, "no rule: unlimited");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Middleware<C: Clock + Clone = MonotonicClock> {
    clock: C,
    registry: Registry,
    rules: RwLock<Rules<C>>,
    /// Serialises writers so two concurrent `add_rule`s cannot lose one another.
    writer: Mutex<()>,
}

impl Middleware<MonotonicClock> {
    /// A middleware on the real clock with the built-in algorithms.
    pub fn new() -> Self {
        Middleware::with_clock(MonotonicClock::new())
    }
}

impl Default for Middleware<MonotonicClock> {
    fn default() -> Self {
        Middleware::new()
    }
}

impl<C: Clock + Clone> Middleware<C> {
    /// A middleware reading time from `clock`, with the built-in algorithms.
    pub fn with_clock(clock: C) -> Self {
        Middleware::with_registry(clock, Registry::default())
    }

    /// A middleware that resolves algorithm names in `registry`.
    pub fn with_registry(clock: C, registry: Registry) -> Self {
        Middleware {
            clock,
            registry,
            rules: RwLock::new(Arc::new(HashMap::new())),
            writer: Mutex::new(()),
        }
    }

    /// Limits `endpoint` with `rule` enforced by `algorithm`, replacing any previous
    /// rule for it (the endpoint's clients then start fresh).
    pub fn add_rule(
        &self,
        endpoint: &str,
        rule: Rule,
        algorithm: &str,
    ) -> Result<(), UnknownAlgorithm> {
        let _writer = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut next: HashMap<_, _> = (*self.current()).clone();
        let spec = EndpointRule {
            rule,
            algorithm: algorithm.to_string(),
        };
        next.insert(endpoint.to_string(), Arc::new(self.build(spec)?));
        self.swap(next);
        Ok(())
    }

    /// Replaces every rule at once. Endpoints whose rule and algorithm are unchanged keep
    /// their limiter and so their clients' state; changed or new endpoints start fresh;
    /// endpoints not listed become unlimited. On an unknown algorithm nothing changes.
    pub fn replace_rules<'a>(
        &self,
        rules: impl IntoIterator<Item = (&'a str, EndpointRule)>,
    ) -> Result<(), UnknownAlgorithm> {
        let _writer = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let old = self.current();
        let mut next = HashMap::new();
        for (endpoint, spec) in rules {
            let limit = match old.get(endpoint) {
                Some(kept) if kept.spec == spec => kept.clone(),
                _ => Arc::new(self.build(spec)?),
            };
            next.insert(endpoint.to_string(), limit);
        }
        self.swap(next);
        Ok(())
    }

    /// The decision for one request by `client_id` on `endpoint`.
    pub fn check(&self, endpoint: &str, client_id: &str) -> Decision {
        match self.current().get(endpoint) {
            Some(limit) => limit
                .limiter
                .try_acquire(format!("{endpoint}:{client_id}").as_str()),
            None => UNLIMITED,
        }
    }

    /// The rule currently applied to `endpoint`, if any.
    pub fn rule(&self, endpoint: &str) -> Option<EndpointRule> {
        self.current().get(endpoint).map(|l| l.spec.clone())
    }

    /// Drops idle client keys on every endpoint; returns how many.
    pub fn evict_idle(&self) -> usize {
        self.current()
            .values()
            .map(|l| l.limiter.evict_idle())
            .sum()
    }

    fn current(&self) -> Rules<C> {
        self.rules
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn swap(&self, next: HashMap<String, Arc<Limit<C>>>) {
        *self
            .rules
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(next);
    }

    fn build(&self, spec: EndpointRule) -> Result<Limit<C>, UnknownAlgorithm> {
        let algorithm = self.registry.create(&spec.algorithm, spec.rule)?;
        Ok(Limit {
            spec,
            limiter: RateLimiter::with_clock(algorithm, self.clock.clone()),
        })
    }
}
