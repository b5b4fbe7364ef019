//! The idle-key janitor: a sweep every `max(W, duration / 1000)` of simulated time
//! evicts idle keys, as a real deployment would, and samples `peak_keys` and the
//! per-key state size.
//!
//! Eviction forgets only states indistinguishable from fresh ones, so the janitor never
//! changes a decision; it only keeps memory bounded and measures it.

use super::states::KeyStates;
use crate::sim::{Metrics, Scenario};
use crate::time::Nanos;

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

/// The periodic idle-key sweep of one algorithm's key states, and the memory samples
/// taken at it.
pub(super) struct Janitor {
    sweeps: Sweeps,
    /// The states' sizes vary (the log's entries): the keys touched since the last
    /// sweep are measured at it.
    measure: bool,
    /// Keys seen since the last sweep (only when measured).
    touched: Vec<u32>,
    marked: Vec<bool>,
    peak_keys: u64,
    /// `None` when the states live outside this process (Redis) and are not measured.
    state_bytes: Option<u64>,
}

impl Janitor {
    /// The janitor of `states`, which start empty.
    pub(super) fn new(sc: &Scenario, states: &impl KeyStates) -> Self {
        Janitor {
            sweeps: Sweeps::new(sc),
            measure: states.key_bytes_vary(),
            touched: Vec::new(),
            marked: Vec::new(),
            peak_keys: 0,
            state_bytes: states.fresh_bytes(),
        }
    }

    /// Runs every sweep due at or before true time `now`. Each sweep due at `at` runs at
    /// `reading(at)`: the states' clock may not be true time, and `reading(at)` is the
    /// earliest instant they can still be asked at afterwards (so no state that would
    /// still count is evicted).
    #[inline]
    pub(super) fn catch_up<S: KeyStates>(
        &mut self,
        states: &mut S,
        now: Nanos,
        reading: impl Fn(Nanos) -> Nanos,
    ) -> Result<(), S::Error> {
        while let Some(at) = self.sweeps.next_due(now) {
            self.sweep(states, reading(at), true)?;
        }
        Ok(())
    }

    /// Notes that `key` was used, so the next sweep measures its state.
    #[inline]
    pub(super) fn touch(&mut self, key: u32) {
        if !self.measure {
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

    /// A sweep at `at`. Keys are only added between sweeps, so the count just before
    /// eviction is the peak since the last sweep.
    pub(super) fn sweep<S: KeyStates>(
        &mut self,
        states: &mut S,
        at: Nanos,
        evict: bool,
    ) -> Result<(), S::Error> {
        self.peak_keys = self.peak_keys.max(states.len() as u64);
        for key in self.touched.drain(..) {
            self.marked[key as usize] = false;
            if let Some(bytes) = states.key_bytes(key) {
                self.state_bytes = self.state_bytes.max(Some(bytes));
            }
        }
        if evict {
            states.evict_idle(at)?;
        }
        Ok(())
    }

    /// Writes the memory samples into the run's metrics.
    pub(super) fn report(&self, m: &mut Metrics) {
        m.peak_keys = self.peak_keys;
        m.state_bytes_per_key = self.state_bytes;
    }
}
