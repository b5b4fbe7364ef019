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

#![warn(missing_docs)]

pub mod algorithm;
pub mod bundled;
pub mod composite;
pub mod demo;
pub mod limiter;
pub mod middleware;
pub mod registry;
pub mod report;
pub mod rule;
pub mod sim;
mod sync;
pub mod time;

pub use algorithm::{
    Algorithm, BoxedAlgorithm, FixedWindow, Gcra, LeakyBucket, SlidingWindowCounter,
    SlidingWindowLog, TokenBucket,
};
pub use composite::{Composite, CompositeDecision, EmptyComposite};
pub use limiter::{InsufficientCapacity, RateLimiter};
pub use middleware::{EndpointRule, HttpDecision, Middleware, RulesError};
pub use registry::{Builtin, Registry, UnknownAlgorithm};
pub use rule::{Decision, Rule, RuleError, UNLIMITED};
pub use time::{Clock, FakeClock, MonotonicClock, Nanos, ParseTimeError};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
