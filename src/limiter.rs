//! The keyed, thread-safe [`RateLimiter`]: owns the key → state map, the locking, the
//! clock and idle-key eviction. The algorithm it drives stays pure math.
//!
//! ## Locking protocol (the seed's, with the map sharded)
//! - A *shard lock* guards one part of the key → entry map and is held for a lookup or
//!   insert only. Keys hash to shards, so requests for different keys rarely contend.
//! - Each key has its own *entry lock*, held around the whole check-and-consume, so
//!   "is there a permit? take it" is atomic per key. The clock is read under it, so a
//!   key's instants never go backwards between two callers.
//! - [`RateLimiter::evict_idle`] and [`RateLimiter::reset`] mark the entries they remove
//!   `evicted`. A request that looked an entry up before its removal sees the flag under
//!   the entry lock and retries on the fresh entry, so eviction never grants a free
//!   request.
//! - Lock order is shard → entry. The request path never holds both; eviction holds the
//!   shard lock and only *try*-locks entries, so nothing can deadlock.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};

use crate::algorithm::Algorithm;
use crate::rule::Decision;
use crate::sync::{Arc, Mutex, TryLockError, lock};
use crate::time::{Clock, MonotonicClock, Nanos};

/// More shards than cores so two threads rarely meet on one; a power of two.
const SHARDS: usize = 64;

/// A request whose cost exceeds the capacity: it can never pass, however long it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a request of cost {cost} can never pass: the capacity is {capacity}")]
pub struct InsufficientCapacity {
    /// The cost asked for.
    pub cost: u64,
    /// The most any single request can take.
    pub capacity: u64,
}

struct Slot<S> {
    state: S,
    /// Set when the entry left the map; a holder of a stale handle must retry.
    evicted: bool,
}

type Entry<S> = Arc<Mutex<Slot<S>>>;
type Shard<K, S> = Mutex<HashMap<K, Entry<S>>>;

/// Applies one [`Algorithm`] to many keys, with per-key locking.
///
/// ```
/// use ratesim::{FakeClock, Nanos, RateLimiter, Rule, TokenBucket};
/// let clock = FakeClock::new(Nanos::ZERO);
/// let rule = Rule::new(2, Nanos::from_secs(1))?;
/// let limiter = RateLimiter::with_clock(TokenBucket::new(rule), clock.clone());
/// assert!(limiter.try_acquire("alice").allowed);
/// assert!(limiter.try_acquire("alice").allowed);
/// let denied = limiter.try_acquire("alice");
/// assert!(!denied.allowed);
/// assert_eq!(denied.retry_after, Nanos::from_millis(500));
/// assert!(limiter.try_acquire("bob").allowed, "keys are independent");
/// clock.advance(denied.retry_after);
/// assert!(limiter.try_acquire("alice").allowed);
/// # Ok::<(), ratesim::RuleError>(())
/// ```
pub struct RateLimiter<A: Algorithm, K = String, C = MonotonicClock> {
    algorithm: A,
    clock: C,
    hasher: RandomState,
    shards: Box<[Shard<K, A::State>]>,
}

impl<A: Algorithm, K: Hash + Eq> RateLimiter<A, K, MonotonicClock> {
    /// A limiter on the real monotonic clock.
    pub fn new(algorithm: A) -> Self {
        RateLimiter::with_clock(algorithm, MonotonicClock::new())
    }
}

impl<A: Algorithm, K: Hash + Eq, C: Clock> RateLimiter<A, K, C> {
    /// A limiter reading time from `clock` (a [`FakeClock`](crate::FakeClock) in tests
    /// and the simulator).
    pub fn with_clock(algorithm: A, clock: C) -> Self {
        RateLimiter {
            algorithm,
            clock,
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    /// The policy this limiter applies.
    pub fn algorithm(&self) -> &A {
        &self.algorithm
    }

    /// The clock this limiter reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Checks and consumes one permit for `key`.
    pub fn try_acquire<Q>(&self, key: &Q) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        // The capacity is at least 1, so cost 1 always fits.
        self.decide(key, 1, || {})
    }

    /// Checks and consumes `cost` permits for `key` in one step.
    ///
    /// A cost larger than the capacity can never pass; that is an error rather than a
    /// denial, so a caller cannot wait for it forever. Cost 0 always passes.
    pub fn try_acquire_n<Q>(&self, key: &Q, cost: u64) -> Result<Decision, InsufficientCapacity>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let capacity = self.algorithm.capacity();
        if cost > capacity {
            return Err(InsufficientCapacity { cost, capacity });
        }
        Ok(self.decide(key, cost, || {}))
    }

    /// Shorthand for `try_acquire(key).allowed`.
    pub fn allow<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.try_acquire(key).allowed
    }

    /// The decision a request of cost 1 would get now, without consuming anything.
    /// An unknown key is answered from a fresh state and is *not* added to the map.
    pub fn peek<Q>(&self, key: &Q) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        loop {
            let entry = lock(self.shard(key)).get(key).cloned();
            let Some(entry) = entry else {
                let now = self.clock.now();
                return self.status(&self.algorithm.new_state(now), now);
            };
            let slot = lock(&entry);
            if !slot.evicted {
                return self.status(&slot.state, self.clock.now());
            }
        }
    }

    /// A copy of `key`'s current state, or `None` if the key is not held.
    ///
    /// For simulators and diagnostics: probing the copy (calling the algorithm on it at
    /// later instants) answers "when would this request really pass?" without touching
    /// the live state.
    pub fn snapshot<Q>(&self, key: &Q) -> Option<A::State>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        loop {
            let entry = lock(self.shard(key)).get(key).cloned()?;
            let slot = lock(&entry);
            if !slot.evicted {
                return Some(slot.state.clone());
            }
        }
    }

    /// Forgets `key`: its next request starts from a fresh state.
    pub fn reset<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let removed = lock(self.shard(key)).remove(key);
        if let Some(entry) = removed {
            lock(&entry).evicted = true;
        }
    }

    /// Drops every key whose state is indistinguishable from a fresh one, and returns
    /// how many. Run it periodically (a janitor thread) to bound memory to the recently
    /// active keys. Entries in use right now are skipped: they are not idle.
    pub fn evict_idle(&self) -> usize {
        let mut removed = 0;
        for shard in self.shards.iter() {
            lock(shard).retain(|_, entry| {
                let mut slot = match entry.try_lock() {
                    Ok(slot) => slot,
                    Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                    Err(TryLockError::WouldBlock) => return true,
                };
                if self.algorithm.is_idle(&slot.state, self.clock.now()) {
                    slot.evicted = true;
                    removed += 1;
                    return false;
                }
                true
            });
        }
        removed
    }

    /// The number of keys held.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).len()).sum()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard<Q: Hash + ?Sized>(&self, key: &Q) -> &Shard<K, A::State> {
        let index = self.hasher.hash_one(key) as usize % SHARDS;
        &self.shards[index]
    }

    /// The whole request path. `between_lookup_and_lock` runs where a concurrent
    /// `evict_idle` could strike; it is empty except in the test that forces that race.
    fn decide<Q>(&self, key: &Q, cost: u64, mut between_lookup_and_lock: impl FnMut()) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let algo = &self.algorithm;
        loop {
            let entry = self.entry(key);
            between_lookup_and_lock();
            let mut slot = lock(&entry);
            if slot.evicted {
                continue; // lost a race with evict_idle or reset: use the fresh entry
            }
            let now = self.clock.now(); // under the key lock: per-key time is monotonic
            let allowed = algo.try_acquire(&mut slot.state, now, cost);
            let retry_after = if allowed {
                Nanos::ZERO
            } else {
                algo.retry_after(&slot.state, now, cost)
                    .unwrap_or(Nanos::MAX)
            };
            return Decision {
                allowed,
                remaining: algo.remaining(&slot.state, now),
                retry_after,
                reset_after: algo.reset_after(&slot.state, now),
            };
        }
    }

    /// The entry for `key`, created fresh if absent. Holds the shard lock only for the
    /// lookup or insert.
    fn entry<Q>(&self, key: &Q) -> Entry<A::State>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let mut map = lock(self.shard(key));
        if let Some(entry) = map.get(key) {
            return entry.clone();
        }
        let slot = Slot {
            state: self.algorithm.new_state(self.clock.now()),
            evicted: false,
        };
        let entry = Arc::new(Mutex::new(slot));
        map.insert(key.to_owned(), entry.clone());
        entry
    }

    fn status(&self, state: &A::State, now: Nanos) -> Decision {
        let algo = &self.algorithm;
        let retry_after = algo.retry_after(state, now, 1).unwrap_or(Nanos::MAX);
        Decision {
            allowed: retry_after == Nanos::ZERO,
            remaining: algo.remaining(state, now),
            retry_after,
            reset_after: algo.reset_after(state, now),
        }
    }
}

impl<A: Algorithm + std::fmt::Debug, K, C> std::fmt::Debug for RateLimiter<A, K, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::algorithm::FixedWindow;
    use crate::rule::Rule;
    use crate::time::FakeClock;

    fn one_per_10s() -> RateLimiter<FixedWindow, String, FakeClock> {
        let rule = Rule::new(1, Nanos::from_secs(10)).unwrap();
        RateLimiter::with_clock(FixedWindow::new(rule), FakeClock::default())
    }

    #[test]
    fn eviction_between_lookup_and_lock_grants_no_free_request() {
        let limiter = one_per_10s();
        // Request A looks the (fresh, idle) entry up; before it takes the key lock the
        // janitor evicts that entry. A must notice and retry on a new entry.
        let mut evicted = 0;
        let first = limiter.decide("k", 1, || {
            if evicted == 0 {
                evicted = limiter.evict_idle();
            }
        });
        assert_eq!(evicted, 1, "the janitor did evict A's entry mid-request");
        assert!(first.allowed);
        assert_eq!(
            limiter.len(),
            1,
            "A's permit lives in the map, not in a lost entry"
        );
        let second = limiter.try_acquire("k");
        assert!(
            !second.allowed,
            "a second request in the same window got a free permit"
        );
    }

    #[test]
    fn reset_between_lookup_and_lock_is_retried_on_the_fresh_entry() {
        let limiter = one_per_10s();
        assert!(limiter.try_acquire("k").allowed);
        let mut reset_done = false;
        let d = limiter.decide("k", 1, || {
            if !reset_done {
                limiter.reset("k");
                reset_done = true;
            }
        });
        assert!(d.allowed, "after a reset the key starts fresh");
        assert!(!limiter.try_acquire("k").allowed);
    }

    #[test]
    fn peek_does_not_create_keys_or_consume() {
        let limiter = one_per_10s();
        let d = limiter.peek("ghost");
        assert!(d.allowed);
        assert_eq!(d.remaining, 1);
        assert_eq!(limiter.len(), 0);
        assert!(limiter.try_acquire("ghost").allowed);
        let after = limiter.peek("ghost");
        assert!(!after.allowed);
        assert_eq!(after.retry_after, Nanos::from_secs(10));
    }
}
