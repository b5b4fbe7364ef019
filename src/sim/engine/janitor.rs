//! The idle-key janitor: a sweep every `max(W, duration / 1000)` of simulated time
//! evicts idle keys, as a real deployment would, and samples `peak_keys` and the
//! per-key state size.
//!
//! Eviction forgets only states indistinguishable from fresh ones, so the janitor never
//! changes a decision; it only keeps memory bounded and measures it.

use crate::algorithm::Algorithm;
use crate::limiter::RateLimiter;
use crate::sim::{Metrics, Scenario};
use crate::time::{FakeClock, Nanos};

/// The instants of the periodic sweeps: every `every` nanoseconds from `every` on.
pub(super) struct Sweeps {
    every: u64,
    next: u64,
}

impl Sweeps {
    /// The janitor's period for `sc`: `max(W, duration / 1000)`.
    pub(super) fn new(sc: &Scenario) -> Sweeps {
        let every = sc
            .rule
            .window()
            .as_u64()
            .max(sc.duration.as_u64().div_ceil(1000));
        Sweeps { every, next: every }
    }

    /// The next sweep, if it is due at or before `now`; each sweep is returned once.
    #[inline]
    pub(super) fn next_due(&mut self, now: Nanos) -> Option<Nanos> {
        if now.as_u64() < self.next {
            return None;
        }
        let at = Nanos::new(self.next);
        self.next = self.next.saturating_add(self.every);
        Some(at)
    }
}

/// The periodic idle-key sweep of one algorithm's limiter, and the memory samples
/// taken at it.
pub(super) struct Janitor<A: Algorithm> {
    sweeps: Sweeps,
    heap_bytes: Option<fn(&A::State) -> usize>,
    /// Keys seen since the last sweep (only when states own heap memory).
    touched: Vec<u32>,
    marked: Vec<bool>,
    peak_keys: u64,
    state_bytes: u64,
}

impl<A: Algorithm> Janitor<A> {
    /// `heap_bytes` measures the heap a state owns, for algorithms whose states grow.
    pub(super) fn new(sc: &Scenario, heap_bytes: Option<fn(&A::State) -> usize>) -> Self {
        Janitor {
            sweeps: Sweeps::new(sc),
            heap_bytes,
            touched: Vec::new(),
            marked: Vec::new(),
            peak_keys: 0,
            state_bytes: std::mem::size_of::<A::State>() as u64,
        }
    }

    /// Runs every sweep due at or before `now`, each at its own instant on `clock`.
    #[inline]
    pub(super) fn catch_up(
        &mut self,
        clock: &FakeClock,
        limiter: &RateLimiter<A, u32, FakeClock>,
        now: Nanos,
    ) {
        self.catch_up_read(clock, limiter, now, |at| at);
    }

    /// [`catch_up`](Self::catch_up) for a limiter whose clock is not true time: each
    /// sweep due at true time `at` runs at `reading(at)`, the earliest instant the
    /// limiter can still be asked at afterwards (so no state it would still count is
    /// evicted).
    #[inline]
    pub(super) fn catch_up_read(
        &mut self,
        clock: &FakeClock,
        limiter: &RateLimiter<A, u32, FakeClock>,
        now: Nanos,
        reading: impl Fn(Nanos) -> Nanos,
    ) {
        while let Some(at) = self.sweeps.next_due(now) {
            clock.set(reading(at));
            self.sweep(limiter, true);
        }
    }

    /// Notes that `key` was used, so the next sweep measures its state.
    #[inline]
    pub(super) fn touch(&mut self, key: u32) {
        if self.heap_bytes.is_none() {
            return;
        }
        let i = key as usize;
        if i >= self.marked.len() {
            self.marked.resize(i + 1, false);
        }
        if !self.marked[i] {
            self.marked[i] = true;
            self.touched.push(key);
        }
    }

    /// Keys are only added between sweeps, so the count just before eviction is the
    /// peak since the last sweep.
    pub(super) fn sweep(&mut self, limiter: &RateLimiter<A, u32, FakeClock>, evict: bool) {
        self.peak_keys = self.peak_keys.max(limiter.len() as u64);
        if let Some(heap_bytes) = self.heap_bytes {
            for key in self.touched.drain(..) {
                self.marked[key as usize] = false;
                if let Some(heap) = limiter.inspect(&key, heap_bytes) {
                    let bytes = std::mem::size_of::<A::State>() + heap;
                    self.state_bytes = self.state_bytes.max(bytes as u64);
                }
            }
        }
        if evict {
            limiter.evict_idle();
        }
    }

    /// Writes the memory samples into the run's metrics.
    pub(super) fn report(&self, m: &mut Metrics) {
        m.peak_keys = self.peak_keys;
        m.state_bytes_per_key = self.state_bytes;
    }
}
