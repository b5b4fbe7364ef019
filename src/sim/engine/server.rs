//! One server's limiter: where one algorithm's key states live ([`StateBackend`]: the
//! library's `DenseLimiter` in memory, or Redis), on the server's own clock, with the
//! idle-key janitor that sweeps them and the probes that judge each denial's advice. A
//! run on one server decides every attempt here; a deployment has one per node (and one
//! for a central store), each asked by `deployment` at its own clock's instants.
//!
//! It holds state and answers; which instant it is asked at, and when, is the caller's
//! to decide. The algorithm decides each request (in Rust, or its Lua twin in Redis),
//! never this file.
//!
//! The idle-key janitor sweeps every `max(W, duration / 1000)` of simulated time: it
//! evicts idle keys, as a real deployment would, and samples `peak_keys` and the
//! per-key state size. Eviction forgets only states indistinguishable from fresh ones,
//! so it never changes a decision; it only keeps memory bounded and measures it.
//!
//! The states themselves ([`KeyStates`]): `Local` is the library's own `DenseLimiter`
//! at the run's fake instants, in this process; `Remote` (feature `redis`) is a
//! `RedisLimiter` deciding at the fake clock's instants with every state in Redis. The
//! same stream gives the same decisions on both, which is how the simulator proves the
//! Redis scripts right.

use std::convert::Infallible;

use super::driver::{Decide, Decided};
use super::probe::{Probes, earliest_pass, judge};
use super::record::{Answer, Event, Verdict};
use crate::algorithm::Algorithm;
use crate::dense::DenseLimiter;
use crate::limiter::InsufficientCapacity;
use crate::sim::traffic::Arrival;
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
    /// judges a denial's advice into `m` when this server has probes. The rest of the
    /// answer is the states' [`answer`](KeyStates::answer), until the next decision.
    #[inline]
    pub(super) fn ask(&mut self, event: &Event, m: &mut Metrics) -> Result<Verdict, S::Error> {
        let now = self.at;
        let verdict = self.states.ask(event, now)?;
        if let Some(probes) = self.probes.as_mut() {
            match verdict.retry_after() {
                _ if verdict.allowed() => probes.forget(event.key),
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
        Ok(verdict)
    }

    /// [`ask`](Server::ask), then the whole answer (for a deployment's node).
    #[inline]
    pub(super) fn ask_whole(&mut self, event: &Event, m: &mut Metrics) -> Result<Answer, S::Error> {
        let verdict = self.ask(event, m)?;
        Ok(self.states.answer(event, verdict))
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
        self.states.sweep_at(self.janitor.next_sweep());
        let verdict = self.ask(event, m).map_err(Into::into)?;
        Ok(Decided {
            verdict,
            passes: event.time.saturating_add(self.states.delay()),
            heard: event.time,
        })
    }

    #[inline]
    fn answer(&self, event: &Event, verdict: Verdict) -> Answer {
        self.states.answer(event, verdict)
    }

    #[inline]
    fn prefetch(&self, key: u32) {
        self.states.prefetch(key);
    }

    #[inline]
    fn prefetch_state(&self, key: u32) {
        self.states.prefetch_state(key);
    }

    fn upcoming(&mut self, arrivals: &[(u64, Arrival)]) {
        self.states.upcoming(arrivals);
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

    /// The instant of the next periodic sweep.
    #[inline]
    pub(super) fn next_sweep(&self) -> Nanos {
        Nanos::new(self.sweeps.next)
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

/// Where a run keeps its algorithms' key states. The decisions, and so every report,
/// are the same on every store; only what the run measures of memory differs.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum StateBackend {
    /// In this process: the library's own [`DenseLimiter`](crate::DenseLimiter), one per
    /// algorithm, at the fake clock's instants.
    #[default]
    Memory,
    /// In Redis (feature `redis`): every decision, probe and idle-key eviction is a
    /// call of the Redis store's script at the fake clock's instant, under the store's
    /// prefix, which should be the run's own. The built-in algorithms and their
    /// composites only; no `[deployment]` (it simulates its own store).
    #[cfg(feature = "redis")]
    Redis(crate::redis::RedisStore),
}

/// The default store, for [`RunOptions::default`].
pub(super) static MEMORY: StateBackend = StateBackend::Memory;

/// One algorithm's keys and their states, as a run sees them.
pub(super) trait KeyStates {
    /// Why the states could not answer: never, in memory.
    type Error: Into<SimError>;

    /// Decides `event` at the instant `at` (checks and consumes).
    fn ask(&mut self, event: &Event, at: Nanos) -> Result<Verdict, Self::Error>;

    /// The whole answer to `event`, the latest request [`ask`](KeyStates::ask)ed,
    /// which got `verdict`: read from the states as that decision left them (nothing
    /// changes them in between), or kept from it. Changes nothing.
    fn answer(&self, event: &Event, verdict: Verdict) -> Answer;

    /// How long a shaper held back the request the last [`ask`](KeyStates::ask)
    /// admitted (zero for every policer, and for states that do not say).
    fn delay(&self) -> Nanos {
        Nanos::ZERO
    }

    /// The earliest instant after `now` at which the request of `cost` just denied for
    /// `key` (advertised wait `hint`) would pass, nothing else happening; `None` if it
    /// never does. Only asks: no state changes.
    fn earliest(
        &mut self,
        key: u32,
        cost: u64,
        now: Nanos,
        hint: Nanos,
    ) -> Result<Option<Nanos>, Self::Error>;

    /// A hint that `key` will be asked about soon (see [`DenseLimiter::prefetch`]).
    fn prefetch(&self, _key: u32) {}

    /// A hint that `key` will be asked about sooner still: what its state keeps outside
    /// its slot may start loading (see [`DenseLimiter::prefetch_state`]).
    fn prefetch_state(&self, _key: u32) {}

    /// The arrivals about to be asked, in order, each in its turn with only probes and
    /// sweeps in between (open clients on one server). States that answer from afar
    /// may decide some ahead of their turn (`remote`); in memory, nothing to do.
    fn upcoming(&mut self, _arrivals: &[(u64, Arrival)]) {}

    /// The janitor's next sweep is at `at`: nothing decided ahead of its turn may
    /// reach it (the sweep must see every state as the arrivals before it left it).
    fn sweep_at(&mut self, _at: Nanos) {}

    /// How many keys hold a state.
    fn len(&self) -> usize;

    /// Forgets the states that are idle at `at` (indistinguishable from fresh ones).
    fn evict_idle(&mut self, at: Nanos) -> Result<(), Self::Error>;

    /// The bytes a fresh state takes in this process; `None` when states live
    /// elsewhere and are not measured.
    fn fresh_bytes(&self) -> Option<u64>;

    /// Whether states change size as they are used (the log's entries), so each
    /// key's must be measured with [`key_bytes`](KeyStates::key_bytes).
    fn key_bytes_vary(&self) -> bool;

    /// The bytes `key`'s state takes now (heap included), when states grow and are
    /// measured; `None` otherwise or when the key holds no state.
    fn key_bytes(&self, key: u32) -> Option<u64>;
}

/// The states in this process: the library's own [`DenseLimiter`], the clients' states
/// in a `Vec` indexed by their number, decided at the run's instants.
pub(super) struct Local<A: Algorithm> {
    /// The instant the states are asked at (the run's fake clock).
    pub(super) now: Nanos,
    pub(super) limiter: DenseLimiter<A>,
    /// Measures the heap a state owns, for algorithms whose states grow.
    heap_bytes: Option<fn(&A::State) -> usize>,
    /// The delay of the last answer (`Algorithm::acquire`'s `Outcome::Delayed`).
    delay: Nanos,
}

impl<A: Algorithm> Local<A> {
    pub(super) fn new(algorithm: A, heap_bytes: Option<fn(&A::State) -> usize>) -> Self {
        Local {
            now: Nanos::ZERO,
            limiter: DenseLimiter::new(algorithm),
            heap_bytes,
            delay: Nanos::ZERO,
        }
    }

    /// Asks the limiter about `event` at `self.now`. A cost above the capacity is
    /// refused before the key is looked up (so it creates no key).
    #[inline]
    fn decide(&mut self, event: &Event) -> Verdict {
        let cost = event.cost;
        let decided = crate::limiter::fits(self.limiter.algorithm(), cost).map(|()| {
            self.limiter.with_state(event.key, self.now, |a, s, now| {
                let (outcome, wait) = a.acquire_or_wait(s, now, cost);
                (
                    outcome.admitted(),
                    wait.unwrap_or(Nanos::MAX),
                    outcome.delay(),
                )
            })
        });
        match decided {
            Ok((allowed, wait, delay)) => {
                self.delay = delay;
                Verdict::fitting(allowed, wait)
            }
            Err(InsufficientCapacity { .. }) => Verdict::never_fits(),
        }
    }

    /// The rest of the answer [`decide`](Local::decide) gave `event`, read from the
    /// state it left at `self.now` (as `limiter::decision` reads it there). A cost
    /// that never fits has its `remaining` read without consuming.
    fn whole(&self, event: &Event, verdict: Verdict) -> Answer {
        let Some(retry_after) = verdict.retry_after() else {
            return Answer {
                allowed: false,
                remaining: self.limiter.peek(event.key, self.now).remaining,
                retry_after: None,
                delay: Nanos::ZERO,
                denied_by: self.never_fits_rule(event),
                node: None,
            };
        };
        let (a, now, cost) = (self.limiter.algorithm(), self.now, event.cost);
        let fresh;
        let s = match self.limiter.state(event.key) {
            Some(s) => s,
            None => {
                fresh = a.new_state(now);
                &fresh
            }
        };
        // A denial consumed nothing: the state still shows which rule bound.
        let by = (!verdict.allowed())
            .then(|| a.binding_rule(s, now, cost))
            .flatten();
        Answer {
            allowed: verdict.allowed(),
            remaining: a.remaining(s, now),
            retry_after: Some(retry_after),
            delay: self.delay,
            denied_by: by.map(rule_index),
            node: None,
        }
    }

    /// The rule a request too costly for any state is denied by (the one of smallest
    /// capacity, for several rules), read without creating the key.
    fn never_fits_rule(&self, event: &Event) -> Option<u32> {
        let a = self.limiter.algorithm();
        let by = match self.limiter.state(event.key) {
            Some(s) => a.binding_rule(s, self.now, event.cost),
            None => a.binding_rule(&a.new_state(self.now), self.now, event.cost),
        };
        by.map(rule_index)
    }
}

/// A rule's index as an answer carries it (a scenario has far fewer than 2³² rules).
pub(super) fn rule_index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

impl<A: Algorithm> KeyStates for Local<A> {
    type Error = Infallible;

    #[inline]
    fn ask(&mut self, event: &Event, at: Nanos) -> Result<Verdict, Infallible> {
        self.now = at;
        Ok(self.decide(event))
    }

    fn answer(&self, event: &Event, verdict: Verdict) -> Answer {
        self.whole(event, verdict)
    }

    #[inline]
    fn delay(&self) -> Nanos {
        self.delay
    }

    #[inline]
    fn earliest(
        &mut self,
        key: u32,
        cost: u64,
        now: Nanos,
        hint: Nanos,
    ) -> Result<Option<Nanos>, Infallible> {
        Ok(self.limiter.with_state(key, now, |algo, state, now| {
            earliest_pass(algo, state, now, hint, cost)
        }))
    }

    #[inline]
    fn prefetch(&self, key: u32) {
        self.limiter.prefetch(key);
    }

    #[inline]
    fn prefetch_state(&self, key: u32) {
        self.limiter.prefetch_state(key);
    }

    fn len(&self) -> usize {
        self.limiter.len()
    }

    fn evict_idle(&mut self, at: Nanos) -> Result<(), Infallible> {
        self.now = at;
        self.limiter.evict_idle(at);
        Ok(())
    }

    fn fresh_bytes(&self) -> Option<u64> {
        Some(std::mem::size_of::<A::State>() as u64)
    }

    fn key_bytes_vary(&self) -> bool {
        self.heap_bytes.is_some()
    }

    fn key_bytes(&self, key: u32) -> Option<u64> {
        let heap_bytes = self.heap_bytes?;
        let heap = heap_bytes(self.limiter.state(key)?);
        Some((std::mem::size_of::<A::State>() + heap) as u64)
    }
}
