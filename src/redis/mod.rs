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
//! (a fake clock in tests and the simulator); fake time has no relation to the
//! server's clock, so its keys get only a safety TTL ([`CALLER_TTL`], 1 h after their
//! last write), for keys a killed process left. The two modes use different keys.
//!
//! ## Failures: at most once
//! No command is ever resent after it may have reached the server: not after a
//! timeout, not on a connection found closed (a `CLIENT KILL`, a restart). Such a
//! failure is an unknown outcome, answered by the limiter's [`FailurePolicy`]; the next
//! call opens a fresh connection. A restart without persistence is a fresh limit for
//! every key (state lost); the first call on each pooled connection to the old server
//! fails by policy.
//!
//! A lost state looks like a fresh one, so a store on one server keeps a marker key
//! that a call checks before it writes (a single rule deciding: only when its state is
//! missing, as every state is after a loss): after a `FLUSHALL`/`FLUSHDB` or a restart
//! without persistence, the call that notices writes nothing, the store counts the loss
//! ([`RedisStore::state_losses`]) and decides that call on the fresh state; a store
//! built with [`RedisStoreBuilder::stop_after_failure`] fails with
//! [`FailureKind::StateLost`] instead.
//!
//! ## Keys
//! `<prefix>:{<tag>}:<key>:<rule>:<mode>`: `<tag>` is a 64-bit hash of the key in hex,
//! so a client id holding `{` or `}` cannot move its slot, and every rule of one client
//! lands in one Redis Cluster slot; `<rule>` is a hash of the algorithm and its rule, so
//! a changed rule starts fresh; `<mode>` is `s` (server time) or `c` (caller instants).
//!
//! ## Redis Cluster
//! [`RedisStore::open_cluster`] takes seed nodes' URLs; each decision goes to the master
//! owning its client's slot, `MOVED`/`ASK` are followed (a slot migrating), the script is
//! reloaded on a master that lacks it, and — unlike redis-rs' cluster connection alone —
//! nothing is resent after a timeout.
//!
//! ## TLS
//! `rediss://` URLs connect over TLS (rustls with the `ring` provider; no system
//! OpenSSL), trusting the operating system's CA certificates, or only a CA given to
//! [`RedisStoreBuilder::root_certificate_pem`]. The server's name is always verified.

mod bucket;
mod cluster;
mod endpoints;
mod error;
mod limiter;
mod log;
mod marker;
mod raw;
mod script;
mod window;

pub use endpoints::{EndpointError, EndpointLimiter, RedisEndpoints};
pub use error::{Bound, FailureKind, RedisError, StoreError, Unrepresentable};
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub use limiter::AsyncRedis;
pub use limiter::{RedisLimiter, Scripted};
pub use marker::{MARKER_TTL, MARKER_TTL_SERVER};
pub use script::{CALLER_TTL, CLIENT_COMMANDS, Part, SCRIPT_COMMANDS};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::{Client, Connection, ConnectionLike, IntoConnectionInfo};

use crate::rule::Decision;
use crate::time::Nanos;

/// Where the instant of a decision comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Now {
    /// The Redis server's clock (`TIME`, microsecond resolution), read inside the script:
    /// one clock for every process. Production mode.
    Server,
    /// An instant chosen by the caller, e.g. a [`FakeClock`](crate::FakeClock)'s: the
    /// same stream of instants gives the same decisions as in memory. Keys get only the
    /// safety TTL [`CALLER_TTL`].
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

/// A Redis server or a Redis Cluster (by URL), a key prefix and a pool of connections,
/// shared by the limiters built from it. Cheap to clone; clones share the pool.
///
/// URLs: `redis://[[user]:password@]host:port[/db]`, `rediss://…` (TLS, see
/// [`RedisStoreBuilder::root_certificate_pem`]) or
/// `redis+unix:///path/to.sock[?user=..&pass=..&db=..]`. A cluster is reached through
/// [`RedisStore::open_cluster`]. Credentials never appear in this type's `Debug` nor in
/// any error.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    target: Target,
    prefix: String,
    /// Idle connections; a broken one is dropped, never returned.
    pool: Mutex<Vec<Pooled>>,
    /// The URLs' passwords, only to scrub them from error texts.
    secrets: Vec<String>,
    /// [`RedisStoreBuilder::stop_after_failure`]: set, calls fail at once.
    stop_after_failure: bool,
    /// The first unknown-outcome failure, once `stop_after_failure` saw one.
    stopped: Mutex<Option<StoreError>>,
    /// The marker key (one server only): written at opening, renewed and checked by
    /// script calls (see `marker.rs`), so a call notices that the server lost the
    /// store's keys.
    marker: Option<String>,
    /// How many times a call found the marker gone ([`RedisStore::state_losses`]).
    losses: AtomicU64,
    /// [`RedisStore::exchanges`].
    exchanges: AtomicU64,
}

/// Where the store's connections go.
enum Target {
    Server(Client),
    Cluster(cluster::Seeds),
}

/// A connection of either kind.
enum Link {
    /// A unix socket or plain TCP: the store's own connection (survives `EINTR`).
    Raw(raw::Raw),
    /// TLS: redis-rs' connection.
    Server(Connection),
    Cluster(Box<cluster::Link>),
}

impl Link {
    fn as_dyn(&mut self) -> &mut dyn ConnectionLike {
        match self {
            Link::Raw(con) => con,
            Link::Server(con) => con,
            Link::Cluster(con) => con.as_mut(),
        }
    }

    /// The read and write timeout of its socket(s).
    fn set_timeout(&self, timeout: Duration) -> redis::RedisResult<()> {
        match self {
            Link::Raw(con) => con.set_timeout(timeout).map_err(Into::into),
            Link::Server(con) => con
                .set_read_timeout(Some(timeout))
                .and_then(|()| con.set_write_timeout(Some(timeout))),
            Link::Cluster(con) => con
                .set_read_timeout(Some(timeout))
                .and_then(|()| con.set_write_timeout(Some(timeout))),
        }
    }
}

struct Pooled {
    con: Link,
    /// The read/write timeout the socket currently has.
    timeout: Duration,
}

/// How to reach Redis when a URL is not enough: a cluster's seed nodes, a private CA
/// for TLS. Made by [`RedisStore::builder`]; its `Debug` shows no URL (a URL may hold
/// a password).
#[derive(Clone)]
pub struct RedisStoreBuilder {
    prefix: String,
    urls: Vec<String>,
    cluster: bool,
    root_certificate: Option<Vec<u8>>,
    stop_after_failure: bool,
}

impl RedisStore {
    /// Connects to the server at `url` once (so a wrong address or password is an error
    /// now, not at the first request) and uses `prefix` for every key. The prefix must
    /// not contain `{` or `}` (they would change the keys' Cluster hash tag). A
    /// `rediss://` URL trusts the operating system's CA certificates.
    pub fn open(url: &str, prefix: &str) -> Result<RedisStore, StoreError> {
        RedisStore::builder(prefix).server(url).open()
    }

    /// Connects to the Redis Cluster that `urls` (`redis://` or `rediss://` seed nodes,
    /// one is enough; one password for all) belong to, reads its slot map and links to
    /// every master once, as [`open`](RedisStore::open) does. Each decision goes to the
    /// master holding its key's slot; a `MOVED` or `ASK` (a slot migrating) is
    /// followed, never a timeout: a command is not resent after one.
    pub fn open_cluster<S: AsRef<str>>(urls: &[S], prefix: &str) -> Result<RedisStore, StoreError> {
        RedisStore::builder(prefix).cluster(urls).open()
    }

    /// A builder for a store with keys under `prefix`: a server or a cluster, and TLS
    /// options a URL cannot carry.
    pub fn builder(prefix: &str) -> RedisStoreBuilder {
        RedisStoreBuilder {
            prefix: prefix.to_owned(),
            urls: Vec::new(),
            cluster: false,
            root_certificate: None,
            stop_after_failure: false,
        }
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// Whether the store talks to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.inner.target, Target::Cluster(_))
    }

    /// Runs `f` on a pooled connection (opened if none is idle) with `timeout` on its
    /// socket(s); on a cluster, `f`'s commands are routed by their keys' slot. The
    /// connection goes back to the pool unless the error says the link is broken or its
    /// state unknown (I/O, timeout, authentication): a reply that may still arrive must
    /// never be read as the answer to the next command.
    ///
    /// Nothing is ever resent, not even on a connection found closed: the command may
    /// have reached the server before the link broke (a `CLIENT KILL`, a restart
    /// between the script and its reply), and a resend would consume twice. Such a
    /// failure is an unknown outcome, answered by the limiter's failure policy; the
    /// next call opens a fresh connection.
    fn with_connection<T>(
        &self,
        timeout: Duration,
        f: impl Fn(&mut dyn ConnectionLike) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        if let Some(first) = self.stopped() {
            return Err(first);
        }
        self.inner.exchanges.fetch_add(1, Ordering::Relaxed);
        let result = self.cleanup_connection(timeout, f);
        if let Err(e) = &result
            && self.inner.stop_after_failure
            && matches!(
                e.kind(),
                FailureKind::Timeout | FailureKind::Connection | FailureKind::StateLost
            )
        {
            let mut stopped = self
                .inner
                .stopped
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            stopped.get_or_insert_with(|| e.clone());
        }
        result
    }

    /// How many exchanges with Redis this store's blocking calls have begun: one per
    /// decision, peek, or pipeline of several (the simulator's decisions of different
    /// clients, an eviction sweep), counted whether or not it succeeded. Connecting,
    /// authenticating and loading a script are not counted.
    pub fn exchanges(&self) -> u64 {
        self.inner.exchanges.load(Ordering::Relaxed)
    }

    /// Why every call fails at once: the first unknown-outcome failure of a store built
    /// with [`RedisStoreBuilder::stop_after_failure`], or [`RedisStore::stop`].
    pub fn stopped(&self) -> Option<StoreError> {
        self.inner
            .stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Makes every later call of this store and its limiters fail at once (a
    /// `FailureKind::Connection` error saying so), e.g. before removing a run's keys on
    /// an interrupt, so no decision writes a key after they are removed.
    /// [`RedisStore::remove_all`] still runs. A call already sent is not stopped.
    pub fn stop(&self) {
        let mut stopped = self
            .inner
            .stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        stopped.get_or_insert_with(|| {
            StoreError::new(FailureKind::Connection, "the store was stopped".into())
        });
    }

    /// [`with_connection`](Self::with_connection) even for a stopped store: cleanup.
    fn cleanup_connection<T>(
        &self,
        timeout: Duration,
        f: impl Fn(&mut dyn ConnectionLike) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let idle = self
            .inner
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        self.run(idle, timeout, &f)
    }

    /// One attempt.
    fn run<T>(
        &self,
        idle: Option<Pooled>,
        timeout: Duration,
        f: &impl Fn(&mut dyn ConnectionLike) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let mut pooled = match idle {
            Some(p) => p,
            None => Pooled {
                con: self.connect(timeout).map_err(|e| self.error(&e))?,
                timeout: Duration::ZERO,
            },
        };
        if pooled.timeout != timeout {
            pooled
                .con
                .set_timeout(timeout)
                .map_err(|e| self.error(&e))?;
            pooled.timeout = timeout;
        }
        match f(pooled.con.as_dyn()) {
            Ok(value) => {
                self.give_back(pooled);
                Ok(value)
            }
            Err(e) => {
                let error = self.error(&e);
                if error.kind() == FailureKind::Server {
                    self.give_back(pooled);
                }
                Err(error)
            }
        }
    }

    fn connect(&self, timeout: Duration) -> redis::RedisResult<Link> {
        match &self.inner.target {
            Target::Server(client) => {
                match raw::Raw::connect(client.get_connection_info(), timeout) {
                    Some(raw) => raw.map(Link::Raw),
                    None => client
                        .get_connection_with_timeout(timeout)
                        .map(Link::Server),
                }
            }
            Target::Cluster(seeds) => seeds
                .connect(timeout)
                .map(|con| Link::Cluster(Box::new(con))),
        }
    }

    fn error(&self, e: &redis::RedisError) -> StoreError {
        StoreError::from_redis(e, &self.inner.secrets)
    }

    fn give_back(&self, pooled: Pooled) {
        self.inner
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(pooled);
    }
}

impl RedisStoreBuilder {
    /// One server, at `url` (replaces any URL given before).
    pub fn server(self, url: &str) -> RedisStoreBuilder {
        RedisStoreBuilder {
            urls: vec![url.to_owned()],
            cluster: false,
            ..self
        }
    }

    /// A Redis Cluster, reached through the seed nodes `urls` (replaces any URL given
    /// before).
    pub fn cluster<S: AsRef<str>>(self, urls: &[S]) -> RedisStoreBuilder {
        RedisStoreBuilder {
            urls: urls.iter().map(|u| u.as_ref().to_owned()).collect(),
            cluster: true,
            ..self
        }
    }

    /// For `rediss://` URLs: trust the CA certificate(s) in `pem` (PEM text) instead of
    /// the operating system's, e.g. a private CA. Server names are still verified.
    pub fn root_certificate_pem(self, pem: impl Into<Vec<u8>>) -> RedisStoreBuilder {
        RedisStoreBuilder {
            root_certificate: Some(pem.into()),
            ..self
        }
    }

    /// After the first failure whose outcome is unknown (a timeout, a broken
    /// connection), every later call of the store and its limiters fails at once with
    /// that error, without waiting ([`RedisStore::stopped`] returns it);
    /// [`RedisStore::remove_all`] still runs. For a batch job that stops at its first
    /// failure anyway (the simulator): a stalled server then costs one timeout, not one
    /// per thread or per step. A request path wants the default (off): each call tries.
    pub fn stop_after_failure(self) -> RedisStoreBuilder {
        RedisStoreBuilder {
            stop_after_failure: true,
            ..self
        }
    }

    /// Connects once (a wrong address, password or certificate is an error now) and
    /// returns the store.
    pub fn open(self) -> Result<RedisStore, StoreError> {
        let invalid = |detail: String| StoreError::new(FailureKind::InvalidConfig, detail);
        if self.prefix.contains(['{', '}']) {
            return Err(invalid(format!(
                "the key prefix {:?} contains a brace; it would break the hash tag",
                self.prefix
            )));
        }
        if self.urls.is_empty() {
            return Err(invalid("no Redis URL given".into()));
        }
        let mut infos = Vec::new();
        for url in &self.urls {
            infos.push(url.as_str().into_connection_info().map_err(|_| {
                invalid(
                    "not a valid Redis URL (redis://host:port, rediss://host:port or \
                     redis+unix:///path)"
                        .into(),
                )
            })?);
        }
        let mut secrets: Vec<String> = infos
            .iter()
            .filter_map(|i| i.redis_settings().password())
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        // Longest first, so a password holding another one is blanked whole.
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        let tls = infos
            .iter()
            .any(|i| matches!(i.addr(), redis::ConnectionAddr::TcpTls { .. }));
        let certs = match self.root_certificate {
            Some(_) if !tls => {
                return Err(invalid(
                    "a root certificate was given for a URL without TLS (use rediss://)".into(),
                ));
            }
            Some(pem) => Some(redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(pem),
            }),
            None => None,
        };
        if tls {
            use_ring_provider();
        }
        let scrub = |e: redis::RedisError| StoreError::from_redis(&e, &secrets);
        let target = if self.cluster {
            let seeds = cluster::Seeds::new(infos, certs);
            seeds.check().map_err(scrub)?;
            Target::Cluster(seeds)
        } else {
            let [info] = <[_; 1]>::try_from(infos)
                .map_err(|_| invalid("a single server takes one URL".into()))?;
            let client = match certs {
                Some(certs) => Client::build_with_tls(info, certs),
                None => Client::open(info),
            };
            Target::Server(client.map_err(scrub)?)
        };
        let marker = match target {
            Target::Server(_) => Some(marker::marker_key(&self.prefix)),
            Target::Cluster(_) => None,
        };
        let store = RedisStore {
            inner: Arc::new(Inner {
                target,
                prefix: self.prefix,
                pool: Mutex::new(Vec::new()),
                secrets,
                stop_after_failure: self.stop_after_failure,
                stopped: Mutex::new(None),
                marker,
                losses: AtomicU64::new(0),
                exchanges: AtomicU64::new(0),
            }),
        };
        store.with_connection(OPEN_TIMEOUT, |con| {
            redis::cmd("PING").query::<String>(con).map(drop)
        })?;
        store.mark()?;
        Ok(store)
    }
}

/// redis-rs builds its TLS configuration with rustls' process-wide crypto provider,
/// and rustls panics when it cannot tell which one that is (two providers compiled in,
/// none installed). Installing `ring` when none is installed yet removes that panic;
/// a provider the application installed first is kept.
fn use_ring_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err only when another thread installed one meanwhile: that one is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct("RedisStore");
        match &self.inner.target {
            Target::Server(client) => {
                s.field("addr", &client.get_connection_info().addr().to_string())
            }
            Target::Cluster(seeds) => s.field("cluster", &seeds.addrs()),
        };
        s.field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for RedisStoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStoreBuilder")
            .field("prefix", &self.prefix)
            .field("urls", &self.urls.len())
            .field("cluster", &self.cluster)
            .field("root_certificate", &self.root_certificate.is_some())
            .field("stop_after_failure", &self.stop_after_failure)
            .finish()
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
