//! [`RedisLimiter`]: one algorithm, or a composite's several, applied to many keys whose
//! states live in Redis; [`Scripted`], the algorithms the script computes. Each decision
//! is one call of the script; this module names the keys, sends the call and applies the
//! failure policy. The arithmetic is in the Lua files, the reply's reading in `script`.

use std::time::Duration;

use super::script::{self, Part};
use super::{DEFAULT_TIMEOUT, FailurePolicy, Now, RedisError, RedisStore, Unrepresentable};
use crate::algorithm::Algorithm;
use crate::composite::{Composite, CompositeDecision, EmptyComposite};
use crate::fnv::fnv1a64;
use crate::limiter::InsufficientCapacity;
use crate::rule::{Decision, Rule};
use crate::time::Nanos;

/// The algorithms the Redis store has a script for. Sealed: the script is a second copy
/// of the algorithm's arithmetic, so only the built-ins it mirrors (and composites of
/// them) implement it.
pub trait Scripted: Algorithm + sealed::Sealed {
    /// The rule(s) as the script computes them, or the bound that keeps the script from
    /// computing them exactly.
    fn parts(&self) -> Result<Vec<Part>, Unrepresentable>;
}

pub(super) mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::TokenBucket {}
    impl Sealed for crate::LeakyBucket {}
    impl Sealed for crate::Gcra {}
    impl Sealed for crate::FixedWindow {}
    impl Sealed for crate::SlidingWindowCounter {}
    impl Sealed for crate::SlidingWindowLog {}
    impl<A: super::Scripted> Sealed for crate::Composite<A> {}
}

/// Every rule of the composite, in order: one script call checks all, then consumes
/// from all or from none.
impl<A: Scripted> Scripted for Composite<A> {
    fn parts(&self) -> Result<Vec<Part>, Unrepresentable> {
        let mut parts = Vec::new();
        for part in self.parts() {
            parts.extend(part.parts()?);
        }
        Ok(parts)
    }
}

/// One rule (or a composite's rules) applied to many keys whose states live in Redis.
/// Built by [`RedisStore::limiter`] or [`RedisStore::composite`]; cheap to clone.
#[derive(Debug, Clone)]
pub struct RedisLimiter {
    store: RedisStore,
    name: String,
    parts: Vec<Part>,
    /// Hex hash of the algorithms and rules, part of every key.
    fingerprint: String,
    policy: FailurePolicy,
    timeout: Duration,
}

impl RedisStore {
    /// A limiter for `algorithm` whose keys' states live in this store, failing closed
    /// after [`DEFAULT_TIMEOUT`]. A rule the script cannot compute exactly is refused.
    pub fn limiter<A: Scripted>(&self, algorithm: A) -> Result<RedisLimiter, Unrepresentable> {
        Ok(RedisLimiter::new(
            self.clone(),
            algorithm.name().to_owned(),
            algorithm.parts()?,
        ))
    }

    /// One limiter that admits a request only when every one of `limiters` would, and
    /// then consumes from all of them — atomically, in one script call, as
    /// [`Composite`] does in memory. For composites of different algorithms; a
    /// `Composite` of one algorithm goes to [`limiter`](RedisStore::limiter). Its
    /// keys are its own: it shares no state with `limiters`.
    pub fn composite(&self, limiters: Vec<RedisLimiter>) -> Result<RedisLimiter, EmptyComposite> {
        let first = limiters.first().ok_or(EmptyComposite)?;
        let name = if limiters.iter().all(|l| l.name == first.name) {
            first.name.clone()
        } else {
            "composite".to_owned()
        };
        let parts = limiters.into_iter().flat_map(|l| l.parts).collect();
        Ok(RedisLimiter::new(self.clone(), name, parts))
    }
}

impl RedisLimiter {
    fn new(store: RedisStore, name: String, parts: Vec<Part>) -> RedisLimiter {
        let described: Vec<String> = parts.iter().map(Part::descriptor).collect();
        let fingerprint = format!("{:016x}", fnv1a64(described.join("+").as_bytes()));
        RedisLimiter {
            store,
            name,
            parts,
            fingerprint,
            policy: FailurePolicy::Closed,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same limiter answering `policy`'s decision when Redis cannot.
    pub fn with_policy(self, policy: FailurePolicy) -> RedisLimiter {
        RedisLimiter { policy, ..self }
    }

    /// The same limiter giving up on Redis after `timeout` (connect, send and reply
    /// each). Zero would mean "wait forever" to the socket, so it is raised to 1 ms.
    pub fn with_timeout(self, timeout: Duration) -> RedisLimiter {
        RedisLimiter {
            timeout: timeout.max(Duration::from_millis(1)),
            ..self
        }
    }

    /// The rule enforced; for a composite, the tightest by capacity (as
    /// [`Composite::rule`](crate::Algorithm::rule) reports it).
    pub fn rule(&self) -> &Rule {
        let tightest = self.parts.iter().min_by_key(|p| p.capacity);
        &tightest.expect("a limiter has at least one part").rule
    }

    /// The algorithm's registry name (`"composite"` for a mix).
    pub fn algorithm(&self) -> &str {
        &self.name
    }

    /// The largest cost that can pass (the least capacity of the parts).
    pub fn capacity(&self) -> u64 {
        self.parts.iter().map(|p| p.capacity).min().unwrap_or(0)
    }

    /// The Redis key holding `key`'s state in the time mode of `now` (the first, for a
    /// composite or a sliding log): `<prefix>:{<hash of key>}:<key>:<rule hash>:<s|c>`.
    pub fn redis_key(&self, key: &str, now: Now) -> String {
        self.redis_keys(key, now).swap_remove(0)
    }

    /// Every Redis key of `key` in the time mode of `now`, all in one hash slot: the
    /// base key for a single part, `<base>:<i>` for part `i` of a composite, and a
    /// sliding log's entries under `<…>:log`.
    pub fn redis_keys(&self, key: &str, now: Now) -> Vec<String> {
        let mode = match now {
            Now::Server => 's',
            Now::Caller(_) => 'c',
        };
        let base = format!(
            "{}:{{{:016x}}}:{key}:{}:{mode}",
            self.store.prefix(),
            fnv1a64(key.as_bytes()),
            self.fingerprint
        );
        let single = self.parts.len() == 1;
        let mut keys = Vec::new();
        for (i, part) in self.parts.iter().enumerate() {
            let at = if single {
                base.clone()
            } else {
                format!("{base}:{i}")
            };
            keys.extend(
                part.family
                    .key_suffixes()
                    .iter()
                    .map(|s| format!("{at}{s}")),
            );
        }
        keys
    }

    /// Checks and consumes one permit for `key` at `now`.
    pub fn try_acquire(&self, key: &str, now: Now) -> Result<Decision, RedisError> {
        self.try_acquire_n(key, 1, now)
    }

    /// Checks and consumes `cost` permits for `key` at `now`, atomically on the server,
    /// in one round trip. The decision equals the in-memory algorithm's for the same
    /// instants. A cost above the capacity is refused before anything is sent; cost 0
    /// always passes.
    pub fn try_acquire_n(&self, key: &str, cost: u64, now: Now) -> Result<Decision, RedisError> {
        let capacity = self.capacity();
        if cost > capacity {
            return Err(InsufficientCapacity { cost, capacity }.into());
        }
        Ok(script::decision(&self.call(key, cost, now, false)?))
    }

    /// Checks and consumes `cost` on every part at once and reports which part denied
    /// and each part's view, exactly as
    /// [`RateLimiter::try_acquire_all`](crate::RateLimiter::try_acquire_all) does for a
    /// [`Composite`] (a cost above the tightest capacity is a denial with
    /// `retry_after = Nanos::MAX`). One round trip.
    pub fn try_acquire_all(
        &self,
        key: &str,
        cost: u64,
        now: Now,
    ) -> Result<CompositeDecision, RedisError> {
        Ok(script::composite_decision(
            &self.call(key, cost, now, true)?,
        ))
    }

    fn call(
        &self,
        key: &str,
        cost: u64,
        now: Now,
        detail: bool,
    ) -> Result<Vec<script::PartReply>, RedisError> {
        let mut call = script::script_for(&self.parts).prepare_invoke();
        call.key(self.redis_keys(key, now));
        let at = match now {
            Now::Server => None,
            Now::Caller(at) => Some(at),
        };
        call.arg(script::arguments(&self.parts, cost, at, detail));
        let reply = self
            .store
            .with_connection(self.timeout, |con| call.invoke::<Vec<i64>>(con))
            .map_err(|error| RedisError::Unavailable {
                error,
                policy: self.policy,
                fallback: self.policy.decision(self.interval()),
            })?;
        Ok(script::decode(&reply, self.parts.len(), detail))
    }

    /// The longest time one permit of a part takes to come back.
    fn interval(&self) -> Nanos {
        self.parts
            .iter()
            .map(Part::interval)
            .max()
            .unwrap_or_default()
    }
}
