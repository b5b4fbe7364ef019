//! How every driver is run: chunk by chunk (each arrival after the retries due
//! before it), then drained; and [`RunState`], the parts of a run every driver keeps
//! besides its limiters.
//!
//! The story only; deciding an attempt is each driver's own `step` (one server in
//! `driver`, a deployment in `deployment`).

use super::attempt::{Answer, Event};
use super::compare::Comparison;
use super::driver::{Drive, Job};
use super::record::{DecisionLog, Outcome, Recording};
use super::retry::RetryClient;
use crate::sim::traffic::Arrival;
use crate::sim::{ClientModel, KeyTable, Scenario, SimError};
use crate::time::Nanos;

/// What every driver keeps besides its limiters.
pub(super) struct RunState {
    /// `None` for open clients.
    pub(super) retry: Option<RetryClient>,
    pub(super) comparison: Comparison,
    pub(super) record: Recording,
    pub(super) decisions: DecisionLog,
    /// The first sink error: the run stops deciding and reports it.
    pub(super) error: Option<SimError>,
}

impl RunState {
    /// The state of a run of `job`'s algorithm, taking the job's sink. `is_reference`:
    /// this run's decisions are the exact sliding log's, the reference itself.
    pub(super) fn new(job: &mut Job<'_>, is_reference: bool) -> RunState {
        let sc = job.scenario;
        let name = job.entry.name().to_string();
        let judged = sc.client == ClientModel::Open && job.sink.is_some();
        RunState {
            retry: RetryClient::new(sc),
            comparison: Comparison::new(judged, is_reference),
            record: Recording::new(sc, &name, job.track, job.series),
            decisions: DecisionLog::new(name, job.sink.take(), sc),
            error: None,
        }
    }

    /// An attempt was decided: count it against the reference and write its row.
    #[inline]
    pub(super) fn answered(
        &mut self,
        event: &Event,
        answer: &Answer,
        log_allowed: Option<bool>,
        keys: &KeyTable,
    ) -> Result<(), SimError> {
        self.comparison.count(answer.allowed, log_allowed);
        self.decisions.record(event, answer, keys)
    }

    /// The run is over: the recorded metrics, plus the comparison's (open clients) or
    /// the retry client's.
    pub(super) fn finish(self, sc: &Scenario, keys: &KeyTable) -> Outcome {
        let mut outcome = self.record.finish(sc, self.decisions.name, keys);
        let m = &mut outcome.report.metrics;
        match &self.retry {
            None => self.comparison.report(m),
            Some(retry) => retry.report(m),
        }
        outcome
    }
}

/// A driver: one attempt decided, its [`RunState`], and the metrics at the end.
pub(super) trait Steps {
    /// Decides one request attempt; returns whether it was admitted.
    fn step(
        &mut self,
        event: Event,
        log_allowed: Option<bool>,
        keys: &KeyTable,
    ) -> Result<bool, SimError>;
    /// A hint that `key` will be decided soon: its state may start loading into the
    /// cache. Changes nothing.
    fn prefetch(&self, _key: u32) {}
    /// The run's state.
    fn state(&mut self) -> &mut RunState;
    /// The run's state, to read.
    fn state_ref(&self) -> &RunState;
    /// The one key whose arrivals this run looks at, if it skips every other
    /// (see [`Drive::only_key`]). Default: none, every arrival counts.
    fn only_key(&self) -> Option<u32> {
        None
    }
    /// The run is over (every attempt decided and recorded): the metrics.
    fn outcome(self, keys: &KeyTable) -> Result<Outcome, SimError>
    where
        Self: Sized;
}

/// Every driver is run the same way: chunk by chunk, then drained.
impl<S: Steps> Drive for S {
    fn wants_reference(&self) -> bool {
        self.state_ref().comparison.wanted
    }

    fn is_reference(&self) -> bool {
        self.state_ref().comparison.is_reference
    }

    fn only_key(&self) -> Option<u32> {
        Steps::only_key(self)
    }

    fn feed(
        &mut self,
        chunk: &[(u64, Arrival)],
        log_allowed: Option<&[bool]>,
        keys: &KeyTable,
        mut decided: Option<&mut Vec<bool>>,
    ) {
        if self.state().error.is_some() {
            return;
        }
        for (i, &(seq, a)) in chunk.iter().enumerate() {
            if let Some((_, ahead)) = chunk.get(i + crate::prefetch::AHEAD) {
                self.prefetch(ahead.key);
            }
            // A log shorter than the chunk only follows a failed reference run, which
            // fails the whole run anyway.
            let log = log_allowed.and_then(|l| l.get(i).copied());
            match arrive(self, Event::arrival(seq, a), log, keys) {
                Ok(allowed) => {
                    if let Some(d) = decided.as_deref_mut() {
                        d.push(allowed);
                    }
                }
                Err(e) => {
                    self.state().error = Some(e);
                    return;
                }
            }
        }
        self.state().record.track_admitted();
    }

    fn finish(mut self: Box<Self>, keys: &KeyTable) -> Result<Outcome, SimError> {
        if let Some(e) = self.state().error.take() {
            return Err(e);
        }
        while let Some(retry) = next_retry(self.state(), Nanos::MAX) {
            self.step(retry, None, keys)?;
        }
        let run = self.state();
        run.record.track_admitted();
        run.decisions.finish()?;
        (*self).outcome(keys)
    }
}

/// Decides a new arrival, after the retries due at or before it: those were
/// scheduled earlier, so at the same instant they go first.
#[inline]
fn arrive<S: Steps>(
    s: &mut S,
    event: Event,
    log_allowed: Option<bool>,
    keys: &KeyTable,
) -> Result<bool, SimError> {
    while let Some(retry) = next_retry(s.state(), event.time) {
        s.step(retry, None, keys)?;
    }
    s.step(event, log_allowed, keys)
}

/// The earliest queued retry due at or before `time`, if any.
#[inline]
fn next_retry(run: &mut RunState, time: Nanos) -> Option<Event> {
    run.retry.as_mut().and_then(|r| r.pop_due(time))
}
