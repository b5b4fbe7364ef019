//! Limiters whose state lives in Redis, so many processes share one limit and make the
//! same decisions the in-memory [`RateLimiter`](crate::RateLimiter) makes.
//!
//! Each decision is one `EVALSHA` of a Lua script (loaded on `NOSCRIPT` and retried,
//! never resent after a timeout) that checks and consumes atomically on the server. The
//! script is the algorithms' arithmetic again, in exact integers: Redis Lua numbers are
//! doubles, so every value it forms is kept below 2^53 (instants as (s, ns) pairs,
//! products by shift-and-add), and a rule that cannot meet that is refused when its
//! limiter is built ([`Unrepresentable`]), never rounded. The design, the bounds and the
//! measurements are in `docs/redis-design.md`.
//!
//! **Every algorithm**: [`TokenBucket`](crate::TokenBucket),
//! [`LeakyBucket`](crate::LeakyBucket), [`Gcra`](crate::Gcra),
//! [`FixedWindow`](crate::FixedWindow), [`SlidingWindowCounter`](crate::SlidingWindowCounter)
//! and [`SlidingWindowLog`](crate::SlidingWindowLog) (its entries stay in a Redis list;
//! no call ships the log), and composites of them ([`Composite`](crate::Composite) of one
//! algorithm, or [`RedisStore::composite`] for a mix): all rules checked, then consumed
//! from all or none, in one call. Their decisions (`allowed`, `remaining`,
//! `retry_after`, `reset_after`; for composites also which rule denied and each rule's
//! view) equal the in-memory ones exactly (`tests/redis_differential.rs`). A store that
//! `RateLimiter`/`Middleware` are generic over comes next.
//!
//! ```no_run
//! use ratesim::redis::{FailurePolicy, Now, RedisStore};
//! use ratesim::{Nanos, Rule, TokenBucket};
//! use std::time::Duration;
//!
//! let store = RedisStore::open("redis://:PASSWORD@127.0.0.1:6379", "myapp")?;
//! let rule = Rule::new(100, Nanos::from_secs(60))?.with_burst(20)?;
//! let limiter = store
//!     .limiter(TokenBucket::new(rule))?
//!     .with_policy(FailurePolicy::Closed)
//!     .with_timeout(Duration::from_millis(50));
//! // Production: the Redis server's clock (`TIME`), the same for every process.
//! let decision = limiter.try_acquire_n("alice", 1, Now::Server)?;
//! println!("allowed: {}, retry after {}", decision.allowed, decision.retry_after);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The [`Middleware`](crate::Middleware) runs on Redis unchanged — endpoints, keys,
//! headers, hot reload — through [`RedisStore::endpoints`]:
//!
//! ```no_run
//! use ratesim::redis::RedisStore;
//! use ratesim::{Middleware, Nanos, Registry, Rule};
//!
//! let store = RedisStore::open("redis+unix:///run/redis.sock", "myapp")?;
//! let mw = Middleware::with_store(store.endpoints(), Registry::default());
//! mw.add_rule("/login", Rule::new(5, Nanos::from_secs(60))?, "sliding_window_log")?;
//! let answer = mw.check_with_headers("/login", "alice");
//! println!("{} {:?}", answer.status(), answer.headers);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Time
//! [`Now::Server`] reads the server's `TIME` inside the script, so clock skew between
//! application servers cannot over-admit; the key then expires (`PEXPIREAT`) at the
//! instant its state becomes indistinguishable from a fresh one, never earlier, and is
//! deleted at once when it already is. [`Now::Caller`] takes the instant from the caller
//! (a fake clock in tests and the simulator) and sets no TTL, since fake time has no
//! relation to the server's clock. The two modes use different keys.
//!
//! ## Keys
//! `<prefix>:{<tag>}:<key>:<rule>:<mode>`: `<tag>` is a 64-bit hash of the key in hex,
//! so a client id holding `{` or `}` cannot move its slot, and every rule of one client
//! lands in one Redis Cluster slot; `<rule>` is a hash of the algorithm and its rule, so
//! a changed rule starts fresh; `<mode>` is `s` (server time) or `c` (caller instants).

mod bucket;
mod endpoints;
mod error;
mod limiter;
mod log;
mod script;
mod window;

pub use endpoints::{EndpointError, EndpointLimiter, RedisEndpoints};
pub use error::{Bound, FailureKind, RedisError, StoreError, Unrepresentable};
pub use limiter::{RedisLimiter, Scripted};
pub use script::Part;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::{Client, Connection, IntoConnectionInfo};

use crate::rule::Decision;
use crate::time::Nanos;

/// Where the instant of a decision comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Now {
    /// The Redis server's clock (`TIME`, microsecond resolution), read inside the script:
    /// one clock for every process. Production mode.
    Server,
    /// An instant chosen by the caller, e.g. a [`FakeClock`](crate::FakeClock)'s: the
    /// same stream of instants gives the same decisions as in memory. Keys get no TTL.
    Caller(Nanos),
}

/// What a limiter answers when Redis cannot: the decision carried by
/// [`RedisError::Unavailable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Admit the request (availability over the limit).
    Open,
    /// Deny the request (the limit over availability). The default.
    Closed,
}

/// How long a limiter waits for Redis before giving up, unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(200);

/// How long [`RedisStore::open`] waits for its first answer: once, at start-up, where a
/// cold or busy server (or a slow handshake) must not fail the whole program.
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(2);

/// A Redis server (by URL), a key prefix and a pool of connections, shared by the
/// limiters built from it. Cheap to clone; clones share the pool.
///
/// URLs: `redis://[[user]:password@]host:port[/db]` or
/// `redis+unix:///path/to.sock[?user=..&pass=..&db=..]`. Credentials never appear in
/// this type's `Debug` nor in any error.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    prefix: String,
    /// Idle connections; a broken one is dropped, never returned.
    pool: Mutex<Vec<Pooled>>,
    /// The URL's password, only to scrub it from error texts.
    secret: Option<String>,
}

struct Pooled {
    con: Connection,
    /// The read/write timeout the socket currently has.
    timeout: Duration,
}

impl RedisStore {
    /// Connects to `url` once (so a wrong address or password is an error now, not at
    /// the first request) and uses `prefix` for every key. The prefix must not contain
    /// `{` or `}` (they would change the keys' Cluster hash tag).
    pub fn open(url: &str, prefix: &str) -> Result<RedisStore, StoreError> {
        if prefix.contains(['{', '}']) {
            return Err(StoreError::new(
                FailureKind::InvalidConfig,
                format!("the key prefix {prefix:?} contains a brace; it would break the hash tag"),
            ));
        }
        let info = url.into_connection_info().map_err(|_| {
            StoreError::new(
                FailureKind::InvalidConfig,
                "not a valid Redis URL (redis://host:port or redis+unix:///path)".into(),
            )
        })?;
        let secret = info
            .redis_settings()
            .password()
            .filter(|p| !p.is_empty())
            .map(str::to_owned);
        let client =
            Client::open(info).map_err(|e| StoreError::from_redis(&e, secret.as_deref()))?;
        let store = RedisStore {
            inner: Arc::new(Inner {
                client,
                prefix: prefix.to_owned(),
                pool: Mutex::new(Vec::new()),
                secret,
            }),
        };
        store.with_connection(OPEN_TIMEOUT, |con| {
            redis::cmd("PING").query::<String>(con).map(drop)
        })?;
        Ok(store)
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// Runs `f` on a pooled connection (opened if none is idle) with `timeout` on its
    /// socket. The connection goes back to the pool unless the error says the link is
    /// broken or its state unknown (I/O, timeout, authentication): a reply that may
    /// still arrive must never be read as the answer to the next command.
    ///
    /// An idle connection may have died with its server (a restart). When a reused
    /// connection fails with the link closed — not a timeout — the command never ran on
    /// a live server, so it is tried once more on a fresh connection. A timeout is never
    /// retried: the script may have run, and a resend would consume twice.
    fn with_connection<T>(
        &self,
        timeout: Duration,
        f: impl Fn(&mut Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let idle = self
            .inner
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let reused = idle.is_some();
        match self.run(idle, timeout, &f) {
            Err((_, dropped)) if reused && dropped => {
                self.run(None, timeout, &f).map_err(|(e, _)| e)
            }
            result => result.map_err(|(e, _)| e),
        }
    }

    /// One attempt; the error says whether the link was found closed.
    fn run<T>(
        &self,
        idle: Option<Pooled>,
        timeout: Duration,
        f: &impl Fn(&mut Connection) -> redis::RedisResult<T>,
    ) -> Result<T, (StoreError, bool)> {
        let secret = self.inner.secret.as_deref();
        let mut pooled = match idle {
            Some(p) => p,
            None => {
                let con = self
                    .inner
                    .client
                    .get_connection_with_timeout(timeout)
                    .map_err(|e| (StoreError::from_redis(&e, secret), false))?;
                Pooled {
                    con,
                    timeout: Duration::ZERO,
                }
            }
        };
        if pooled.timeout != timeout {
            let set = pooled
                .con
                .set_read_timeout(Some(timeout))
                .and_then(|()| pooled.con.set_write_timeout(Some(timeout)));
            set.map_err(|e| (StoreError::from_redis(&e, secret), false))?;
            pooled.timeout = timeout;
        }
        match f(&mut pooled.con) {
            Ok(value) => {
                self.give_back(pooled);
                Ok(value)
            }
            Err(e) => {
                let error = StoreError::from_redis(&e, secret);
                if error.kind() == FailureKind::Server {
                    self.give_back(pooled);
                }
                let dropped = !e.is_timeout() && e.is_connection_dropped();
                Err((error, dropped))
            }
        }
    }

    fn give_back(&self, pooled: Pooled) {
        self.inner
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(pooled);
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field(
                "addr",
                &self.inner.client.get_connection_info().addr().to_string(),
            )
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

impl FailurePolicy {
    /// The decision this policy gives when Redis cannot answer. `Closed` denies with
    /// `retry_after` = `interval` (the time one permit takes to come back); `Open`
    /// admits and reports nothing remaining, since nothing is known.
    pub fn decision(self, interval: Nanos) -> Decision {
        match self {
            FailurePolicy::Open => Decision {
                allowed: true,
                remaining: 0,
                retry_after: Nanos::ZERO,
                reset_after: Nanos::ZERO,
            },
            FailurePolicy::Closed => Decision {
                allowed: false,
                remaining: 0,
                retry_after: interval,
                reset_after: interval,
            },
        }
    }
}
