//! One algorithm's run, whatever decides it: the stream fed a chunk at a time, each
//! request attempt told as one short story — decide, record, admit or deny (a retrying
//! client comes back later), compare with the reference, write the row — then the
//! retries still queued, and the metrics.
//!
//! How an attempt is decided is a [`Decide`]: one server (`server::Server`, its states
//! in memory or in Redis) or a deployment of several (`deployment::Deployed`). The
//! driver owns the order of one algorithm's events and the story of each attempt,
//! written once for both; the concepts it calls (retry client, recording, comparison,
//! progress) keep their own state. It decides nothing itself and writes no files.

use super::attempt::{Answer, Event};
use super::progress::{Progress, ProgressTicker};
use super::record::{DecisionLog, Outcome, Recording};
use super::retry::RetryClient;
use super::states::StateBackend;
use crate::registry::{Builtin, Entry};
use crate::sim::traffic::Arrival;
use crate::sim::{
    AlgorithmReport, ClientModel, DecisionSink, KeyTable, Metrics, Scenario, SimError,
};
use crate::time::Nanos;

/// How one algorithm's attempts are decided: by one server, or by a deployment.
pub(super) trait Decide {
    /// Decides `event` (checks and consumes), judging a denial's advice into `m` when
    /// the run judges it.
    fn decide(
        &mut self,
        event: &Event,
        m: &mut Metrics,
        keys: &KeyTable,
    ) -> Result<Decided, SimError>;

    /// A hint that `key` will be decided soon: its state may start loading into the
    /// cache. Changes nothing.
    fn prefetch(&self, _key: u32) {}

    /// The run ended at `end`: the final sweeps, and what was measured of the
    /// deciders themselves (memory, nodes), into `report`.
    fn finish(self, end: Nanos, report: &mut AlgorithmReport) -> Result<(), SimError>;
}

/// One attempt decided: the answer, and when it takes effect.
pub(super) struct Decided {
    pub(super) answer: Answer,
    /// When an admitted request reaches the service (later than its arrival when a
    /// shaper delayed it): the instant the window counts take.
    pub(super) passes: Nanos,
    /// When the client hears the answer (later than its arrival by a deployment's
    /// round trip): the instant a retrying client's clock goes on from.
    pub(super) heard: Nanos,
}

/// One algorithm's run, fed the stream a chunk at a time: what the threads and the
/// reference see of a [`Driver`], whatever decides it.
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
    /// change nothing (a redraw with open clients on one server): a stream of that
    /// key's arrivals alone gives it the same results.
    fn only_key(&self) -> Option<u32>;
}

/// What a run of one algorithm is for.
pub(super) enum Mode {
    /// A run that reports: every decision's row to the sink, every denial's advice
    /// judged, the window count of the first key admitted drawn with the timeline.
    Report(Box<dyn DecisionSink>),
    /// One configuration of a sweep: the metrics of `Report`, without rows, window
    /// count series or timeline (hundreds of runs share the memory).
    Sweep,
    /// The silent second pass: redraws the window count of this key (when the first
    /// pass drew another); no rows, nothing judged or compared.
    Redraw(u32),
}

/// What a run of one algorithm needs besides the algorithm.
pub(super) struct Job<'a> {
    pub(super) scenario: &'a Scenario,
    /// The algorithm, as registered: the run reports under its registry name.
    pub(super) entry: &'a Entry,
    pub(super) mode: Mode,
    pub(super) progress: Option<&'a Progress<'a>>,
    /// Where the keys' states live (read only when a store besides memory is built in).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(super) store: &'a StateBackend,
}

impl Job<'_> {
    /// Whether the run judges each denial's advice (every run but a redraw).
    pub(super) fn judged(&self) -> bool {
        !matches!(self.mode, Mode::Redraw(_))
    }
}

/// One algorithm's run between chunks: its decider and what every run keeps besides.
pub(super) struct Driver<'a, D: Decide> {
    sc: &'a Scenario,
    decider: D,
    /// `None` for open clients.
    retry: Option<RetryClient>,
    comparison: Comparison,
    record: Recording,
    decisions: DecisionLog,
    /// The first sink error: the run stops deciding and reports it.
    error: Option<SimError>,
    progress: ProgressTicker<'a>,
    /// A redraw with open clients on one server skips every key but this one.
    only_key: Option<u32>,
}

impl<'a, D: Decide> Driver<'a, D> {
    /// A run of `job`'s algorithm, decided by `decider` (all its states fresh).
    pub(super) fn new(job: Job<'a>, decider: D) -> Self {
        let sc = job.scenario;
        let name = job.entry.name().to_string();
        let open = sc.client == ClientModel::Open;
        // Deployed, even the sliding log is not the reference: the reference is the
        // one global log, and the deployed run is compared with it.
        let is_log =
            job.entry.builtin() == Some(Builtin::SlidingWindowLog) && sc.deployment.is_none();
        let (sink, track, series) = match job.mode {
            Mode::Report(sink) => (Some(sink), None, true),
            Mode::Sweep => (Some(Box::new(crate::sim::NoopSink) as _), None, false),
            Mode::Redraw(key) => (None, Some(key), true),
        };
        // With open clients a key's decisions depend on its own arrivals alone
        // (eviction forgets only states indistinguishable from fresh ones), so a redraw
        // on one server skips every other key.
        let only_key = track.filter(|_| open && sc.deployment.is_none());
        Driver {
            sc,
            decider,
            retry: RetryClient::new(sc),
            comparison: Comparison::new(open && sink.is_some(), is_log),
            record: Recording::new(sc, &name, track, series),
            decisions: DecisionLog::new(name, sink, sc),
            error: None,
            progress: ProgressTicker::new(job.progress, sc.duration),
            only_key,
        }
    }

    /// Decides one request attempt and records it; returns whether it was admitted.
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
        let decided = self.decider.decide(&event, &mut self.record.m, keys)?;
        let answer = decided.answer;
        self.record.attempt(&event, answer.allowed, decided.passes);
        let heard = Event {
            time: decided.heard,
            ..event
        };
        if answer.allowed {
            if let Some(retry) = self.retry.as_mut() {
                retry.admitted(&heard);
            }
        } else {
            if answer.retry_after.is_none() {
                self.record.m.never_fits += 1;
            }
            if let Some(retry) = self.retry.as_mut() {
                retry.denied(&heard, answer.retry_after);
            }
        }
        self.comparison.count(answer.allowed, log_allowed);
        self.decisions.record(&event, &answer, keys)?;
        self.progress.tick(event.time);
        Ok(answer.allowed)
    }

    /// Decides a new arrival, after the retries due at or before it: those were
    /// scheduled earlier, so at the same instant they go first.
    #[inline]
    fn arrive(
        &mut self,
        event: Event,
        log_allowed: Option<bool>,
        keys: &KeyTable,
    ) -> Result<bool, SimError> {
        while let Some(retry) = self.next_retry(event.time) {
            self.step(retry, None, keys)?;
        }
        self.step(event, log_allowed, keys)
    }

    /// The earliest queued retry due at or before `time`, if any.
    #[inline]
    fn next_retry(&mut self, time: Nanos) -> Option<Event> {
        self.retry.as_mut().and_then(|r| r.pop_due(time))
    }
}

impl<D: Decide> Drive for Driver<'_, D> {
    fn wants_reference(&self) -> bool {
        self.comparison.wanted
    }

    fn is_reference(&self) -> bool {
        self.comparison.is_reference
    }

    fn only_key(&self) -> Option<u32> {
        self.only_key
    }

    fn feed(
        &mut self,
        chunk: &[(u64, Arrival)],
        log_allowed: Option<&[bool]>,
        keys: &KeyTable,
        mut decided: Option<&mut Vec<bool>>,
    ) {
        if self.error.is_some() {
            return;
        }
        for (i, &(seq, a)) in chunk.iter().enumerate() {
            if let Some((_, ahead)) = chunk.get(i + crate::prefetch::AHEAD) {
                self.decider.prefetch(ahead.key);
            }
            // A log shorter than the chunk only follows a failed reference run, which
            // fails the whole run anyway.
            let log = log_allowed.and_then(|l| l.get(i).copied());
            match self.arrive(Event::arrival(seq, a), log, keys) {
                Ok(allowed) => {
                    if let Some(d) = decided.as_deref_mut() {
                        d.push(allowed);
                    }
                }
                Err(e) => {
                    self.error = Some(e);
                    return;
                }
            }
        }
        self.record.track_admitted();
    }

    fn finish(mut self: Box<Self>, keys: &KeyTable) -> Result<Outcome, SimError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        while let Some(retry) = self.next_retry(Nanos::MAX) {
            self.step(retry, None, keys)?;
        }
        self.record.track_admitted();
        self.decisions.finish()?;
        let Driver {
            sc,
            decider,
            retry,
            comparison,
            record,
            decisions,
            mut progress,
            ..
        } = *self;
        progress.finish();
        let mut outcome = record.finish(sc, decisions.name, keys);
        let m = &mut outcome.report.metrics;
        match &retry {
            None => comparison.report(m),
            Some(retry) => retry.report(m),
        }
        decider.finish(sc.duration, &mut outcome.report)?;
        Ok(outcome)
    }
}

/// One algorithm's decisions compared with the reference's.
pub(super) struct Comparison {
    /// This run counts `false_allow` / `false_deny` against the reference.
    pub(super) wanted: bool,
    /// This run's decisions *are* the reference's (the sliding log on the scenario's
    /// rules; with several `[[limit]]`s the composite of logs, as the reference is).
    pub(super) is_reference: bool,
    false_allow: u64,
    false_deny: u64,
}

impl Comparison {
    /// `open`: open clients, and a run that reports (not the silent second pass);
    /// `is_log`: the algorithm is the built-in sliding log, the reference itself.
    pub(super) fn new(open: bool, is_log: bool) -> Comparison {
        let is_reference = open && is_log;
        Comparison {
            wanted: open && !is_reference,
            is_reference,
            false_allow: 0,
            false_deny: 0,
        }
    }

    /// Counts one decision against the reference's, when there is one.
    #[inline]
    pub(super) fn count(&mut self, allowed: bool, log_allowed: Option<bool>) {
        if self.wanted
            && let Some(log_allowed) = log_allowed
        {
            self.false_allow += u64::from(allowed && !log_allowed);
            self.false_deny += u64::from(!allowed && log_allowed);
        }
    }

    /// Writes the counts into the run's metrics (open clients only).
    pub(super) fn report(&self, m: &mut Metrics) {
        m.false_allow = Some(self.false_allow);
        m.false_deny = Some(self.false_deny);
    }
}
