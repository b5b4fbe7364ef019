//! One algorithm's run: its own key states (in memory on a fake clock, or in Redis),
//! fed the stream a chunk at a time, with each request attempt told as a short story — sweep, decide,
//! record, then admit or deny (probe the advice, schedule a retry), compare with the
//! reference, write the row.
//!
//! The driver owns the order of one algorithm's events; the limiter decides each of
//! them, and the concepts it calls (janitor, probes, retry client, recording,
//! comparison, progress) keep their own state. It writes no files itself.

use super::attempt::{Answer, Event};
use super::janitor::Janitor;
use super::probe::{Probes, judge};
use super::progress::{Progress, ProgressTicker};
use super::record::Outcome;
use super::states::KeyStates;
use super::steps::{RunState, Steps};
use crate::registry::{Builtin, Entry};
use crate::sim::traffic::Arrival;
use crate::sim::{DecisionSink, KeyTable, Scenario, SimError, StateStore};

/// One algorithm's run, fed the stream a chunk at a time.
pub(super) trait Drive {
    /// True when this run counts `false_allow` / `false_deny` against the log.
    fn wants_reference(&self) -> bool;
    /// True when this run's decisions on the open-client stream *are* the reference's
    /// (the sliding log on the scenario's rules), so it can serve as the reference.
    fn is_reference(&self) -> bool;
    /// Decides every arrival of `chunk` (and any retries due before each), in order.
    /// `log_allowed[i]` is the reference's decision on `chunk[i]`, when there is one.
    /// With `decided`, each arrival's decision is appended to it.
    fn feed(
        &mut self,
        chunk: &[(u64, Arrival)],
        log_allowed: Option<&[bool]>,
        keys: &KeyTable,
        decided: Option<&mut Vec<bool>>,
    );
    /// Decides the retries still queued and computes the metrics.
    fn finish(self: Box<Self>, keys: &KeyTable) -> Result<Outcome, SimError>;
    /// The one key whose arrivals this run looks at, when every other arrival would
    /// change nothing (the silent pass with open clients on one server): a stream of
    /// that key's arrivals alone gives it the same results.
    fn only_key(&self) -> Option<u32>;
}

/// What a run of one algorithm needs besides the algorithm.
pub(super) struct Job<'a> {
    pub(super) scenario: &'a Scenario,
    /// The algorithm, as registered: the run reports under its registry name.
    pub(super) entry: &'a Entry,
    /// `None` for the silent second pass: no rows, no reference, no probes.
    pub(super) sink: Option<Box<dyn DecisionSink>>,
    pub(super) progress: Option<&'a Progress<'a>>,
    /// The key whose window count to draw; `None` = the first key admitted.
    pub(super) track: Option<u32>,
    /// Keep the window-count series and the timeline (`false` for a sweep).
    pub(super) series: bool,
    /// Where the keys' states live (read only when a store besides memory is built in).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(super) store: &'a StateStore,
}

/// The state of one algorithm's run between chunks.
pub(super) struct Driver<'a, S: KeyStates> {
    sc: &'a Scenario,
    states: S,
    janitor: Janitor,
    /// Each denial's earliest passing instant, probed or remembered; `None` for the
    /// silent second pass, which judges nothing.
    probes: Option<Probes>,
    /// The retry client, comparison, recording, rows and first error.
    run: RunState,
    progress: ProgressTicker<'a>,
    /// The silent open-client pass skips every key but this one.
    only_key: Option<u32>,
}

impl<'a, S: KeyStates> Driver<'a, S> {
    /// A run of the algorithm whose keys `states` holds (all fresh), as `job` describes.
    pub(super) fn new(mut job: Job<'a>, states: S) -> Self {
        let sc = job.scenario;
        let is_log = job.entry.builtin() == Some(Builtin::SlidingWindowLog);
        let silent = job.sink.is_none();
        let run = RunState::new(&mut job, is_log);
        // The silent pass only redraws one key's window count. With open clients a
        // key's decisions depend on its own arrivals alone (eviction forgets only
        // states indistinguishable from fresh ones), so every other key is skipped.
        let only_key = match (silent, &run.retry) {
            (true, None) => job.track,
            _ => None,
        };
        Driver {
            sc,
            janitor: Janitor::new(sc, &states),
            states,
            probes: (!silent).then(Probes::new),
            run,
            progress: ProgressTicker::new(job.progress, sc.duration),
            only_key,
        }
    }
}

impl<S: KeyStates> Steps for Driver<'_, S> {
    /// Decides one request attempt and records what the metrics need; returns
    /// whether it was admitted.
    #[inline]
    fn step(
        &mut self,
        event: Event,
        log_allowed: Option<bool>,
        keys: &KeyTable,
    ) -> Result<bool, SimError> {
        if self.only_key.is_some_and(|k| k != event.key) {
            return Ok(false);
        }
        self.janitor
            .catch_up(&mut self.states, event.time)
            .map_err(Into::into)?;
        self.janitor.touch(event.key);
        let answer = self.states.ask(&event, event.time).map_err(Into::into)?;
        let passes = event.time.saturating_add(self.states.delay());
        self.run.record.attempt(&event, answer.allowed, passes);
        if answer.allowed {
            self.admitted(&event);
        } else {
            self.denied(&event, answer)?;
        }
        self.run.answered(&event, &answer, log_allowed, keys)?;
        self.progress.tick(event.time);
        Ok(answer.allowed)
    }

    #[inline]
    fn prefetch(&self, key: u32) {
        self.states.prefetch(key);
    }

    #[inline]
    fn state(&mut self) -> &mut RunState {
        &mut self.run
    }

    fn state_ref(&self) -> &RunState {
        &self.run
    }

    fn only_key(&self) -> Option<u32> {
        self.only_key
    }

    fn outcome(self, keys: &KeyTable) -> Result<Outcome, SimError> {
        Driver::outcome(self, keys)
    }
}

impl<S: KeyStates> Driver<'_, S> {
    /// `event` was admitted: what the probes remembered about its key no longer holds,
    /// and a retrying client has succeeded.
    #[inline]
    fn admitted(&mut self, event: &Event) {
        if let Some(probes) = self.probes.as_mut() {
            probes.forget(event.key);
        }
        if let Some(retry) = self.run.retry.as_mut() {
            retry.admitted(event);
        }
    }

    /// `event` was denied: a request that can never pass is counted as such; any other
    /// has its advice judged against the earliest instant it would pass. A retrying
    /// client then comes back later (or gives up).
    #[inline]
    fn denied(&mut self, event: &Event, answer: Answer) -> Result<(), SimError> {
        match (answer.retry_after, self.probes.as_mut()) {
            (None, _) => self.run.record.m.never_fits += 1,
            (Some(retry_after), Some(probes)) => {
                let now = event.time;
                let states = &mut self.states;
                let (key, cost) = (event.key, event.cost);
                let earliest = probes
                    .earliest(key, cost, now, || {
                        states.earliest(key, cost, now, retry_after)
                    })
                    .map_err(Into::into)?;
                judge(&mut self.run.record.m, now, retry_after, earliest);
            }
            (Some(_), None) => {}
        }
        if let Some(retry) = self.run.retry.as_mut() {
            retry.denied(event, answer.retry_after);
        }
        Ok(())
    }

    /// The run is over: the final sweep, and the metrics.
    fn outcome(mut self, keys: &KeyTable) -> Result<Outcome, SimError> {
        let sc = self.sc;
        self.janitor
            .sweep(&mut self.states, sc.duration, false)
            .map_err(Into::into)?;
        self.progress.finish();
        let mut outcome = self.run.finish(sc, keys);
        self.janitor.report(&mut outcome.report.metrics);
        Ok(outcome)
    }
}
