//! [`RedisLimiter`]: one algorithm, or a composite's several, applied to many keys whose
//! states live in Redis; [`Scripted`], the algorithms the script computes. Each decision
//! is one call of the script; this module names the keys, sends the call and applies the
//! failure policy. The arithmetic is in the Lua files, the reply's reading in `script`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

#[cfg(feature = "tower")]
mod asynchronous;

#[cfg(feature = "tower")]
pub use asynchronous::AsyncRedis;

use super::script::{self, Mode, Part};
use super::{
    DEFAULT_TIMEOUT, FailureKind, FailurePolicy, Now, OPEN_TIMEOUT, RedisError, RedisStore,
    StoreError, Unrepresentable,
};
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
    /// The hashes of the scripts this limiter (and its clones) loaded before their first
    /// pipeline (see [`run_at`](RedisLimiter::run_at)).
    loaded: Arc<Mutex<Vec<String>>>,
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
            loaded: Arc::default(),
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
        Ok(script::decision(&self.call(
            key,
            cost,
            now,
            mode_of(now),
            false,
        )?))
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
        Ok(script::composite_decision(&self.call(
            key,
            cost,
            now,
            mode_of(now),
            true,
        )?))
    }

    /// What [`try_acquire_n`](RedisLimiter::try_acquire_n) would answer for `key` at the
    /// caller's instant `at`, changing nothing: no state is created, consumed or
    /// trimmed, so later calls at earlier instants decide as if it never happened. The
    /// simulator asks this to find when a denied request would pass, and for the
    /// `remaining` of a cost that can never pass (ask with cost 0). One round trip.
    pub fn peek_n(&self, key: &str, cost: u64, at: Nanos) -> Result<Decision, RedisError> {
        let capacity = self.capacity();
        if cost > capacity {
            return Err(InsufficientCapacity { cost, capacity }.into());
        }
        let now = Now::Caller(at);
        Ok(script::decision(&self.call(
            key,
            cost,
            now,
            Mode::Peek(at),
            false,
        )?))
    }

    /// Deletes the states of those of `keys` that are idle at the caller's instant `at`
    /// (indistinguishable from fresh ones, as the in-memory `evict_idle` decides), and
    /// says which were. For caller instants, whose keys have only a safety TTL: the simulator's
    /// janitor. Pipelined on one server (one round trip per 1,000 keys); one call per
    /// key on a cluster.
    pub fn evict_idle(&self, keys: &[&str], at: Nanos) -> Result<Vec<bool>, RedisError> {
        let script = script::script_for(&self.parts);
        let args = script::arguments(&self.parts, 0, Mode::Evict(at), false);
        let mut evicted = Vec::with_capacity(keys.len());
        for batch in keys.chunks(1000) {
            let calls: Vec<_> = batch.iter().map(|&key| (key, at, &args[..])).collect();
            let replies: Vec<i64> = self.run_at(script, &calls)?;
            evicted.extend(replies.into_iter().map(|r| r == 1));
        }
        Ok(evicted)
    }

    /// Decides several requests at the caller's instants in one round trip: a pipeline
    /// of the calls [`try_acquire_n`](RedisLimiter::try_acquire_n) would send (the
    /// server runs them in order, so a key may appear more than once), each answered
    /// with its decision and the part that denied it (the longest wait, as
    /// [`try_acquire_all`](RedisLimiter::try_acquire_all) names it). For the simulator,
    /// whose clients' decisions are independent. Every cost must fit the capacity.
    ///
    /// At most once, as every call: nothing is resent. A failure fails the whole batch
    /// and leaves every outcome unknown (some calls may have run); a state loss is not
    /// recovered here (the simulator's store stops at the first one). One call per key
    /// on a cluster, whose connection does not pipeline.
    pub(crate) fn decide_many(
        &self,
        calls: &[(&str, u64, Nanos)],
    ) -> Result<Vec<(Decision, Option<usize>)>, RedisError> {
        let Some(&(_, _, first)) = calls.first() else {
            return Ok(Vec::new());
        };
        let script = script::script_for_call(&self.parts, Mode::Decide(Some(first)), false);
        let args: Vec<Vec<String>> = (calls.iter())
            .map(|&(_, cost, at)| {
                debug_assert!(
                    cost <= self.capacity(),
                    "decide_many: a cost above the capacity"
                );
                script::arguments(&self.parts, cost, Mode::Decide(Some(at)), false)
            })
            .collect();
        let calls: Vec<_> = (calls.iter().zip(&args))
            .map(|(&(key, _, at), args)| (key, at, &args[..]))
            .collect();
        let replies: Vec<Vec<i64>> = self.run_at(script, &calls)?;
        Ok(replies
            .iter()
            .map(|r| script::decision_and_denier(&script::decode(r, self.parts.len(), false)))
            .collect())
    }

    /// Runs `script` once for each `(key, instant, arguments)` of `calls`, at those
    /// caller instants (the store's marker after each call's keys): in one round trip on
    /// one server ([`pipelined`]); one call per key on a cluster, which routes each call
    /// to its key's slot and does not pipeline.
    fn run_at<T: redis::FromRedisValue>(
        &self,
        script: &redis::Script,
        calls: &[(&str, Nanos, &[String])],
    ) -> Result<Vec<T>, RedisError> {
        let mut pipe = redis::pipe();
        for &(key, at, args) in calls {
            let mut keys = self.redis_keys(key, Now::Caller(at));
            keys.extend(self.store.marker().map(str::to_owned));
            pipe.cmd("EVALSHA")
                .arg(script.get_hash())
                .arg(keys.len())
                .arg(keys)
                .arg(args);
        }
        // The script is loaded before this limiter's first pipeline of it. The server
        // reads a long pipeline in parts, and another connection's `SCRIPT LOAD` (a
        // second limiter's, after its own pipeline came back all `NOSCRIPT`) can land
        // between them: a pipeline answered `NOSCRIPT` in part has run the rest and
        // cannot be resent. Loaded first, every pipeline finds the script (until a
        // restart or flush, which `pipelined` handles when it is whole).
        let hash = script.get_hash();
        self.store
            .with_connection(self.timeout, |con| {
                if !con.supports_pipelining() {
                    return (calls.iter())
                        .map(|&(key, at, args)| {
                            let mut call = script.prepare_invoke();
                            call.key(self.redis_keys(key, Now::Caller(at)));
                            call.key(self.store.marker());
                            call.arg(args);
                            call.invoke::<T>(con)
                        })
                        .collect();
                }
                if !self.loaded_scripts().iter().any(|h| h == hash) {
                    script.load(con)?;
                    self.loaded_scripts().push(hash.to_owned());
                }
                pipelined(con, &pipe, script)
            })
            .map_err(|error| self.unavailable(error))
    }

    fn loaded_scripts(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.loaded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn call(
        &self,
        key: &str,
        cost: u64,
        now: Now,
        mode: Mode,
        detail: bool,
    ) -> Result<Vec<script::PartReply>, RedisError> {
        let mut call = script::script_for_call(&self.parts, mode, detail).prepare_invoke();
        call.key(self.redis_keys(key, now));
        call.key(self.store.marker());
        call.arg(script::arguments(&self.parts, cost, mode, detail));
        let invoke = |con: &mut dyn redis::ConnectionLike| call.invoke::<Vec<i64>>(con);
        let reply = match self.store.with_connection(self.timeout, invoke) {
            // The script found the store's keys lost and wrote nothing: sent once more.
            Err(error) if self.store.recovered(&error) => {
                self.store.with_connection(self.timeout, invoke)
            }
            other => other,
        }
        .map_err(|error| self.unavailable(error))?;
        Ok(script::decode(&reply, self.parts.len(), detail))
    }

    /// Redis could not answer: the error, with the decision the policy gives.
    fn unavailable(&self, error: StoreError) -> RedisError {
        RedisError::Unavailable {
            error,
            policy: self.policy,
            fallback: self.policy.decision(self.interval()),
        }
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

/// Sends `pipe`, `EVALSHA`s of `script`, and reads one reply per command. Unlike
/// `Pipeline::query`, which folds the server's errors into one, the first error reply is
/// returned as itself, so its code (`STATELOST`, …) is classified as a single call's
/// would be.
///
/// A pipelined `EVALSHA` is not retried on `NOSCRIPT` by redis-rs. Here, when every
/// reply is `NOSCRIPT` (a server that never saw the script, or flushed its scripts),
/// nothing ran, so the script is loaded and the pipeline sent once more: at most once
/// still holds, and a server that has the script costs no `SCRIPT LOAD` (one per
/// pipeline cost the simulator a round trip and ~9 µs of server time per batch). A
/// pipeline only partly answered `NOSCRIPT` (the scripts flushed mid-way) is an error.
fn pipelined<T: redis::FromRedisValue>(
    con: &mut dyn redis::ConnectionLike,
    pipe: &redis::Pipeline,
    script: &redis::Script,
) -> redis::RedisResult<Vec<T>> {
    let packed = pipe.get_packed_pipeline();
    let mut replies = con.req_packed_commands(&packed, 0, pipe.len())?;
    let noscript =
        |r: &redis::Value| matches!(r, redis::Value::ServerError(e) if e.code() == "NOSCRIPT");
    if !replies.is_empty() && replies.iter().all(noscript) {
        script.load(con)?;
        replies = con.req_packed_commands(&packed, 0, pipe.len())?;
    }
    (replies.into_iter())
        .map(|reply| Ok(redis::from_redis_value(reply.extract_error()?)?))
        .collect()
}

/// A decision at `now` writes the state, with a TTL when the server's clock decides.
fn mode_of(now: Now) -> Mode {
    match now {
        Now::Server => Mode::Decide(None),
        Now::Caller(at) => Mode::Decide(Some(at)),
    }
}

impl RedisStore {
    /// Deletes every key under this store's prefix (`SCAN`, then `UNLINK` in batches)
    /// and returns how many. Not atomic: a key written while it runs may survive. The
    /// simulator removes a run's keys with it; keys decided at caller instants have no
    /// TTL and would otherwise stay.
    pub fn remove_all(&self) -> Result<u64, StoreError> {
        if self.is_cluster() {
            // SCAN walks one node's keys; a cluster would need every master's.
            return Err(StoreError::new(
                FailureKind::InvalidConfig,
                "remove_all walks one server's keys; it is not supported on a cluster".into(),
            ));
        }
        let pattern = format!("{}:*", glob_escape(self.prefix()));
        let mut cursor = 0u64;
        let mut removed = 0;
        loop {
            let (next, keys): (u64, Vec<String>) =
                self.cleanup_connection(OPEN_TIMEOUT, |con| {
                    redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(1000)
                        .query(con)
                })?;
            if !keys.is_empty() {
                removed += self.cleanup_connection(OPEN_TIMEOUT, |con| {
                    redis::cmd("UNLINK").arg(&keys).query::<u64>(con)
                })?;
            }
            if next == 0 {
                return Ok(removed);
            }
            cursor = next;
        }
    }
}

/// `text` matched literally by a Redis glob pattern.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
