//! [`DenseLimiter`]: the states of clients numbered `0, 1, 2, …`, in one `Vec` indexed
//! by the number — no hashing, no locks, no clock of its own. For a single owner that
//! already numbers its clients and knows the instant of every request: the simulator
//! (whose clients are numbered as they first appear) and any driver like it.
//!
//! It is a store like [`RateLimiter`](crate::RateLimiter)'s sharded map, not a second
//! limiter: the algorithm decides, with the same [`Decision`]s, the same refusal of a
//! cost above the capacity, and the same idle-key eviction (a state is forgotten only
//! when [`Algorithm::is_idle`] says it equals a fresh one). Fed the same requests at the
//! same instants, the two give the same answers; `tests/dense.rs` checks it.

use crate::algorithm::Algorithm;
use crate::limiter::{InsufficientCapacity, acquire, fits, status};
use crate::rule::Decision;
use crate::time::Nanos;

/// An algorithm's states for clients numbered by `u32`, decided at instants the caller
/// gives.
///
/// Memory follows the largest client number seen, not the number of clients: one slot
/// of `size_of::<Option<A::State>>()` plus one bit per number up to it, and a sweep's
/// list of 4 bytes per client holding a state; slots are not given back when clients
/// are evicted, and an evicted state that owns memory (the sliding log's) is kept and
/// [`renew`](Algorithm::renew)ed for the next new client, so states held and kept never
/// outnumber the most clients held at once. Number clients densely from 0 (a number
/// near `u32::MAX` asks for billions of slots, and aborts like any allocation that
/// cannot be met).
///
/// ```
/// use ratesim::{DenseLimiter, Nanos, Rule, TokenBucket};
///
/// let rule = Rule::new(2, Nanos::from_secs(1))?;
/// let mut limiter = DenseLimiter::new(TokenBucket::new(rule));
/// let t = Nanos::ZERO;
/// assert!(limiter.try_acquire_n(7, 1, t)?.allowed);
/// assert!(limiter.try_acquire_n(7, 1, t)?.allowed);
/// assert!(!limiter.try_acquire_n(7, 1, t)?.allowed);
/// assert!(limiter.try_acquire_n(3, 1, t)?.allowed); // another client, its own state
/// assert_eq!(limiter.len(), 2);
/// assert_eq!(limiter.evict_idle(Nanos::from_secs(1)), 2); // both full again
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DenseLimiter<A: Algorithm> {
    algorithm: A,
    states: Slots<A::State>,
    /// Evicted states, [`renew`](Algorithm::renew)ed for the next new clients.
    spare: Vec<A::State>,
}

impl<A: Algorithm> DenseLimiter<A> {
    /// A store with every client fresh.
    pub fn new(algorithm: A) -> Self {
        DenseLimiter {
            algorithm,
            states: Slots::default(),
            spare: Vec::new(),
        }
    }

    /// The policy applied.
    pub fn algorithm(&self) -> &A {
        &self.algorithm
    }

    /// Checks and consumes `cost` permits for client `id` at `now`, as
    /// [`RateLimiter::try_acquire_n`](crate::RateLimiter::try_acquire_n) does: a cost
    /// above the capacity is an error, refused before the client's state is created.
    #[inline]
    pub fn try_acquire_n(
        &mut self,
        id: u32,
        cost: u64,
        now: Nanos,
    ) -> Result<Decision, InsufficientCapacity> {
        fits(&self.algorithm, cost)?;
        Ok(self.with_state(id, now, |algo, state, now| acquire(algo, state, now, cost)))
    }

    /// The decision a request of cost 1 would get at `now`, without consuming; a client
    /// holding no state is answered from a fresh one, which is not stored.
    pub fn peek(&self, id: u32, now: Nanos) -> Decision {
        match self.state(id) {
            Some(state) => status(&self.algorithm, state, now),
            None => status(&self.algorithm, &self.algorithm.new_state(now), now),
        }
    }

    /// Runs `f(algorithm, state, now)` on client `id`'s state, created fresh at `now` if
    /// it holds none (as [`RateLimiter::with_state`](crate::RateLimiter::with_state),
    /// with the instant given rather than read).
    #[inline]
    pub fn with_state<R>(
        &mut self,
        id: u32,
        now: Nanos,
        f: impl FnOnce(&A, &mut A::State, Nanos) -> R,
    ) -> R {
        let (algorithm, spare) = (&self.algorithm, &mut self.spare);
        let state = self.states.get_or_insert(id, || match spare.pop() {
            Some(mut state) => {
                algorithm.renew(&mut state, now);
                state
            }
            None => algorithm.new_state(now),
        });
        f(algorithm, state, now)
    }

    /// Starts loading client `id`'s slot into the cache, for a caller that knows it
    /// will ask about `id` soon (a hint: nothing changes).
    #[inline]
    pub fn prefetch(&self, id: u32) {
        if let Some(slot) = self.states.slots.get(id as usize) {
            crate::prefetch::prefetch_whole(slot);
        }
    }

    /// Starts loading what client `id`'s state keeps outside its slot (see
    /// [`Algorithm::prefetch_state`]), for a caller that asked [`prefetch`](Self::prefetch)
    /// for the slot a little earlier. A hint: nothing changes.
    #[inline]
    pub fn prefetch_state(&self, id: u32) {
        if let Some(Some(state)) = self.states.slots.get(id as usize) {
            self.algorithm.prefetch_state(state);
        }
    }

    /// Client `id`'s state, if it holds one.
    #[inline]
    pub fn state(&self, id: u32) -> Option<&A::State> {
        self.states.slots.get(id as usize)?.as_ref()
    }

    /// Gives client `id` the state `state` (replacing any it held).
    pub fn set_state(&mut self, id: u32, state: A::State) {
        let mut state = Some(state);
        let held = self
            .states
            .get_or_insert(id, || state.take().expect("taken once"));
        if let Some(state) = state {
            *held = state; // the client held one: replace it
        }
    }

    /// Forgets client `id`: its next request starts from a fresh state.
    pub fn reset(&mut self, id: u32) {
        self.states.remove(id);
    }

    /// Forgets every client whose state at `now` is indistinguishable from a fresh one
    /// ([`Algorithm::is_idle`]); returns how many.
    pub fn evict_idle(&mut self, now: Nanos) -> usize {
        let algorithm = &self.algorithm;
        // States that own memory (the sliding log's deque) are kept for the next new
        // clients: no allocation, no growing from empty again. Held and kept together
        // never outnumber the most clients ever held at once.
        let keep = std::mem::needs_drop::<A::State>();
        let spare = &mut self.spare;
        self.states.remove_where(
            |state| algorithm.prefetch_state(state),
            |state| algorithm.is_idle(state, now),
            |state| {
                if keep {
                    spare.push(state);
                }
            },
        )
    }

    /// The number of clients holding a state.
    pub fn len(&self) -> usize {
        self.states.count
    }

    /// True when no client holds a state.
    pub fn is_empty(&self) -> bool {
        self.states.count == 0
    }
}

/// States by client number, and one bit per number saying whether it holds one (so a
/// sweep visits the holders in number order and skips empty numbers 64 at a time).
struct Slots<S> {
    /// By client number: its state, or `None` when it holds none.
    slots: Vec<Option<S>>,
    /// Bit `id % 64` of word `id / 64`: client `id` holds a state.
    held: Vec<u64>,
    /// How many clients hold a state.
    count: usize,
    /// The holders a sweep visits, listed from `held` (kept to reuse its memory).
    holders: Vec<u32>,
}

impl<S> Default for Slots<S> {
    fn default() -> Self {
        Slots {
            slots: Vec::new(),
            held: Vec::new(),
            count: 0,
            holders: Vec::new(),
        }
    }
}

/// Client `id`'s word of the held bits, and its bit in it.
#[inline]
fn bit(id: usize) -> (usize, u64) {
    (id / 64, 1 << (id % 64))
}

impl<S> Slots<S> {
    /// Client `id`'s state, filled with `fresh()` (and the client marked as holding
    /// one) if it holds none.
    #[inline]
    fn get_or_insert(&mut self, id: u32, fresh: impl FnOnce() -> S) -> &mut S {
        let i = id as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
            self.held.resize(i / 64 + 1, 0);
        }
        if self.slots[i].is_none() {
            // Made before the client is marked: if making it panics, nothing changed.
            self.slots[i] = Some(fresh());
            let (word, mask) = bit(i);
            self.held[word] |= mask;
            self.count += 1;
        }
        self.slots[i].as_mut().expect("filled above")
    }

    /// Empties client `id`'s slot.
    fn remove(&mut self, id: u32) {
        let Some(slot) = self.slots.get_mut(id as usize) else {
            return;
        };
        if slot.take().is_some() {
            self.unmark(id as usize);
        }
    }

    /// Empties every slot whose state `idle` says so, handing each state to `removed`
    /// in client-number order; returns how many. `ahead` is shown each state some
    /// holders before `idle` sees it (to start loading what it points at; see
    /// [`Algorithm::prefetch_state`]).
    ///
    /// The holders are listed from the held bits first, so the slots are read front to
    /// back (memory the processor streams) and an empty number costs a bit, not a
    /// visit.
    fn remove_where(
        &mut self,
        ahead: impl Fn(&S),
        mut idle: impl FnMut(&S) -> bool,
        mut removed: impl FnMut(S),
    ) -> usize {
        let before = self.count;
        let mut holders = std::mem::take(&mut self.holders);
        holders.clear();
        for (word, &bits) in self.held.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                // A holder's number is a client's: a u32.
                holders.push((word * 64) as u32 + bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
        for (n, &id) in holders.iter().enumerate() {
            // Far enough ahead for what a state points at to come from memory.
            if let Some(&next) = holders.get(n + 2 * crate::prefetch::AHEAD)
                && let Some(state) = &self.slots[next as usize]
            {
                ahead(state);
            }
            if let Some(state) = self.slots[id as usize].take_if(|state| idle(state)) {
                removed(state);
                self.unmark(id as usize);
            }
        }
        self.holders = holders;
        before - self.count
    }

    /// Marks client `id`, whose slot was just emptied, as holding nothing.
    fn unmark(&mut self, id: usize) {
        let (word, mask) = bit(id);
        self.held[word] &= !mask;
        self.count -= 1;
    }
}

impl<A: Algorithm + std::fmt::Debug> std::fmt::Debug for DenseLimiter<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseLimiter")
            .field("algorithm", &self.algorithm)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The held bits take one word per 64 client numbers, up to the highest number seen
    /// (client 100,000: 1,563 words), never a word or more per client.
    #[test]
    fn the_held_bits_take_a_word_per_64_client_numbers() {
        let mut slots: Slots<u8> = Slots::default();
        for id in [0u32, 63, 64, 100_000] {
            slots.get_or_insert(id, || 0);
            assert_eq!(slots.held.len(), id as usize / 64 + 1, "client {id}");
        }
        assert_eq!(slots.count, 4);
    }
}
