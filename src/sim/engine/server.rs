//! One server's limiter: its key states (in memory or in Redis), on its own clock, with
//! the idle-key janitor that sweeps them and the probes that judge each denial's
//! advice. A run on one server decides every attempt here; a deployment has one per
//! node (and one for a central store), each asked by `deployment` at its own clock's
//! instants.
//!
//! It holds state and answers; which instant it is asked at, and when, is the caller's
//! to decide. The algorithm decides each request, never this file.
//!
//! The idle-key janitor sweeps every `max(W, duration / 1000)` of simulated time: it
//! evicts idle keys, as a real deployment would, and samples `peak_keys` and the
//! per-key state size. Eviction forgets only states indistinguishable from fresh ones,
//! so it never changes a decision; it only keeps memory bounded and measures it.

use super::attempt::{Answer, Event};
use super::driver::{Decide, Decided};
use super::probe::{Probes, judge};
use super::states::KeyStates;
use crate::sim::{AlgorithmReport, KeyTable, Metrics, Scenario, SimError};
use crate::time::Nanos;

/// A limiter's key states on their own clock, with their janitor and probes.
pub(super) struct Server<S: KeyStates> {
    /// The states (for a deployment's stores, reached directly: `deployment`).
    pub(super) states: S,
    janitor: Janitor,
    /// The most this server's clock can be behind true time (its sweeps run that much
    /// earlier, so nothing it would still count is evicted).
    behind: Nanos,
    /// Judges each denial's `retry_after` against these states, when they alone
    /// decide their requests and the run judges advice.
    probes: Option<Probes>,
    /// The algorithm's denials change its state ([`Entry::counts_denials`]), so the
    /// probes may not remember a key's earliest passing instant across them.
    ///
    /// [`Entry::counts_denials`]: crate::registry::Entry::counts_denials
    forget_on_denial: bool,
    /// The clock's reading at the latest [`advance`](Server::advance).
    pub(super) at: Nanos,
}

impl<S: KeyStates> Server<S> {
    /// A server over `states` (all fresh) whose clock is at most `behind` true time.
    pub(super) fn new(sc: &Scenario, states: S, behind: Nanos) -> Self {
        Server {
            janitor: Janitor::new(sc, &states),
            states,
            behind,
            probes: None,
            forget_on_denial: false,
            at: Nanos::ZERO,
        }
    }

    /// This server judges the advice of its denials (see `probe`).
    pub(super) fn judged(mut self, judged: bool) -> Self {
        self.probes = judged.then(Probes::new);
        self
    }

    /// This server's algorithm counts its denials (HAProxy, Envoy, `limits`' fixed
    /// window): its probes forget a key at each denial rather than remember it.
    pub(super) fn counting_denials(mut self, counts: bool) -> Self {
        self.forget_on_denial = counts;
        self
    }

    /// Runs the idle-key sweeps due by true time `now`, then sets the clock to `at`,
    /// where `key` is about to be asked.
    #[inline]
    pub(super) fn advance(&mut self, now: Nanos, at: Nanos, key: u32) -> Result<(), S::Error> {
        let behind = self.behind;
        self.janitor
            .catch_up(&mut self.states, now, |t| t - behind)?;
        self.at = at;
        self.janitor.touch(key);
        Ok(())
    }

    /// Decides `event` at the clock's instant (check and consume, atomically), and
    /// judges a denial's advice into `m` when this server has probes.
    #[inline]
    pub(super) fn ask(&mut self, event: &Event, m: &mut Metrics) -> Result<Answer, S::Error> {
        let now = self.at;
        let answer = self.states.ask(event, now)?;
        if let Some(probes) = self.probes.as_mut() {
            match answer.retry_after {
                _ if answer.allowed => probes.forget(event.key),
                Some(retry_after) => {
                    if self.forget_on_denial {
                        probes.forget(event.key);
                    }
                    let (states, key, cost) = (&mut self.states, event.key, event.cost);
                    let earliest = probes.earliest(key, cost, now, || {
                        states.earliest(key, cost, now, retry_after)
                    })?;
                    judge(m, now, retry_after, earliest);
                }
                None => {}
            }
        }
        Ok(answer)
    }

    /// The final sweep at true time `end`, and the memory samples, added into `m`
    /// (keys summed over a deployment's servers, the largest state kept).
    pub(super) fn report(&mut self, end: Nanos, m: &mut Metrics) -> Result<(), S::Error> {
        self.janitor
            .sweep(&mut self.states, end - self.behind, false)?;
        let mut own = Metrics::default();
        self.janitor.report(&mut own);
        m.peak_keys += own.peak_keys;
        m.state_bytes_per_key = m.state_bytes_per_key.max(own.state_bytes_per_key);
        Ok(())
    }
}

/// A run on one server: every attempt decided at its arrival, on true time.
impl<S: KeyStates> Decide for Server<S> {
    #[inline]
    fn decide(
        &mut self,
        event: &Event,
        m: &mut Metrics,
        _keys: &KeyTable,
    ) -> Result<Decided, SimError> {
        self.advance(event.time, event.time, event.key)
            .map_err(Into::into)?;
        let answer = self.ask(event, m).map_err(Into::into)?;
        Ok(Decided {
            answer,
            passes: event.time.saturating_add(self.states.delay()),
            heard: event.time,
        })
    }

    #[inline]
    fn prefetch(&self, key: u32) {
        self.states.prefetch(key);
    }

    fn finish(mut self, end: Nanos, report: &mut AlgorithmReport) -> Result<(), SimError> {
        self.report(end, &mut report.metrics).map_err(Into::into)
    }
}

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
