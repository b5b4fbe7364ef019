//! Type erasure: any [`Algorithm`] behind one concrete type, for the registry, config
//! strings and the middleware. Hot loops use the concrete types (static dispatch).

use std::any::Any;
use std::fmt;

use super::{Algorithm, Outcome};
use crate::rule::Rule;
use crate::time::Nanos;

/// A per-key state of some algorithm, boxed. Clone it with `.clone()`.
pub trait ErasedState: Send + 'static {
    /// A boxed copy.
    fn clone_box(&self) -> Box<dyn ErasedState>;
    /// For downcasting to the concrete state.
    fn as_any(&self) -> &dyn Any;
    /// For downcasting to the concrete state.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Clone + Send + 'static> ErasedState for T {
    fn clone_box(&self) -> Box<dyn ErasedState> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl Clone for Box<dyn ErasedState> {
    fn clone(&self) -> Self {
        // Deref twice: `self.clone_box()` would box the Box.
        (**self).clone_box()
    }
}

impl fmt::Debug for dyn ErasedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ErasedState")
    }
}

/// The object-safe mirror of [`Algorithm`], implemented for every algorithm.
pub trait DynAlgorithm: Send + Sync {
    /// See [`Algorithm::name`].
    fn name(&self) -> &str;
    /// See [`Algorithm::rule`].
    fn rule(&self) -> &Rule;
    /// See [`Algorithm::capacity`].
    fn capacity(&self) -> u64;
    /// See [`Algorithm::new_state`].
    fn new_state(&self, now: Nanos) -> Box<dyn ErasedState>;
    /// See [`Algorithm::renew`].
    fn renew(&self, state: &mut dyn ErasedState, now: Nanos);
    /// See [`Algorithm::try_acquire`].
    fn try_acquire(&self, state: &mut dyn ErasedState, now: Nanos, cost: u64) -> bool;
    /// See [`Algorithm::acquire`].
    fn acquire(&self, state: &mut dyn ErasedState, now: Nanos, cost: u64) -> Outcome;
    /// See [`Algorithm::acquire_or_wait`].
    fn acquire_or_wait(
        &self,
        state: &mut dyn ErasedState,
        now: Nanos,
        cost: u64,
    ) -> (Outcome, Option<Nanos>);
    /// See [`Algorithm::would_pass`].
    fn would_pass(&self, state: &dyn ErasedState, now: Nanos, cost: u64) -> bool;
    /// See [`Algorithm::remaining`].
    fn remaining(&self, state: &dyn ErasedState, now: Nanos) -> u64;
    /// See [`Algorithm::retry_after`].
    fn retry_after(&self, state: &dyn ErasedState, now: Nanos, cost: u64) -> Option<Nanos>;
    /// See [`Algorithm::reset_after`].
    fn reset_after(&self, state: &dyn ErasedState, now: Nanos) -> Nanos;
    /// See [`Algorithm::is_idle`].
    fn is_idle(&self, state: &dyn ErasedState, now: Nanos) -> bool;
}

/// A state handed to the wrong algorithm is a bug in the caller, never user input:
/// the limiter creates every state with the algorithm that later reads it.
const FOREIGN_STATE: &str = "state was created by a different algorithm";

fn down<A: Algorithm>(s: &dyn ErasedState) -> &A::State {
    s.as_any().downcast_ref().expect(FOREIGN_STATE)
}

impl<A: Algorithm> DynAlgorithm for A {
    fn name(&self) -> &str {
        Algorithm::name(self)
    }
    fn rule(&self) -> &Rule {
        Algorithm::rule(self)
    }
    fn capacity(&self) -> u64 {
        Algorithm::capacity(self)
    }
    fn new_state(&self, now: Nanos) -> Box<dyn ErasedState> {
        Box::new(Algorithm::new_state(self, now))
    }
    fn renew(&self, state: &mut dyn ErasedState, now: Nanos) {
        let state = state.as_any_mut().downcast_mut().expect(FOREIGN_STATE);
        Algorithm::renew(self, state, now);
    }
    fn try_acquire(&self, state: &mut dyn ErasedState, now: Nanos, cost: u64) -> bool {
        let state = state.as_any_mut().downcast_mut().expect(FOREIGN_STATE);
        Algorithm::try_acquire(self, state, now, cost)
    }
    fn acquire(&self, state: &mut dyn ErasedState, now: Nanos, cost: u64) -> Outcome {
        let state = state.as_any_mut().downcast_mut().expect(FOREIGN_STATE);
        Algorithm::acquire(self, state, now, cost)
    }
    fn acquire_or_wait(
        &self,
        state: &mut dyn ErasedState,
        now: Nanos,
        cost: u64,
    ) -> (Outcome, Option<Nanos>) {
        let state = state.as_any_mut().downcast_mut().expect(FOREIGN_STATE);
        Algorithm::acquire_or_wait(self, state, now, cost)
    }
    fn would_pass(&self, state: &dyn ErasedState, now: Nanos, cost: u64) -> bool {
        Algorithm::would_pass(self, down::<A>(state), now, cost)
    }
    fn remaining(&self, state: &dyn ErasedState, now: Nanos) -> u64 {
        Algorithm::remaining(self, down::<A>(state), now)
    }
    fn retry_after(&self, state: &dyn ErasedState, now: Nanos, cost: u64) -> Option<Nanos> {
        Algorithm::retry_after(self, down::<A>(state), now, cost)
    }
    fn reset_after(&self, state: &dyn ErasedState, now: Nanos) -> Nanos {
        Algorithm::reset_after(self, down::<A>(state), now)
    }
    fn is_idle(&self, state: &dyn ErasedState, now: Nanos) -> bool {
        Algorithm::is_idle(self, down::<A>(state), now)
    }
}

/// Any algorithm, chosen at run time (from the registry or a config string).
pub struct BoxedAlgorithm(Box<dyn DynAlgorithm>);

impl BoxedAlgorithm {
    /// Erases the concrete type of `algorithm`.
    pub fn new<A: Algorithm>(algorithm: A) -> BoxedAlgorithm {
        BoxedAlgorithm(Box::new(algorithm))
    }
}

impl fmt::Debug for BoxedAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.0.name(), self.0.rule())
    }
}

impl Algorithm for BoxedAlgorithm {
    type State = Box<dyn ErasedState>;

    fn name(&self) -> &str {
        self.0.name()
    }
    fn rule(&self) -> &Rule {
        self.0.rule()
    }
    fn capacity(&self) -> u64 {
        self.0.capacity()
    }
    fn new_state(&self, now: Nanos) -> Self::State {
        self.0.new_state(now)
    }
    /// Renews the boxed state in place: the box is kept too.
    fn renew(&self, state: &mut Self::State, now: Nanos) {
        self.0.renew(&mut **state, now);
    }
    fn try_acquire(&self, state: &mut Self::State, now: Nanos, cost: u64) -> bool {
        self.0.try_acquire(&mut **state, now, cost)
    }
    fn acquire(&self, state: &mut Self::State, now: Nanos, cost: u64) -> Outcome {
        self.0.acquire(&mut **state, now, cost)
    }
    fn acquire_or_wait(
        &self,
        state: &mut Self::State,
        now: Nanos,
        cost: u64,
    ) -> (Outcome, Option<Nanos>) {
        self.0.acquire_or_wait(&mut **state, now, cost)
    }
    fn would_pass(&self, state: &Self::State, now: Nanos, cost: u64) -> bool {
        self.0.would_pass(&**state, now, cost)
    }
    fn remaining(&self, state: &Self::State, now: Nanos) -> u64 {
        self.0.remaining(&**state, now)
    }
    fn retry_after(&self, state: &Self::State, now: Nanos, cost: u64) -> Option<Nanos> {
        self.0.retry_after(&**state, now, cost)
    }
    fn reset_after(&self, state: &Self::State, now: Nanos) -> Nanos {
        self.0.reset_after(&**state, now)
    }
    fn is_idle(&self, state: &Self::State, now: Nanos) -> bool {
        self.0.is_idle(&**state, now)
    }
}
