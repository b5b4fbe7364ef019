//! # ratesim
//!
//! Exact rate-limiting algorithms, a thread-safe keyed limiter, and a discrete-event
//! simulator that compares the algorithms on identical traffic.
//!
//! Six policies — token bucket, leaky bucket (as a meter), fixed window, sliding window
//! log, sliding window counter and GCRA — are *stateless* [`Algorithm`]s over a small
//! per-key state. Time is integer nanoseconds ([`Nanos`]) and every decision is integer
//! arithmetic, so boundaries are exact: a request at exactly `k·W` is in window `k`, and
//! a token bucket allowing 1 request per 10 s grants the next one at exactly 10 s.
//!
//! [`RateLimiter`] owns the key → state map, the locking, the clock and idle-key
//! eviction; [`Middleware`] maps endpoints to limiters.
//!
//! ```
//! use ratesim::{FakeClock, Nanos, RateLimiter, Registry, Rule};
//!
//! // 5 requests per 10 seconds, enforced by the exact sliding log.
//! let rule = Rule::new(5, Nanos::from_secs(10))?;
//! let algorithm = Registry::default().create("sliding_window_log", rule)?;
//! let clock = FakeClock::new(Nanos::ZERO);
//! let limiter = RateLimiter::with_clock(algorithm, clock.clone());
//!
//! for _ in 0..5 {
//!     assert!(limiter.try_acquire("user_1").allowed);
//! }
//! let denied = limiter.try_acquire("user_1");
//! assert!(!denied.allowed);
//! assert_eq!(denied.retry_after, Nanos::from_secs(10));
//! assert_eq!(denied.retry_after_secs(), 10); // the HTTP Retry-After header
//!
//! // At exactly 10 s the first request leaves the window and a new one passes.
//! clock.advance(Nanos::from_secs(10));
//! assert!(limiter.try_acquire("user_1").allowed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Cargo features
//!
//! The library proper — [`algorithm`], [`rule`], [`time`], [`limiter`], [`composite`],
//! [`registry`], [`middleware`] with its HTTP headers and [`store`] — needs only `hashbrown`,
//! `foldhash`, `quanta` and `thiserror`. Everything heavier is behind a feature:
//!
//! - **`cli`** (default): the `ratesim` binary and the simulator — the `sim`, `report`,
//!   `bundled` and `demo` modules, with clap, plotters and an embedded font,
//!   comfy-table, indicatif, csv, serde_json, rand, anyhow and ctrlc. Enables
//!   `toml-rules`.
//! - **`toml-rules`**: hot reload of [`Middleware`] rules from TOML
//!   (`Middleware::reload_str`, `Middleware::reload_file`, `RulesError`), with serde
//!   and toml.
//! - **`tower`**: `ratesim::tower`, a tower `Layer` for axum/hyper services deciding
//!   with a [`Middleware`]'s rules (tower's traits, `http`, `pin-project-lite`,
//!   `tokio`'s timer). With `redis` too, `ratesim::tower::RedisLimits` keeps the limits
//!   in Redis, asynchronously (redis-rs' tokio connection manager).
//!
//! A service that only wants the limiter depends on
//! `ratesim = { version = "0.1", default-features = false }`, adding
//! `features = ["toml-rules"]` for hot reload.

#![warn(missing_docs)]
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod algorithm;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod bundled;
pub mod composite;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod demo;
pub mod dense;
#[cfg(any(feature = "cli", feature = "redis"))]
mod fnv;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod import;
pub mod limiter;
pub mod middleware;
mod prefetch;
pub mod presets;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
pub mod registry;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod report;
pub mod rule;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod sim;
pub mod store;
mod sync;
pub mod time;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

pub use algorithm::Outcome;
pub use algorithm::{
    Algorithm, BoxedAlgorithm, FixedWindow, Gcra, LeakyBucket, SlidingWindowCounter,
    SlidingWindowLog, TokenBucket,
};
pub use composite::{Composite, CompositeDecision, EmptyComposite};
pub use dense::DenseLimiter;
pub use limiter::{InsufficientCapacity, RateLimiter};
#[cfg(feature = "toml-rules")]
pub use middleware::RulesError;
pub use middleware::{EndpointRule, HttpDecision, Middleware};
pub use registry::{Builtin, Registry, UnknownAlgorithm};
pub use rule::{Decision, Rule, RuleError, UNLIMITED};
pub use store::{InMemory, KeyedLimiter, Store};
pub use time::{Clock, FakeClock, MonotonicClock, Nanos, ParseTimeError};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
