//! Endpoint → limiter, the way an HTTP server would use the library.
//!
//! The key of a request is `"{endpoint}:{client_id}"`; an endpoint with no rule is
//! unlimited. Where the keys' states live is the middleware's [`Store`]: this process
//! ([`InMemory`], the default) or Redis (`ratesim::redis::RedisEndpoints`). The endpoint map is immutable once built and replaced as a whole behind
//! one pointer swap, so a request sees either the old rules or the new ones, never a mix.
//!
//! Hot reload from a TOML rules file (`Middleware::reload_str`, `reload_file` and their
//! `RulesError`) needs the `toml-rules` feature; nothing else here needs an optional
//! dependency, and this module must not grow one outside that feature.

use std::collections::HashMap;
#[cfg(feature = "toml-rules")]
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

#[cfg(feature = "toml-rules")]
use serde::Deserialize;

use crate::registry::Registry;
#[cfg(feature = "toml-rules")]
use crate::registry::UnknownAlgorithm;
use crate::rule::{Decision, Rule, UNLIMITED};
// `EndpointRule` lives in the store module (a store builds a limiter from one), and is
// re-exported here, where a user configures endpoints.
pub use crate::store::EndpointRule;
use crate::store::{InMemory, KeyedLimiter, Store};
#[cfg(feature = "toml-rules")]
use crate::time::Nanos;
use crate::time::{Clock, MonotonicClock};

/// A decision with the HTTP response header fields that go with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpDecision {
    /// The decision itself.
    pub decision: Decision,
    /// `RateLimit-Policy` and `RateLimit` (IETF draft) on every limited endpoint, plus
    /// `Retry-After` (whole seconds, rounded up) on a denial. Empty when unlimited.
    pub headers: Vec<(&'static str, String)>,
}

impl HttpDecision {
    /// The HTTP status: 200 or 429.
    pub fn status(&self) -> u16 {
        if self.decision.allowed { 200 } else { 429 }
    }
}

/// Why a rules file could not be loaded. The running rules stay as they were.
#[cfg(feature = "toml-rules")]
#[cfg_attr(docsrs, doc(cfg(feature = "toml-rules")))]
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Not valid TOML, or not the expected fields (the message gives line and column).
    #[error("{origin}: {message}")]
    Parse {
        /// The file, or `<string>`.
        origin: String,
        /// What was expected, with the position.
        message: String,
    },
    /// An algorithm name the registry does not know.
    #[error("{origin}: endpoint `{endpoint}`: {source}")]
    Algorithm {
        /// The file, or `<string>`.
        origin: String,
        /// The endpoint whose rule names it.
        endpoint: String,
        /// The registry's error, listing the known names.
        source: UnknownAlgorithm,
    },
    /// The store refused a rule (e.g. Redis has no script for the algorithm, or cannot
    /// compute the rule exactly).
    #[error("{origin}: {message}")]
    Store {
        /// The file, or `<string>`.
        origin: String,
        /// The store's error.
        message: String,
    },
}

/// The rules file: a list of `[[endpoint]]` tables.
#[cfg(feature = "toml-rules")]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default)]
    endpoint: Vec<EndpointSpec>,
}

#[cfg(feature = "toml-rules")]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointSpec {
    path: String,
    algorithm: String,
    max_requests: u64,
    window: String,
    burst: Option<u64>,
}

#[cfg(feature = "toml-rules")]
impl EndpointSpec {
    fn into_rule(self) -> Result<(String, EndpointRule), String> {
        let window = Nanos::parse_duration(&self.window)
            .map_err(|e| format!("endpoint `{}`: window: {e}", self.path))?;
        let mut rule = Rule::new(self.max_requests, window)
            .map_err(|e| format!("endpoint `{}`: {e}", self.path))?;
        if let Some(burst) = self.burst {
            rule = rule
                .with_burst(burst)
                .map_err(|e| format!("endpoint `{}`: {e}", self.path))?;
        }
        Ok((
            self.path,
            EndpointRule {
                rule,
                algorithm: self.algorithm,
            },
        ))
    }
}

pub(crate) struct Limit<L> {
    pub(crate) spec: EndpointRule,
    pub(crate) limiter: L,
    /// The endpoint's `RateLimit-Policy` item, made once per rule rather than per
    /// request (it depends on the rule and the endpoint's name only). `None` only if it
    /// were not a valid field value, which the escaping in `Rule` rules out.
    #[cfg(feature = "tower")]
    pub(crate) policy: Option<http::HeaderValue>,
}

/// Endpoint → limit. Looked up once per request with a path as the key; foldhash
/// (seeded per map) rather than SipHash, as the limiter's own tables: the entries are
/// the operator's endpoints, so a client choosing paths cannot make them collide.
type EndpointMap<L> = HashMap<String, Arc<Limit<L>>, foldhash::fast::RandomState>;
type Rules<S> = Arc<EndpointMap<<S as Store>::Limiter>>;

/// Why the store of `S` could not decide.
pub type StoreError<S> = <<S as Store>::Limiter as KeyedLimiter>::Error;

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
pub struct Middleware<S: Store = InMemory<MonotonicClock>> {
    store: S,
    registry: Registry,
    rules: RwLock<Rules<S>>,
    /// Serialises writers so two concurrent `add_rule`s cannot lose one another.
    writer: Mutex<()>,
}

impl Middleware<InMemory<MonotonicClock>> {
    /// A middleware on the real clock with the built-in algorithms.
    pub fn new() -> Self {
        Middleware::with_clock(MonotonicClock::new())
    }
}

impl Default for Middleware<InMemory<MonotonicClock>> {
    fn default() -> Self {
        Middleware::new()
    }
}

impl<C: Clock + Clone> Middleware<InMemory<C>> {
    /// A middleware reading time from `clock`, with the built-in algorithms.
    pub fn with_clock(clock: C) -> Self {
        Middleware::with_registry(clock, Registry::default())
    }

    /// A middleware that resolves algorithm names in `registry`.
    pub fn with_registry(clock: C, registry: Registry) -> Self {
        Middleware::with_store(InMemory::new(clock), registry)
    }
}

impl<C: Clock + Clone> Middleware<InMemory<C>> {
    /// As [`check_with_headers`](Middleware::check_with_headers) for a request that
    /// weighs `cost` permits (in memory). A cost above the rule's burst can never pass:
    /// denied with `retry_after` of `Nanos::MAX` and no `Retry-After` field, nothing
    /// consumed.
    ///
    /// ```
    /// # use ratesim::{FakeClock, Middleware, Nanos, Rule};
    /// let mw = Middleware::with_clock(FakeClock::default());
    /// mw.add_rule("/upload", Rule::new(5, Nanos::from_secs(10))?, "token_bucket")?;
    /// assert_eq!(mw.check_n_with_headers("/upload", "alice", 3).decision.remaining, 2);
    /// let never = mw.check_n_with_headers("/upload", "alice", 6);
    /// assert!(!never.decision.allowed);
    /// assert!(never.headers.iter().all(|(name, _)| *name != "Retry-After"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_n_with_headers(&self, endpoint: &str, client_id: &str, cost: u64) -> HttpDecision {
        let rules = self.snapshot();
        let Some(limit) = rules.get(endpoint) else {
            return HttpDecision {
                decision: UNLIMITED,
                headers: Vec::new(),
            };
        };
        let decision = Self::acquire_n(&limit.limiter, endpoint, client_id, cost);
        with_headers(&limit.spec, endpoint, decision)
    }

    /// `client_id`'s decision for `cost` permits on `limiter` (the limiter of
    /// `endpoint`), as [`check_n_with_headers`](Middleware::check_n_with_headers) makes
    /// it, without the header fields.
    pub(crate) fn acquire_n(
        limiter: &<InMemory<C> as Store>::Limiter,
        endpoint: &str,
        client_id: &str,
        cost: u64,
    ) -> Decision {
        with_key(endpoint, client_id, |key| {
            match limiter.try_acquire_n(key, cost) {
                Ok(decision) => decision,
                Err(_) => Decision {
                    allowed: false,
                    retry_after: crate::time::Nanos::MAX,
                    ..limiter.peek(key)
                },
            }
        })
    }
}

impl<S: Store> Middleware<S> {
    /// A middleware whose endpoints keep their clients' states in `store`, resolving
    /// algorithm names in `registry`.
    pub fn with_store(store: S, registry: Registry) -> Self {
        Middleware {
            store,
            registry,
            rules: RwLock::new(Arc::default()),
            writer: Mutex::new(()),
        }
    }

    /// The store the endpoints' limiters keep their states in.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Limits `endpoint` with `rule` enforced by `algorithm`, replacing any previous
    /// rule for it (the endpoint's clients then start fresh).
    pub fn add_rule(&self, endpoint: &str, rule: Rule, algorithm: &str) -> Result<(), S::Error> {
        let _writer = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut next = (*self.current()).clone();
        let spec = EndpointRule {
            rule,
            algorithm: algorithm.to_string(),
        };
        next.insert(endpoint.to_string(), Arc::new(self.build(endpoint, spec)?));
        self.swap(next);
        Ok(())
    }

    /// Replaces every rule at once. Endpoints whose rule and algorithm are unchanged keep
    /// their limiter and so their clients' state; changed or new endpoints start fresh;
    /// endpoints not listed become unlimited. On an unknown algorithm nothing changes.
    pub fn replace_rules<'a>(
        &self,
        rules: impl IntoIterator<Item = (&'a str, EndpointRule)>,
    ) -> Result<(), S::Error> {
        let _writer = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let old = self.current();
        let mut next = EndpointMap::default();
        for (endpoint, spec) in rules {
            let limit = match old.get(endpoint) {
                Some(kept) if kept.spec == spec => kept.clone(),
                _ => Arc::new(self.build(endpoint, spec)?),
            };
            next.insert(endpoint.to_string(), limit);
        }
        self.swap(next);
        Ok(())
    }

    /// Replaces every rule with those in a TOML file (see [`Middleware::reload_str`]).
    #[cfg(feature = "toml-rules")]
    #[cfg_attr(docsrs, doc(cfg(feature = "toml-rules")))]
    pub fn reload_file(&self, path: &Path) -> Result<(), RulesError> {
        let text = std::fs::read_to_string(path).map_err(|source| RulesError::Read {
            path: path.display().to_string(),
            source,
        })?;
        self.reload_str(&text, &path.display().to_string())
    }

    /// Replaces every rule with those in `text`, a TOML list of endpoints, atomically
    /// and with [`replace_rules`](Middleware::replace_rules)' state-keeping semantics.
    /// On any error nothing changes.
    ///
    /// ```
    /// # use ratesim::{FakeClock, Middleware};
    /// let mw = Middleware::with_clock(FakeClock::default());
    /// mw.reload_str(r#"
    ///     [[endpoint]]
    ///     path = "/login"
    ///     algorithm = "sliding_window_log"
    ///     max_requests = 3
    ///     window = "60s"
    /// "#, "rules.toml")?;
    /// assert_eq!(mw.rule("/login").unwrap().rule.max_requests(), 3);
    /// # Ok::<(), ratesim::middleware::RulesError>(())
    /// ```
    #[cfg(feature = "toml-rules")]
    #[cfg_attr(docsrs, doc(cfg(feature = "toml-rules")))]
    pub fn reload_str(&self, text: &str, origin: &str) -> Result<(), RulesError> {
        let parse_error = |message: String| RulesError::Parse {
            origin: origin.to_string(),
            message,
        };
        let file: RulesFile =
            toml::from_str(text).map_err(|e| parse_error(e.to_string().trim_end().to_string()))?;
        let mut rules: Vec<(String, EndpointRule)> = Vec::with_capacity(file.endpoint.len());
        for spec in file.endpoint {
            let (endpoint, rule) = spec.into_rule().map_err(parse_error)?;
            if rules.iter().any(|(e, _)| *e == endpoint) {
                return Err(parse_error(format!(
                    "endpoint `{endpoint}` is listed twice"
                )));
            }
            rules.push((endpoint, rule));
        }
        if let Some((endpoint, source)) = rules.iter().find_map(|(e, r)| {
            self.registry
                .create(&r.algorithm, r.rule)
                .err()
                .map(|source| (e.clone(), source))
        }) {
            return Err(RulesError::Algorithm {
                origin: origin.to_string(),
                endpoint,
                source,
            });
        }
        let endpoints: Vec<(&str, EndpointRule)> =
            rules.iter().map(|(e, r)| (e.as_str(), r.clone())).collect();
        self.replace_rules(endpoints)
            .map_err(|e| RulesError::Store {
                origin: origin.to_string(),
                message: e.to_string(),
            })
    }

    /// Every endpoint and its rule, from one consistent view of the rule set.
    pub fn rules(&self) -> Vec<(String, EndpointRule)> {
        let mut all: Vec<_> = self
            .current()
            .iter()
            .map(|(e, l)| (e.clone(), l.spec.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The decision for one request, with its HTTP header fields.
    pub fn check_with_headers(&self, endpoint: &str, client_id: &str) -> HttpDecision {
        let rules = self.current();
        let Some(limit) = rules.get(endpoint) else {
            return HttpDecision {
                decision: UNLIMITED,
                headers: Vec::new(),
            };
        };
        let decision = decide(&limit.limiter, endpoint, client_id);
        with_headers(&limit.spec, endpoint, decision)
    }

    /// The decision for one request by `client_id` on `endpoint`. When the store
    /// cannot decide, its failure policy's; [`try_check`](Middleware::try_check) says
    /// why.
    pub fn check(&self, endpoint: &str, client_id: &str) -> Decision {
        match self.current().get(endpoint) {
            Some(limit) => decide(&limit.limiter, endpoint, client_id),
            None => UNLIMITED,
        }
    }

    /// As [`check`](Middleware::check), with the store's error when it could not decide
    /// (never, in memory).
    pub fn try_check(&self, endpoint: &str, client_id: &str) -> Result<Decision, StoreError<S>> {
        match self.current().get(endpoint) {
            Some(limit) => limit.limiter.acquire(&format!("{endpoint}:{client_id}")),
            None => Ok(UNLIMITED),
        }
    }

    /// The rule and limiter of `endpoint` in the current rules, for a caller that
    /// decides with the limiter its own way (the tower layer's async Redis path) and
    /// then calls [`with_headers`].
    #[cfg(all(feature = "tower", feature = "redis"))]
    pub(crate) fn limit(&self, endpoint: &str) -> Option<Arc<Limit<S::Limiter>>> {
        self.current().get(endpoint).cloned()
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

    fn current(&self) -> Rules<S> {
        self.snapshot().clone()
    }

    /// The current rules, read-locked: no reference count touched, but a reload waits
    /// until the guard is dropped. Only for a short critical section with no I/O (the
    /// in-memory decisions); a store that may block takes [`current`](Self::current).
    pub(crate) fn snapshot(&self) -> RwLockReadGuard<'_, Rules<S>> {
        self.rules
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn swap(&self, next: EndpointMap<S::Limiter>) {
        *self
            .rules
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(next);
    }

    fn build(&self, endpoint: &str, spec: EndpointRule) -> Result<Limit<S::Limiter>, S::Error> {
        #[cfg(not(feature = "tower"))]
        let _ = endpoint; // names the policy item, which only the tower layer keeps
        Ok(Limit {
            limiter: self.store.limiter(&spec, &self.registry)?,
            #[cfg(feature = "tower")]
            policy: http::HeaderValue::try_from(spec.rule.ratelimit_policy(endpoint)).ok(),
            spec,
        })
    }
}

/// `decision` with its header fields: `RateLimit-Policy`, `RateLimit`, and on a denial
/// that a wait can cure `Retry-After` (a cost above the capacity, `retry_after` of
/// `Nanos::MAX`, gets none: no wait helps).
pub(crate) fn with_headers(
    spec: &EndpointRule,
    endpoint: &str,
    decision: Decision,
) -> HttpDecision {
    let mut headers = vec![
        ("RateLimit-Policy", spec.rule.ratelimit_policy(endpoint)),
        ("RateLimit", decision.ratelimit(endpoint)),
    ];
    if !decision.allowed && decision.retry_after != crate::time::Nanos::MAX {
        headers.push(("Retry-After", decision.retry_after_secs().to_string()));
    }
    HttpDecision { decision, headers }
}

/// The limiter's decision for `client_id` on `endpoint`, or its failure policy's.
fn decide<L: KeyedLimiter>(limiter: &L, endpoint: &str, client_id: &str) -> Decision {
    with_key(endpoint, client_id, |key| {
        limiter
            .acquire(key)
            .unwrap_or_else(|e| limiter.fallback(&e))
    })
}

/// Calls `f` with the key `"{endpoint}:{client_id}"`, built in a buffer this thread
/// reuses: no allocation per request once the buffer is as long as the keys.
fn with_key<R>(endpoint: &str, client_id: &str, f: impl FnOnce(&str) -> R) -> R {
    thread_local! {
        static KEY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    KEY.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut key) => {
            key.clear();
            key.push_str(endpoint);
            key.push(':');
            key.push_str(client_id);
            f(&key)
        }
        // Re-entered (a limiter that checks another endpoint): a key of its own.
        Err(_) => f(&format!("{endpoint}:{client_id}")),
    })
}
