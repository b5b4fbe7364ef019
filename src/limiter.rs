//! The keyed, thread-safe [`RateLimiter`]: owns the key → state map, the locking, the
//! clock and idle-key eviction. The algorithm it drives stays pure math.
//!
//! ## Locking protocol: lock striping
//! The key → state map is split into shards by a hash of the key; each shard is one
//! hash table behind one mutex, and a key's state lives *inside* its shard's table.
//! - A request hashes its key once, locks that key's shard, reads the clock, looks the
//!   state up (or inserts a fresh one) and checks-and-consumes — all in one critical
//!   section. So "is there a permit? take it" is atomic per key, a key's instants never
//!   go backwards between two callers, and the seed's lookup-then-lock race with
//!   eviction cannot happen: there is no moment between finding a state and using it.
//! - Keys in different shards never contend. Two keys in the same shard serialise for
//!   the few nanoseconds of integer math a decision takes; with more shards than cores
//!   that is rare, and it buys a design with no per-key allocation, no reference
//!   counting and one lock per request instead of two (see the performance notes in
//!   the README).
//! - [`RateLimiter::evict_idle`] and [`RateLimiter::reset`] take the same shard locks,
//!   one shard at a time, so they never hold two locks and cannot deadlock.
//!
//! The seed's design (a map lock for get-or-create plus a lock per key, with an
//! `evicted` flag to catch a request that raced the janitor) gives the same guarantees
//! with more moving parts; the loom models in `tests/loom.rs` check this one, including
//! a broken variant that splits the critical section.
//!
//! ## Storage: packed states
//! Each shard's table holds `(key, state)` slots. When the algorithm
//! [packs](Algorithm::packs) for its rule (the bucket family and GCRA whenever
//! `burst × window` fits in a `u64`), a slot holds the state packed into two words, and
//! a request unpacks it into the algorithm's own `State`, decides, and packs it back —
//! 16 bytes a key instead of 24, with the algorithm's math unchanged. The choice is
//! made once, at construction; a rule too large to pack keeps the `u128` state.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use crate::algorithm::{Algorithm, Packed};
use crate::rule::Decision;
use crate::sync::{Mutex, lock};
use crate::time::{Clock, MonotonicClock, Nanos};

/// More shards than cores so two threads rarely meet on one. Under loom two shards
/// keep the model's state space small while still exercising the shard lock.
const SHARDS: usize = if cfg!(loom) { 2 } else { 64 };

/// Keys are hashed with foldhash, seeded randomly per limiter: several times faster
/// than SipHash on short keys, and the per-instance seed keeps a client from choosing
/// keys that all collide.
type KeyHasher = foldhash::fast::RandomState;

/// A request whose cost exceeds the capacity: it can never pass, however long it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a request of cost {cost} can never pass: the capacity is {capacity}")]
pub struct InsufficientCapacity {
    /// The cost asked for.
    pub cost: u64,
    /// The most any single request can take.
    pub capacity: u64,
}

/// One shard: a hash table of `(key, state)`, padded to its own cache line so two
/// shards' locks never share one.
#[repr(align(64))]
struct Shard<K, S>(Mutex<Table<K, S>>);

/// A shard's hash table. Its form is chosen once, at construction, from
/// [`Algorithm::packs`]: when every state the algorithm can produce fits in two words,
/// the states are stored packed (a bucket's or GCRA's 24-byte state in 16), otherwise
/// as the algorithm keeps them. Either way the algorithm's math sees its own `State`.
enum Table<K, S> {
    Plain(HashTable<(K, Plain<S>)>),
    Packed(HashTable<(K, Words)>),
}

/// A state stored as the algorithm keeps it.
struct Plain<S>(S);

/// A state packed into two words by its algorithm.
struct Words(Packed);

/// How a table slot holds one key's state: lends the algorithm's `State` to a
/// closure, and stores back what the closure left.
trait Stored<A: Algorithm> {
    fn fresh(algorithm: &A, now: Nanos) -> Self;
    fn with<R>(&mut self, algorithm: &A, f: impl FnOnce(&mut A::State) -> R) -> R;
    fn read<R>(&self, algorithm: &A, f: impl FnOnce(&A::State) -> R) -> R;
}

impl<A: Algorithm> Stored<A> for Plain<A::State> {
    fn fresh(algorithm: &A, now: Nanos) -> Self {
        Plain(algorithm.new_state(now))
    }
    fn with<R>(&mut self, _: &A, f: impl FnOnce(&mut A::State) -> R) -> R {
        f(&mut self.0)
    }
    fn read<R>(&self, _: &A, f: impl FnOnce(&A::State) -> R) -> R {
        f(&self.0)
    }
}

impl<A: Algorithm> Stored<A> for Words {
    fn fresh(algorithm: &A, now: Nanos) -> Self {
        Words(algorithm.pack(&algorithm.new_state(now)))
    }
    fn with<R>(&mut self, algorithm: &A, f: impl FnOnce(&mut A::State) -> R) -> R {
        let mut state = algorithm.unpack(self.0);
        let result = f(&mut state);
        self.0 = algorithm.pack(&state);
        result
    }
    fn read<R>(&self, algorithm: &A, f: impl FnOnce(&A::State) -> R) -> R {
        f(&algorithm.unpack(self.0))
    }
}

impl<K: Hash, S> Table<K, S> {
    fn new<A: Algorithm<State = S>>(algorithm: &A) -> Self {
        if algorithm.packs() {
            Table::Packed(HashTable::new())
        } else {
            Table::Plain(HashTable::new())
        }
    }

    fn len(&self) -> usize {
        match self {
            Table::Plain(t) => t.len(),
            Table::Packed(t) => t.len(),
        }
    }

    /// Runs `f` on `key`'s state, inserted fresh at `now` if absent.
    fn with<A, Q, R>(
        &mut self,
        algorithm: &A,
        hasher: &KeyHasher,
        (hash, key): (u64, &Q),
        now: Nanos,
        f: impl FnOnce(&mut S) -> R,
    ) -> R
    where
        A: Algorithm<State = S>,
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        match self {
            Table::Plain(t) => {
                find_or_insert(algorithm, hasher, t, hash, key, now).with(algorithm, f)
            }
            Table::Packed(t) => {
                find_or_insert(algorithm, hasher, t, hash, key, now).with(algorithm, f)
            }
        }
    }

    /// Runs `f` on `key`'s state if the key is held; inserts nothing.
    fn read<A, Q, R>(
        &self,
        algorithm: &A,
        (hash, key): (u64, &Q),
        f: impl FnOnce(&S) -> R,
    ) -> Option<R>
    where
        A: Algorithm<State = S>,
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        match self {
            Table::Plain(t) => t
                .find(hash, |(k, _)| k.borrow() == key)
                .map(|(_, v)| v.read(algorithm, f)),
            Table::Packed(t) => t
                .find(hash, |(k, _)| k.borrow() == key)
                .map(|(_, v)| v.read(algorithm, f)),
        }
    }

    /// Runs `f` on `key`'s state in place if the key is held; inserts nothing.
    #[cfg(loom)]
    fn update<A, Q, R>(
        &mut self,
        algorithm: &A,
        (hash, key): (u64, &Q),
        f: impl FnOnce(&mut S) -> R,
    ) -> Option<R>
    where
        A: Algorithm<State = S>,
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        match self {
            Table::Plain(t) => t
                .find_mut(hash, |(k, _)| k.borrow() == key)
                .map(|(_, v)| v.with(algorithm, f)),
            Table::Packed(t) => t
                .find_mut(hash, |(k, _)| k.borrow() == key)
                .map(|(_, v)| v.with(algorithm, f)),
        }
    }

    /// Forgets `key`.
    fn remove<Q>(&mut self, (hash, key): (u64, &Q))
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        fn go<K: Borrow<Q>, Q: Eq + ?Sized, V>(t: &mut HashTable<(K, V)>, hash: u64, key: &Q) {
            if let Ok(entry) = t.find_entry(hash, |(k, _)| k.borrow() == key) {
                entry.remove();
            }
        }
        match self {
            Table::Plain(t) => go(t, hash, key),
            Table::Packed(t) => go(t, hash, key),
        }
    }

    /// Drops every idle state, shrinks a table left mostly empty, and returns how many
    /// keys it dropped.
    fn evict_idle<A: Algorithm<State = S>>(
        &mut self,
        algorithm: &A,
        hasher: &KeyHasher,
        now: Nanos,
    ) -> usize {
        fn go<A: Algorithm, K: Hash, V: Stored<A>>(
            algorithm: &A,
            hasher: &KeyHasher,
            table: &mut HashTable<(K, V)>,
            now: Nanos,
        ) -> usize {
            let before = table.len();
            table.retain(|(_, v)| !v.read(algorithm, |s| algorithm.is_idle(s, now)));
            let removed = before - table.len();
            if table.len() * 4 < table.capacity() {
                table.shrink_to_fit(|(k, _)| hasher.hash_one(k));
            }
            removed
        }
        match self {
            Table::Plain(t) => go(algorithm, hasher, t, now),
            Table::Packed(t) => go(algorithm, hasher, t, now),
        }
    }
}

/// Applies one [`Algorithm`] to many keys, with per-shard locking.
///
/// The key type `K` is stored in the map as it is. For many string keys, a key type
/// that holds short strings inline (such as `compact_str::CompactString`, up to 24
/// bytes) saves the heap string per key: at 1,000,000 keys a token bucket holds
/// 86–88 bytes per key with `CompactString` keys against 118 with `String` keys
/// (`cargo bench --bench memory`).
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
    hasher: KeyHasher,
    shards: Box<[Shard<K, A::State>]>,
    /// Model-checking only: a deliberately broken limiter that releases the shard lock
    /// between reading a state and writing it back, so the loom suite can prove it
    /// catches a non-atomic check-and-consume.
    #[cfg(loom)]
    split_critical_section: bool,
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
        let shards = (0..SHARDS)
            .map(|_| Shard(Mutex::new(Table::new(&algorithm))))
            .collect();
        RateLimiter {
            algorithm,
            clock,
            hasher: KeyHasher::default(),
            shards,
            #[cfg(loom)]
            split_critical_section: false,
        }
    }

    /// A deliberately broken limiter whose check-and-consume is not atomic, for the
    /// loom suite's proof that its models can fail. Exists only under `cfg(loom)`.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn broken_with_split_critical_section(algorithm: A, clock: C) -> Self
    where
        A::State: Clone,
    {
        RateLimiter {
            split_critical_section: true,
            ..RateLimiter::with_clock(algorithm, clock)
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
        fits(&self.algorithm, cost)?;
        Ok(self.decide(key, cost, || {}))
    }

    /// `try_acquire(key).allowed`, without working out the rest of the decision: the
    /// same permit is consumed, but `remaining`, `retry_after` and `reset_after` (a
    /// division or two each) are not computed. For callers that only need yes or no.
    pub fn allow<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        // The capacity is at least 1, so cost 1 always fits.
        self.with_state(key, |algo, state, now| algo.try_acquire(state, now, 1))
    }

    /// The decision a request of cost 1 would get now, without consuming anything.
    /// An unknown key is answered from a fresh state and is *not* added to the map.
    pub fn peek<Q>(&self, key: &Q) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let table = lock(self.shard(hash));
        let now = self.clock.now();
        table
            .read(&self.algorithm, (hash, key), |state| {
                self.status(state, now)
            })
            .unwrap_or_else(|| self.status(&self.algorithm.new_state(now), now))
    }

    /// A copy of `key`'s current state, or `None` if the key is not held.
    ///
    /// For simulators and diagnostics: asking the copy at later instants (with
    /// [`Algorithm::would_pass`]) answers "when would this request really pass?" without
    /// touching the live state.
    pub fn snapshot<Q>(&self, key: &Q) -> Option<A::State>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.inspect(key, A::State::clone)
    }

    /// Runs `f` on `key`'s current state in place, under its shard lock, without
    /// copying it; `None` if the key is not held (nothing is inserted).
    pub fn inspect<Q, R>(&self, key: &Q, f: impl FnOnce(&A::State) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        lock(self.shard(hash)).read(&self.algorithm, (hash, key), f)
    }

    /// Forgets `key`: its next request starts from a fresh state.
    pub fn reset<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        lock(self.shard(hash)).remove((hash, key));
    }

    /// Drops every key whose state is indistinguishable from a fresh one, and returns
    /// how many. Run it periodically (a janitor thread) to bound memory to the recently
    /// active keys. It locks one shard at a time, so requests to other shards go on.
    pub fn evict_idle(&self) -> usize {
        let mut removed = 0;
        for shard in self.shards.iter() {
            let mut table = lock(&shard.0);
            let now = self.clock.now();
            removed += table.evict_idle(&self.algorithm, &self.hasher, now);
        }
        removed
    }

    /// The number of keys held.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(&s.0).len()).sum()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `f` on `key`'s state (created fresh if absent) under the key's shard lock,
    /// with the clock read under that lock: the building block for decisions other than
    /// a plain acquire (a composite limit uses it to check and consume several rules
    /// atomically).
    pub fn with_state<Q, R>(&self, key: &Q, f: impl FnOnce(&A, &mut A::State, Nanos) -> R) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.with_state_hooked(key, f, || {})
    }

    /// The shard holding keys with this hash (see [`shard_index`]).
    fn shard(&self, hash: u64) -> &Mutex<Table<K, A::State>> {
        &self.shards[shard_index(hash)].0
    }

    /// The whole request path. `before_lock` runs after the key is hashed and before
    /// its shard is locked — where, in the seed's design, a concurrent `evict_idle`
    /// could strike between lookup and lock. It is empty except in the test that
    /// forces that interleaving.
    fn with_state_hooked<Q, R>(
        &self,
        key: &Q,
        f: impl FnOnce(&A, &mut A::State, Nanos) -> R,
        before_lock: impl FnOnce(),
    ) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        before_lock();
        let mut table = lock(self.shard(hash));
        let now = self.clock.now(); // under the lock: per-key time is monotonic
        #[cfg(loom)]
        if self.split_critical_section {
            // Broken on purpose: decide on a copy outside the lock, then write it back.
            let algo = &self.algorithm;
            let mut copy = table.with(algo, &self.hasher, (hash, key), now, |s| s.clone());
            drop(table);
            let result = f(algo, &mut copy, now);
            let mut table = lock(self.shard(hash));
            table.update(algo, (hash, key), |state| *state = copy);
            return result;
        }
        let algorithm = &self.algorithm;
        table.with(algorithm, &self.hasher, (hash, key), now, |state| {
            f(algorithm, state, now)
        })
    }

    fn decide<Q>(&self, key: &Q, cost: u64, before_lock: impl FnOnce()) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let acquire = |algo: &A, state: &mut A::State, now| acquire(algo, state, now, cost);
        self.with_state_hooked(key, acquire, before_lock)
    }

    fn status(&self, state: &A::State, now: Nanos) -> Decision {
        status(&self.algorithm, state, now)
    }
}

/// The shard index for a key's hash: bits the shard's own table does not use for
/// bucket selection (it uses the low bits and the top seven), so keys spread evenly
/// inside each shard too.
fn shard_index(hash: u64) -> usize {
    (hash >> 51) as usize % SHARDS
}

/// `key`'s slot in `table`, inserted fresh at `now` if absent.
fn find_or_insert<'t, A: Algorithm, K, Q, V: Stored<A>>(
    algorithm: &A,
    hasher: &KeyHasher,
    table: &'t mut HashTable<(K, V)>,
    hash: u64,
    key: &Q,
    now: Nanos,
) -> &'t mut V
where
    K: Hash + Borrow<Q>,
    Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
{
    let eq = |(k, _): &(K, V)| k.borrow() == key;
    let rehash = |(k, _): &(K, V)| hasher.hash_one(k);
    match table.entry(hash, eq, rehash) {
        Entry::Occupied(held) => &mut held.into_mut().1,
        Entry::Vacant(slot) => {
            let fresh = (key.to_owned(), V::fresh(algorithm, now));
            &mut slot.insert(fresh).into_mut().1
        }
    }
}

/// A cost larger than `algo`'s capacity can never pass: an error, checked before any
/// lookup (by every store: this limiter and [`DenseLimiter`](crate::DenseLimiter)).
pub(crate) fn fits<A: Algorithm>(algo: &A, cost: u64) -> Result<(), InsufficientCapacity> {
    let capacity = algo.capacity();
    if cost > capacity {
        return Err(InsufficientCapacity { cost, capacity });
    }
    Ok(())
}

/// Checks and consumes `cost` on `state` at `now`, and the decision to report.
pub(crate) fn acquire<A: Algorithm>(
    algo: &A,
    state: &mut A::State,
    now: Nanos,
    cost: u64,
) -> Decision {
    let allowed = algo.try_acquire(state, now, cost);
    decision(algo, state, now, cost, allowed)
}

/// The decision to report after `try_acquire(state, now, cost)` returned `allowed`
/// (`state` is the state after it): `retry_after` is zero when allowed. A cost that can
/// never fit never gets here: the callers refuse it first, as the typed
/// [`InsufficientCapacity`], so the algorithm always has a wait to give; `MAX` stands in
/// only for an algorithm that breaks that contract, rather than a panic.
pub(crate) fn decision<A: Algorithm>(
    algo: &A,
    state: &A::State,
    now: Nanos,
    cost: u64,
    allowed: bool,
) -> Decision {
    let retry_after = if allowed {
        Nanos::ZERO
    } else {
        algo.retry_after(state, now, cost).unwrap_or(Nanos::MAX)
    };
    Decision {
        allowed,
        remaining: algo.remaining(state, now),
        retry_after,
        reset_after: algo.reset_after(state, now),
    }
}

/// What a request of cost 1 would get now, without consuming anything.
pub(crate) fn status<A: Algorithm>(algo: &A, state: &A::State, now: Nanos) -> Decision {
    let retry_after = algo.retry_after(state, now, 1).unwrap_or(Nanos::MAX);
    Decision {
        allowed: retry_after == Nanos::ZERO,
        retry_after,
        ..decision(algo, state, now, 1, true)
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

    /// The seed's race, forced deterministically. With lock striping there is no gap
    /// between finding a state and using it, so this guards the design rather than a
    /// known weak spot: it fails if the request path is ever split into a lookup and a
    /// later lock again (as `broken_with_split_critical_section` does under loom).
    #[test]
    fn eviction_between_lookup_and_lock_grants_no_free_request() {
        let limiter = one_per_10s();
        limiter.with_state("k", |_, _, _| ()); // the key is held, and idle
        // Request A has hashed its key; before it takes the lock the janitor evicts
        // the idle entry. A must consume from the state that stays in the map.
        let mut evicted = 0;
        let first = limiter.decide("k", 1, || evicted = limiter.evict_idle());
        assert_eq!(evicted, 1, "the janitor did evict the entry mid-request");
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
    fn reset_between_lookup_and_lock_leaves_the_request_on_a_fresh_state() {
        let limiter = one_per_10s();
        assert!(limiter.try_acquire("k").allowed);
        let d = limiter.decide("k", 1, || limiter.reset("k"));
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
