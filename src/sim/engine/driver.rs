//! One algorithm's run, whatever decides it: the stream fed a chunk at a time, each
//! request attempt told as one short story — decide, record, admit or deny (a retrying
//! client comes back later), compare with the reference, write the row — then the
//! retries still queued, and the metrics.
//!
//! How an attempt is decided is a [`Decide`]: one server (`server::Server`, its states
//! in memory or in Redis) or a deployment of several (`deployment::Deployed`). The
//! driver owns the order of one algorithm's events and the story of each attempt,
//! written once for both. Besides the driver this file holds the two things it keeps
//! per run that no decider needs: the retry clients with their [`EventQueue`], and the
//! progress ticker. It decides nothing itself and writes no files.
//!
//! Retry clients: a denied request is queued at `now + retry_after + U[0, jitter]`, up
//! to `max_retries` times; the queue orders attempts by time, same-instant attempts in
//! the order they were queued (an insertion counter, as in nexosim's queue), so a run is
//! deterministic by construction. Open clients have no retry client at all.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::record::{Answer, Counted, DecisionLog, Event, Outcome, Recording, Verdict};
use crate::registry::{Builtin, Entry};
use crate::sim::traffic::Arrival;
use crate::sim::{
    AlgorithmReport, ClientModel, DecisionSink, KeyTable, LatencyHistogram, Metrics, Scenario,
    SimError,
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

    /// The whole answer to the attempt just decided (`event`, given `verdict`): the
    /// fields of its row, read only when the sink wants rows. Changes nothing.
    fn answer(&self, event: &Event, verdict: Verdict) -> Answer;

    /// A hint that `key` will be decided soon: its state may start loading into the
    /// cache. Changes nothing.
    fn prefetch(&self, _key: u32) {}

    /// A hint that `key`, whose state was [`prefetch`](Decide::prefetch)ed a little
    /// earlier, will be decided sooner still: what its state keeps outside its slot
    /// may start loading. Changes nothing.
    fn prefetch_state(&self, _key: u32) {}

    /// The arrivals of the next chunk, about to be decided in order with nothing else
    /// in between (called only then: open clients, every key looked at). A decider
    /// whose answers come from afar may decide several at once (see `remote`).
    fn upcoming(&mut self, _arrivals: &[(u64, Arrival)]) {}

    /// The run ended at `end`: the final sweeps, and what was measured of the
    /// deciders themselves (memory, nodes), into `report`.
    fn finish(self, end: Nanos, report: &mut AlgorithmReport) -> Result<(), SimError>;
}

/// One attempt decided: the verdict, and when it takes effect.
pub(super) struct Decided {
    pub(super) verdict: Verdict,
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
    /// Decides the retries still queued and computes the metrics; `counted` is what
    /// the group's count found of this run, when the group counted it
    /// ([`Job::by_group`]).
    fn finish(
        self: Box<Self>,
        keys: &KeyTable,
        counted: Option<Counted>,
    ) -> Result<Outcome, SimError>;
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
    /// The run's group counts its admissions in the first rule's windows
    /// (`record::GroupCount`), from the decisions `Drive::feed` hands it.
    pub(super) by_group: bool,
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
            record: Recording::new(sc, &name, track, series, job.by_group),
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
        let verdict = decided.verdict;
        self.record
            .attempt(&event, verdict.allowed(), decided.passes);
        let heard = Event {
            time: decided.heard,
            ..event
        };
        if verdict.allowed() {
            if let Some(retry) = self.retry.as_mut() {
                retry.admitted(&heard);
            }
        } else {
            if verdict.retry_after().is_none() {
                self.record.m.never_fits += 1;
            }
            if let Some(retry) = self.retry.as_mut() {
                retry.denied(&heard, verdict.retry_after());
            }
        }
        self.comparison.count(verdict.allowed(), log_allowed);
        let decider = &self.decider;
        self.decisions
            .record(&event, keys, || decider.answer(&event, verdict))?;
        self.progress.tick(event.time);
        Ok(verdict.allowed())
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

    /// Decides each arrival of `chunk` in order (after the retries due before it), with
    /// the reference's decision on arrival `i` from `log(i)`, and hands each decision
    /// to `decided`.
    #[inline(always)]
    fn feed_each(
        &mut self,
        chunk: &[(u64, Arrival)],
        keys: &KeyTable,
        log: impl Fn(usize) -> Option<bool>,
        mut decided: impl FnMut(bool),
    ) -> Result<(), SimError> {
        for (i, &(seq, a)) in chunk.iter().enumerate() {
            // Two steps ahead: the slot first, then what the state it holds points at.
            if let Some((_, ahead)) = chunk.get(i + 2 * crate::prefetch::AHEAD) {
                self.decider.prefetch(ahead.key);
            }
            if let Some((_, near)) = chunk.get(i + crate::prefetch::AHEAD) {
                self.decider.prefetch_state(near.key);
            }
            decided(self.arrive(Event::arrival(seq, a), log(i), keys)?);
        }
        Ok(())
    }

    /// Whether the chunk's arrivals are decided exactly in their order with nothing in
    /// between: no retries, and every key looked at (see [`Decide::upcoming`]).
    fn in_stream_order(&self) -> bool {
        self.retry.is_none() && self.only_key.is_none()
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
        decided: Option<&mut Vec<bool>>,
    ) {
        if self.error.is_some() {
            return;
        }
        if self.in_stream_order() {
            self.decider.upcoming(chunk);
        }
        // A log shorter than the chunk only follows a failed reference run, which fails
        // the whole run anyway. One loop per case, so no arrival asks which case it is.
        let fed = match (log_allowed, decided) {
            (None, None) => self.feed_each(chunk, keys, |_| None, |_| {}),
            (Some(log), None) => self.feed_each(chunk, keys, |i| log.get(i).copied(), |_| {}),
            (None, Some(d)) => self.feed_each(chunk, keys, |_| None, |a| d.push(a)),
            (Some(log), Some(d)) => {
                self.feed_each(chunk, keys, |i| log.get(i).copied(), |a| d.push(a))
            }
        };
        match fed {
            Ok(()) => self.record.track_admitted(),
            Err(e) => self.error = Some(e),
        }
    }

    fn finish(
        mut self: Box<Self>,
        keys: &KeyTable,
        counted: Option<Counted>,
    ) -> Result<Outcome, SimError> {
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
        let mut outcome = record.finish(sc, decisions.name, keys, counted);
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

/// Progress units per algorithm.
pub const PROGRESS_STEPS: u64 = 1_000;

/// The run's progress, shared by its worker threads.
pub(super) struct Progress<'a> {
    done: AtomicU64,
    total: u64,
    callback: Option<&'a (dyn Fn(u64, u64) + Sync)>,
}

impl<'a> Progress<'a> {
    /// A run of `algorithms` algorithms, reporting to `callback`.
    pub(super) fn new(
        algorithms: usize,
        callback: Option<&'a (dyn Fn(u64, u64) + Sync)>,
    ) -> Progress<'a> {
        Progress {
            done: AtomicU64::new(0),
            total: algorithms as u64 * PROGRESS_STEPS,
            callback,
        }
    }

    fn add(&self, units: u64) {
        if units == 0 {
            return;
        }
        let done = self.done.fetch_add(units, AtomicOrdering::Relaxed) + units;
        if let Some(callback) = self.callback {
            callback(done, self.total);
        }
    }
}

/// One algorithm's share of the progress: [`PROGRESS_STEPS`] units over its simulated
/// time, reported every 4096 decisions.
pub(super) struct ProgressTicker<'a> {
    progress: Option<&'a Progress<'a>>,
    duration: Nanos,
    events: u64,
    reported: u64,
}

impl<'a> ProgressTicker<'a> {
    /// `None`: a run that reports nothing (the silent second pass).
    pub(super) fn new(progress: Option<&'a Progress<'a>>, duration: Nanos) -> Self {
        ProgressTicker {
            progress,
            duration,
            events: 0,
            reported: 0,
        }
    }

    /// One decision was taken at `now`.
    #[inline]
    pub(super) fn tick(&mut self, now: Nanos) {
        self.events += 1;
        if self.events.is_multiple_of(4096)
            && let Some(p) = self.progress
        {
            let duration = self.duration.as_u64();
            let step = (u128::from(now.as_u64()) * u128::from(PROGRESS_STEPS)
                / u128::from(duration)) as u64;
            let step = step.min(PROGRESS_STEPS);
            p.add(step.saturating_sub(self.reported));
            self.reported = self.reported.max(step);
        }
    }

    /// The run is over: reports the units still missing.
    pub(super) fn finish(&mut self) {
        if let Some(p) = self.progress {
            p.add(PROGRESS_STEPS - self.reported);
            self.reported = PROGRESS_STEPS;
        }
    }
}

/// The retry clients of one algorithm's run.
pub(super) struct RetryClient {
    max_retries: u32,
    jitter: Nanos,
    jitter_rng: ChaCha8Rng,
    /// Retries not yet due.
    queue: EventQueue,
    /// Retries at or after this instant would not happen in the run: `unfinished`.
    end: Nanos,
    succeeded: u64,
    gave_up: u64,
    unfinished: u64,
    wasted: u64,
    latency: LatencyHistogram,
}

impl RetryClient {
    /// The scenario's retry clients; `None` for open clients.
    pub(super) fn new(sc: &Scenario) -> Option<RetryClient> {
        let ClientModel::Retry {
            max_retries,
            jitter,
        } = sc.client
        else {
            return None;
        };
        // Stream 0 of the seed is the jitter's; traffic sources use streams 1, 2, ...
        let mut jitter_rng = ChaCha8Rng::seed_from_u64(sc.seed);
        jitter_rng.set_stream(0);
        Some(RetryClient {
            max_retries,
            jitter,
            jitter_rng,
            queue: EventQueue::default(),
            end: sc.duration,
            succeeded: 0,
            gave_up: 0,
            unfinished: 0,
            wasted: 0,
            latency: LatencyHistogram::default(),
        })
    }

    /// The earliest retry due at or before `time`, if any.
    #[inline]
    pub(super) fn pop_due(&mut self, time: Nanos) -> Option<Event> {
        self.queue.pop_due(time)
    }

    /// `event` was admitted at its time.
    #[inline]
    pub(super) fn admitted(&mut self, event: &Event) {
        self.succeeded += 1;
        self.latency.record(event.time - event.first);
    }

    /// `event` was denied with the advice to wait `retry_after`; `None` when the
    /// request can never pass (its cost exceeds the capacity): then it is not retried.
    #[inline]
    pub(super) fn denied(&mut self, event: &Event, retry_after: Option<Nanos>) {
        if event.attempt > 0 {
            self.wasted += 1;
        }
        let Some(retry_after) = retry_after else {
            return;
        };
        if event.attempt >= self.max_retries {
            self.gave_up += 1;
            return;
        }
        let extra = match self.jitter.as_u64() {
            0 => 0,
            j => self.jitter_rng.random_range(0..=j),
        };
        let at = event.time + retry_after + Nanos::new(extra);
        if at >= self.end {
            self.unfinished += 1;
        } else {
            self.queue.push(Event {
                time: at,
                attempt: event.attempt + 1,
                ..*event
            });
        }
    }

    /// Writes the clients' counts and latency quantiles into the run's metrics.
    pub(super) fn report(&self, m: &mut Metrics) {
        m.succeeded = Some(self.succeeded);
        m.gave_up = Some(self.gave_up);
        m.unfinished = Some(self.unfinished);
        m.wasted_retries = Some(self.wasted);
        m.latency_p50_ns = self.latency.quantile(0.5);
        m.latency_p99_ns = self.latency.quantile(0.99);
        m.latency_max_ns = self.latency.max();
    }
}

/// A min-heap on `(time, insertion order)`: same-instant events leave in FIFO order.
#[derive(Default)]
pub(super) struct EventQueue {
    heap: BinaryHeap<Reverse<Queued>>,
    inserted: u64,
}

struct Queued {
    order: u64,
    event: Event,
}

impl Queued {
    fn key(&self) -> (Nanos, u64) {
        (self.event.time, self.order)
    }
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl EventQueue {
    pub(super) fn push(&mut self, event: Event) {
        self.heap.push(Reverse(Queued {
            order: self.inserted,
            event,
        }));
        self.inserted += 1;
    }

    /// The earliest event, if it is due at or before `time`.
    #[inline]
    pub(super) fn pop_due(&mut self, time: Nanos) -> Option<Event> {
        if self.heap.peek()?.0.event.time > time {
            return None;
        }
        self.heap.pop().map(|Reverse(q)| q.event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A retry attempt at `time` of the arrival numbered `seq`.
    fn at(time: u64, seq: u64) -> Event {
        Event {
            time: Nanos::new(time),
            seq,
            key: 0,
            cost: 1,
            attempt: 1,
            first: Nanos::ZERO,
        }
    }

    #[test]
    fn the_event_queue_is_fifo_among_equal_instants() {
        let mut q = EventQueue::default();
        for (t, s) in [(5, 0), (3, 1), (5, 2), (3, 3)] {
            q.push(at(t, s));
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.pop_due(Nanos::MAX))
            .map(|e| e.seq)
            .collect();
        assert_eq!(order, [1, 3, 0, 2]);
        assert!(q.pop_due(Nanos::ZERO).is_none());
    }

    /// Many attempts at one instant, among others, leave in exactly the order queued
    /// (a heap alone would shuffle them), and nothing leaves before it is due.
    #[test]
    fn many_attempts_at_one_instant_leave_in_the_order_they_were_queued() {
        let mut q = EventQueue::default();
        for seq in 0..40 {
            q.push(at(if seq % 3 == 0 { 9 } else { 7 }, seq));
        }
        let sevens: Vec<u64> = (0..40).filter(|s| s % 3 != 0).collect();
        let nines: Vec<u64> = (0..40).filter(|s| s % 3 == 0).collect();
        assert!(q.pop_due(Nanos::new(6)).is_none());
        let due_at_seven: Vec<u64> = std::iter::from_fn(|| q.pop_due(Nanos::new(7)))
            .map(|e| e.seq)
            .collect();
        assert_eq!(due_at_seven, sevens);
        assert!(q.pop_due(Nanos::new(8)).is_none());
        let due_at_nine: Vec<u64> = std::iter::from_fn(|| q.pop_due(Nanos::new(9)))
            .map(|e| e.seq)
            .collect();
        assert_eq!(due_at_nine, nines);
    }
}
