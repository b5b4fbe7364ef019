//! The bucket family on Redis: one script (`lua/bucket.lua`) for the token bucket
//! (levels fill up) and for the leaky bucket and GCRA (levels drain down; GCRA's scaled
//! `TAT − t` is the leaky bucket's water, so it is the same arithmetic).

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

use super::error::{Bound, ELAPSED_MAX, EXACT_LIMIT};
use super::{DEFAULT_TIMEOUT, FailurePolicy, Now, RedisError, RedisStore, Unrepresentable};
use crate::algorithm::{Algorithm, Gcra, LeakyBucket, TokenBucket};
use crate::limiter::InsufficientCapacity;
use crate::rule::{Decision, Rule};
use crate::time::{NANOS_PER_SEC, Nanos};

/// The script, hashed once; `EVALSHA` by that hash, `SCRIPT LOAD` on `NOSCRIPT`.
static BUCKET: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/bucket.lua")));

/// Which way a bucket's level moves with time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Tokens refill up to the capacity (token bucket).
    Fill,
    /// Water (or GCRA's scaled lead over the clock) drains down to zero.
    Drain,
}

/// The algorithms the Redis store has a script for. Sealed: the script is a second copy
/// of the algorithm's arithmetic, so only the built-ins it mirrors implement it.
pub trait Scripted: Algorithm + sealed::Sealed {
    /// The registry name (also part of every key).
    fn script_name(&self) -> &'static str;
    /// Which way the level moves.
    fn direction(&self) -> Direction;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::TokenBucket {}
    impl Sealed for crate::LeakyBucket {}
    impl Sealed for crate::Gcra {}
}

impl Scripted for TokenBucket {
    fn script_name(&self) -> &'static str {
        "token_bucket"
    }
    fn direction(&self) -> Direction {
        Direction::Fill
    }
}

impl Scripted for LeakyBucket {
    fn script_name(&self) -> &'static str {
        "leaky_bucket"
    }
    fn direction(&self) -> Direction {
        Direction::Drain
    }
}

impl Scripted for Gcra {
    fn script_name(&self) -> &'static str {
        "gcra"
    }
    fn direction(&self) -> Direction {
        Direction::Drain
    }
}

/// One rule of the bucket family applied to many keys whose states live in Redis.
/// Built by [`RedisStore::limiter`]; cheap to clone.
#[derive(Debug, Clone)]
pub struct RedisLimiter {
    store: RedisStore,
    algorithm: &'static str,
    rule: Rule,
    direction: Direction,
    /// `max_requests / g` and `window / g`, `g = gcd(window, max_requests)`.
    max: u64,
    unit: u64,
    /// Hex hash of the algorithm and rule, part of every key.
    fingerprint: String,
    policy: FailurePolicy,
    timeout: Duration,
}

impl RedisLimiter {
    pub(super) fn new<A: Scripted>(
        store: RedisStore,
        algorithm: &A,
    ) -> Result<RedisLimiter, Unrepresentable> {
        let rule = *algorithm.rule();
        let name = algorithm.script_name();
        let (max, unit) = scaled(&rule);
        if let Some(bound) = broken_bound(&rule) {
            return Err(Unrepresentable {
                algorithm: name,
                rule,
                bound,
            });
        }
        let fingerprint = format!(
            "{:016x}",
            fnv1a(
                format!(
                    "{name}/{}/{}/{}",
                    rule.max_requests(),
                    rule.window().as_u64(),
                    rule.burst()
                )
                .as_bytes()
            )
        );
        Ok(RedisLimiter {
            store,
            algorithm: name,
            rule,
            direction: algorithm.direction(),
            // Both fit: the bound keeps them below 2^53.
            max: max as u64,
            unit: unit as u64,
            fingerprint,
            policy: FailurePolicy::Closed,
            timeout: DEFAULT_TIMEOUT,
        })
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

    /// The rule enforced.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// The algorithm's registry name.
    pub fn algorithm(&self) -> &'static str {
        self.algorithm
    }

    /// The largest cost that can pass (the burst).
    pub fn capacity(&self) -> u64 {
        self.rule.burst()
    }

    /// The Redis key holding `key`'s state in the time mode of `now`:
    /// `<prefix>:{<hash of key>}:<key>:<rule hash>:<s|c>`.
    pub fn redis_key(&self, key: &str, now: Now) -> String {
        let mode = match now {
            Now::Server => 's',
            Now::Caller(_) => 'c',
        };
        format!(
            "{}:{{{:016x}}}:{key}:{}:{mode}",
            self.store.prefix(),
            fnv1a(key.as_bytes()),
            self.fingerprint
        )
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
        let redis_key = self.redis_key(key, now);
        let mut call = BUCKET.key(redis_key);
        call.arg(self.max)
            .arg(self.unit)
            .arg(self.rule.burst())
            .arg(cost);
        match now {
            Now::Server => call.arg("").arg(""),
            Now::Caller(at) => call
                .arg(at.as_u64() / NANOS_PER_SEC)
                .arg(at.as_u64() % NANOS_PER_SEC),
        };
        call.arg(match self.direction {
            Direction::Fill => "fill",
            Direction::Drain => "drain",
        });
        call.arg(match now {
            Now::Server => "abs",
            Now::Caller(_) => "none",
        });
        let reply = self
            .store
            .with_connection(self.timeout, |con| call.invoke::<[i64; 8]>(con))
            .map_err(|error| RedisError::Unavailable {
                error,
                policy: self.policy,
                fallback: self.policy.decision(self.interval()),
            })?;
        Ok(decode(reply))
    }

    /// `⌈W / max⌉`: the time one permit takes to come back.
    fn interval(&self) -> Nanos {
        Nanos::new(
            self.rule
                .window()
                .as_u64()
                .div_ceil(self.rule.max_requests()),
        )
    }
}

/// The script's reply as a decision. Waits come measured from the clamped instant
/// `(ts, tn)`; the caller's instant `(s, n)` may be earlier (a backwards clock), and the
/// difference is added here in `u128`, saturating to `u64` as the in-memory code does.
fn decode([allowed, remaining, retry, reset, ts, tn, s, n]: [i64; 8]) -> Decision {
    let at = |s: i64, n: i64| u128::from(s as u64) * u128::from(NANOS_PER_SEC) + n as u128;
    let back = at(ts, tn).saturating_sub(at(s, n));
    let wait = |w: i64| match u64::try_from(w) {
        Ok(w) => Nanos::saturating_from_u128(back + u128::from(w)),
        Err(_) => Nanos::MAX, // -1: can never pass (not sent: refused before)
    };
    let allowed = allowed == 1;
    Decision {
        allowed,
        remaining: remaining as u64,
        retry_after: if allowed { Nanos::ZERO } else { wait(retry) },
        reset_after: wait(reset),
    }
}

/// `(max / g, W / g)` with `g = gcd(W, max)`.
fn scaled(rule: &Rule) -> (u128, u128) {
    let (max, w) = (rule.max_requests(), rule.window().as_u64());
    let g = gcd(max, w);
    (u128::from(max / g), u128::from(w / g))
}

/// The first bound `rule` breaks, if any (see `lua/bucket.lua`).
fn broken_bound(rule: &Rule) -> Option<Bound> {
    let (max, unit) = scaled(rule);
    let cap = u128::from(rule.burst()) * unit;
    let value = cap + max.max(unit);
    if value > EXACT_LIMIT {
        return Some(Bound::Exact { value });
    }
    let value = cap.div_ceil(max);
    if value > ELAPSED_MAX {
        return Some(Bound::RefillTime { value });
    }
    None
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// FNV-1a, 64 bits: stable across processes, builds and versions, unlike the
/// limiter's per-instance seeded hasher. Keys only need it to spread, not to resist.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(max: u64, w: u64, burst: u64) -> Rule {
        Rule::new(max, Nanos::new(w))
            .unwrap()
            .with_burst(burst)
            .unwrap()
    }

    #[test]
    fn bounds_divide_by_the_gcd_first() {
        // 5000/h burst 5000: g = 5000, so cap' = 5000 · 7.2e8 = 3.6e12.
        assert_eq!(broken_bound(&rule(5000, 3_600_000_000_000, 5000)), None);
        // 7/h burst 10^4: g = 1, cap = 3.6e16 > 2^53.
        assert!(matches!(
            broken_bound(&rule(7, 3_600_000_000_000, 10_000)),
            Some(Bound::Exact { .. })
        ));
    }

    #[test]
    fn the_largest_exact_rule_passes_and_one_more_token_does_not() {
        // W = 1 ns, max = 2^20: burst + 2^20 ≤ 2^53.
        let largest = (1 << 53) - (1 << 20);
        assert_eq!(broken_bound(&rule(1 << 20, 1, largest)), None);
        assert_eq!(
            broken_bound(&rule(1 << 20, 1, largest + 1)),
            Some(Bound::Exact {
                value: EXACT_LIMIT + 1
            })
        );
        // max = 1, W = 1: the refill time bites first: burst ≤ ELAPSED_MAX.
        let longest = ELAPSED_MAX as u64;
        assert_eq!(broken_bound(&rule(1, 1, longest)), None);
        assert_eq!(
            broken_bound(&rule(1, 1, longest + 1)),
            Some(Bound::RefillTime {
                value: ELAPSED_MAX + 1
            })
        );
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
