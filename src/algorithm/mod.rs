//! The rate-limiting policies: plain integer math over a small per-key state.
//!
//! An [`Algorithm`] is a *stateless policy*: it holds only its parameters, and every
//! call receives the key's state and the current instant as arguments. It never reads a
//! clock, takes a lock, does I/O or owns a key map; [`RateLimiter`](crate::RateLimiter)
//! does all of that. So each algorithm is single-threaded math that a test can sit on
//! any nanosecond boundary.
//!
//! ## Shared semantics
//! - **Exact time.** Integer nanoseconds, `u128` where products can overflow `u64`.
//! - **A backwards clock changes nothing.** Each state remembers the latest instant it
//!   has seen; an earlier reading is treated as that instant ("time stands still"), so
//!   it neither refills nor drains. Waits are still measured from the caller's `now`.
//! - **`retry_after` is exact.** It is the least wait after which the request passes if
//!   nothing else happens: at `now + retry_after` it passes, one nanosecond earlier it
//!   does not. `None` means it can never pass (`cost > capacity`).
//! - **A denial never changes what a later decision would be.**
//! - **`is_idle`** is true only when the state is indistinguishable from a fresh one, so
//!   the limiter can forget the key without changing any future decision.

mod bucket;
mod dynamic;
mod fixed_window;
mod gcra;
mod leaky_bucket;
mod sliding_window_counter;
mod sliding_window_log;
mod token_bucket;

pub use bucket::BucketState;
pub use dynamic::{BoxedAlgorithm, DynAlgorithm, ErasedState};
pub use fixed_window::{FixedWindow, WindowState};
pub use gcra::{Gcra, GcraState};
pub use leaky_bucket::LeakyBucket;
pub use sliding_window_counter::{CounterState, SlidingWindowCounter};
pub use sliding_window_log::{LogState, SlidingWindowLog};
pub use token_bucket::TokenBucket;

use crate::rule::Rule;
use crate::time::Nanos;

/// A rate-limiting policy over a per-key [`State`](Algorithm::State).
///
/// Implementations are deliberately not synchronised: the caller holds the key's lock
/// around every call. `cost` is the number of permits a request takes (1 for a plain
/// request); a cost of 0 always passes and consumes nothing.
pub trait Algorithm: Send + Sync + 'static {
    /// What the policy remembers about one key.
    type State: Clone + Send + 'static;

    /// The registry name, e.g. `"token_bucket"`.
    fn name(&self) -> &str;

    /// The rule this policy enforces.
    fn rule(&self) -> &Rule;

    /// The largest cost that can ever pass (the bucket's burst, or the window's quota).
    /// `remaining` equals this on a fresh state.
    fn capacity(&self) -> u64;

    /// State for a key seen for the first time at `now`.
    fn new_state(&self, now: Nanos) -> Self::State;

    /// Makes `state` equal to [`new_state(now)`](Algorithm::new_state), keeping the
    /// memory it owns where it can (the sliding log keeps its deque's buffer), for a
    /// store that reuses the states of evicted keys.
    fn renew(&self, state: &mut Self::State, now: Nanos) {
        *state = self.new_state(now);
    }

    /// Checks and consumes `cost` permits in one step; returns whether it passed.
    /// A denied request leaves the state's future decisions unchanged.
    fn try_acquire(&self, state: &mut Self::State, now: Nanos, cost: u64) -> bool;

    /// Checks and consumes like [`try_acquire`](Algorithm::try_acquire), and says *when*
    /// the request passes. A policer (every built-in) answers [`Outcome::Allowed`] or
    /// [`Outcome::Denied`], which is this default; a shaper (nginx without `nodelay`,
    /// tower's `RateLimit`) may answer [`Outcome::Delayed`]: admitted, but it reaches the
    /// service only `d` later. A shaper's `try_acquire` is true for both admissions.
    fn acquire(&self, state: &mut Self::State, now: Nanos, cost: u64) -> Outcome {
        if self.try_acquire(state, now, cost) {
            Outcome::Allowed
        } else {
            Outcome::Denied
        }
    }

    /// [`acquire`](Algorithm::acquire), and for a denial the
    /// [`retry_after`](Algorithm::retry_after) of the state it left: one call for a
    /// caller that wants both, as the simulator does for every denial. The wait is
    /// `Some(ZERO)` for an admission. The default makes the two calls; the built-ins
    /// work the wait out from the arithmetic their check has just done.
    fn acquire_or_wait(
        &self,
        state: &mut Self::State,
        now: Nanos,
        cost: u64,
    ) -> (Outcome, Option<Nanos>) {
        match self.acquire(state, now, cost) {
            Outcome::Denied => (Outcome::Denied, self.retry_after(state, now, cost)),
            admitted => (admitted, Some(Nanos::ZERO)),
        }
    }

    /// Whether [`try_acquire`](Algorithm::try_acquire) would pass at `now`, without
    /// consuming anything: the same answer, on a state left as it is. The default
    /// asks a copy; an algorithm whose state is costly to copy (the sliding log)
    /// answers directly. The simulator probes denials with it.
    fn would_pass(&self, state: &Self::State, now: Nanos, cost: u64) -> bool {
        self.try_acquire(&mut state.clone(), now, cost)
    }

    /// Permits of cost 1 available at `now`, without consuming any.
    fn remaining(&self, state: &Self::State, now: Nanos) -> u64;

    /// The least wait after which a request of `cost` passes (zero if it would pass
    /// now), or `None` if it never can (`cost > capacity`).
    fn retry_after(&self, state: &Self::State, now: Nanos, cost: u64) -> Option<Nanos>;

    /// The wait until `remaining` is back to `capacity`, if nothing else happens.
    fn reset_after(&self, state: &Self::State, now: Nanos) -> Nanos;

    /// A hint that `state` will be asked about soon: a state that keeps part of itself
    /// elsewhere (the sliding log's entries) may start loading that part into the
    /// cache. Changes nothing; the default does nothing.
    #[inline]
    fn prefetch_state(&self, _state: &Self::State) {}

    /// True when the state is indistinguishable from [`new_state`](Algorithm::new_state)
    /// at `now`, so the key can be forgotten.
    fn is_idle(&self, state: &Self::State, now: Nanos) -> bool {
        self.remaining(state, now) >= self.capacity()
    }

    /// Whether every state this instance can ever produce fits in [`Packed`] (two
    /// words), decided once from the rule. A [`RateLimiter`](crate::RateLimiter) then
    /// stores its keys' states packed and unpacks one around each call, so the math
    /// above never sees the difference. The default is `false`: stored as they are.
    fn packs(&self) -> bool {
        false
    }

    /// `state` in two words. Called only when [`packs`](Algorithm::packs) is true, and
    /// then [`unpack`](Algorithm::unpack) must give back an equal state.
    fn pack(&self, state: &Self::State) -> Packed {
        let _ = state;
        unreachable!("{} does not pack its states", self.name())
    }

    /// The state [`pack`](Algorithm::pack) made `packed` from.
    fn unpack(&self, packed: Packed) -> Self::State {
        let _ = packed;
        unreachable!("{} does not pack its states", self.name())
    }

    /// Which of this policy's rules keeps a request of `cost` from passing at `now`
    /// (their index, in order), when it enforces several: a
    /// [`Composite`](crate::Composite) names the rule with the longest wait. `None` for
    /// a policy of one rule (the default), or when the request would pass. Only asks.
    fn binding_rule(&self, state: &Self::State, now: Nanos, cost: u64) -> Option<usize> {
        let _ = (state, now, cost);
        None
    }
}

/// The answer of [`Algorithm::acquire`]: pass now, pass later, or never for this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Admitted at the instant asked.
    Allowed,
    /// Admitted, but held back: the request reaches the service this much later. Always
    /// more than zero (a zero delay is [`Outcome::Allowed`]).
    Delayed(Nanos),
    /// Refused; the state is as if the request had never come.
    Denied,
}

impl Outcome {
    /// Whether the request was admitted, now or later.
    pub fn admitted(self) -> bool {
        !matches!(self, Outcome::Denied)
    }

    /// How long the request is held back (zero unless [`Outcome::Delayed`]).
    pub fn delay(self) -> Nanos {
        match self {
            Outcome::Delayed(d) => d,
            _ => Nanos::ZERO,
        }
    }

    /// `Delayed(d)`, or `Allowed` when `d` is zero.
    pub fn after(d: Nanos) -> Outcome {
        if d == Nanos::ZERO {
            Outcome::Allowed
        } else {
            Outcome::Delayed(d)
        }
    }
}

/// A per-key state in two words: the compact form a limiter stores when the algorithm
/// [`packs`](Algorithm::packs). The bucket family and GCRA pack when their largest level
/// (`burst × window` token·ns units) fits in a `u64`; a larger rule keeps the `u128`
/// state, exact either way.
pub type Packed = [u64; 2];

/// A `u128` kept as two `u64` words. A `u128` field makes its struct 16-byte aligned,
/// which pads a per-key state from 24 to 32 bytes (and a `(String, state)` map slot from
/// 48 to 64); stored as words, the state stays 8-byte aligned. The math still sees a
/// `u128` through [`Wide::get`] and [`Wide::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Wide {
    lo: u64,
    hi: u64,
}

impl Wide {
    fn new(v: u128) -> Wide {
        Wide {
            lo: v as u64,
            hi: (v >> 64) as u64,
        }
    }

    fn get(self) -> u128 {
        (u128::from(self.hi) << 64) | u128::from(self.lo)
    }
}

/// What [`Algorithm::acquire_or_wait`] answers after a built-in's check: admitted;
/// never, for a cost above `capacity`; or the wait `wait` works out from what the
/// refusal handed back.
#[inline]
fn answer<E>(
    checked: Result<(), E>,
    cost: u64,
    capacity: u64,
    wait: impl FnOnce(E) -> Nanos,
) -> (Outcome, Option<Nanos>) {
    match checked {
        Ok(()) => (Outcome::Allowed, Some(Nanos::ZERO)),
        Err(_) if cost > capacity => (Outcome::Denied, None),
        Err(refused) => (Outcome::Denied, Some(wait(refused))),
    }
}

/// `a / b` for `b > 0`. Operands are `u128` so that products cannot overflow, but
/// they nearly always fit in `u64`, and a `u64` division is one instruction where a
/// `u128` one is a library call: take the short path when it gives the same answer.
fn div(a: u128, b: u128) -> u128 {
    match (u64::try_from(a), u64::try_from(b)) {
        (Ok(a), Ok(b)) => u128::from(a / b),
        _ => a / b,
    }
}

/// `ceil(a / b)` for `b > 0`, with the same `u64` short path as [`div`].
fn div_ceil(a: u128, b: u128) -> u128 {
    match (u64::try_from(a), u64::try_from(b)) {
        (Ok(a), Ok(b)) => u128::from(a.div_ceil(b)),
        _ => a.div_ceil(b),
    }
}

/// The wait from `now` until the absolute instant `at` (`u128` so that instants past
/// `u64::MAX` saturate instead of wrapping).
fn wait_until(at: u128, now: Nanos) -> Nanos {
    Nanos::saturating_from_u128(at.saturating_sub(u128::from(now.as_u64())))
}

/// `v` as a `u64`, or `u64::MAX` when it does not fit.
fn saturate(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}
