//! What a pass is fed, chunk by chunk: the arrivals — the stream generated a chunk at a
//! time, fanned out to worker threads, and the [`History`] of a first pass, from which a
//! second one replays its keys' arrivals without generating (or parsing) the stream
//! again — and, for open clients, the exact reference's decision on each of them.
//!
//! Generating a stream (drawing clients, parsing a trace) costs as much as a few
//! algorithms' decisions, so it is done once, by the calling thread, and each chunk is
//! sent to every worker: a run's groups when there are several, and a sweep's workers.
//!
//! The reference is the sliding log (or a composite of logs, one per `[[limit]]`) on the
//! same stream, whose decisions every other algorithm's are compared with to count
//! `false_allow` / `false_deny`. A group gets them once per chunk, from the first source
//! that has them: the log it runs as an algorithm, the group that runs the log (over a
//! channel), or its own copy of the log ([`ReferenceFeed`]).
//!
//! After the group's drivers have decided a chunk, the [`GroupCount`] counts the
//! admissions of those it can count together in the trailing windows: one tracker with
//! a lane per run, instead of a tracker per run.
//!
//! The stream and the log are deterministic, so who generates the stream and where the
//! reference's decisions come from change no result; counting together changes no count.
//! Nothing here decides a request for an algorithm.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender};

use super::driver::Drive;
use super::record::Counted;
use super::server::Sweeps;
use crate::algorithm::{Algorithm, SlidingWindowLog};
use crate::composite::Composite;
use crate::dense::DenseLimiter;
use crate::registry::Entry;
use crate::sim::metrics::{Lanes, MAX_LANES, SeriesThinner, WindowTracker};
use crate::sim::traffic::Arrival;
use crate::sim::{ArrivalStream, ClientModel, KeyTable, Scenario, ScenarioError};
use crate::time::Nanos;

/// Arrivals generated and fed to the algorithms at a time (512 KB of them): large
/// enough that the per-chunk dynamic dispatch is noise and that the threads rarely
/// wait for each other. Each wait on a bounded channel is a context switch; at 1,024 a
/// chunk, `scale_1_key` made ~20,000 of them and spent 5–15 % more CPU (docs/
/// performance.md, "Chunks of 16,384").
pub(super) const CHUNK: usize = 16384;

/// Chunks a worker (or a group waiting for the reference's decisions) may fall behind
/// before the sender waits.
pub(super) const SLACK: usize = 4;

/// A chunk of the stream, `(seq, arrival)` in order, shared by every worker.
pub(super) type Chunk = Arc<Vec<(u64, Arrival)>>;

/// Refills `chunk` with up to `size` arrivals ([`CHUNK`] but in tests); empty at the
/// end of the stream.
pub(super) fn next_chunk(
    stream: &mut ArrivalStream,
    chunk: &mut Vec<(u64, Arrival)>,
    size: usize,
) -> Result<(), ScenarioError> {
    chunk.clear();
    stream.fill(chunk, size)
}

/// What a worker receives: a chunk of the stream, or word that the stream is complete.
#[derive(Clone)]
pub(super) enum Message {
    Chunk {
        arrivals: Chunk,
        /// Names of the keys first seen in this chunk, in id order: each worker interns
        /// them into its own table, so its ids are the stream's.
        new_keys: Arc<[Arc<str>]>,
    },
    /// The stream is complete; its history, when one was kept and fits.
    End(Option<Arc<History>>),
}

/// Generates `scenario`'s stream once and sends each chunk (of `size` arrivals, the
/// last one fewer) to every worker, then
/// [`Message::End`] (with the stream's [`History`] when `keep_history`). On an error the
/// senders are dropped without `End`: the workers see the stream stop, and the caller
/// reports the error.
pub(super) fn produce(
    scenario: &Scenario,
    senders: Vec<SyncSender<Message>>,
    keep_history: bool,
    size: usize,
) -> Result<(), ScenarioError> {
    let mut stream = ArrivalStream::new(scenario)?;
    let mut history = keep_history.then(History::default);
    let mut sent = VecDeque::new();
    let mut known = 0;
    loop {
        let mut chunk = unshared(&mut sent, size);
        let arrivals = Arc::get_mut(&mut chunk).expect("no worker holds a chunk to refill");
        next_chunk(&mut stream, arrivals, size)?;
        History::keep(&mut history, arrivals);
        let message = if arrivals.is_empty() {
            Message::End(history.take().map(Arc::new))
        } else {
            let new_keys = stream.keys().share(known);
            known = stream.keys().len();
            Message::Chunk {
                arrivals: Arc::clone(&chunk),
                new_keys,
            }
        };
        for tx in &senders {
            // A worker that stopped has panicked; joining it reports that.
            let _ = tx.send(message.clone());
        }
        if matches!(message, Message::End(_)) {
            return Ok(());
        }
        sent.push_back(chunk);
        if sent.len() > 2 * SLACK {
            sent.pop_front();
        }
    }
}

/// The oldest chunk `sent` if every worker is done with it (refilled in place: no
/// allocation, no copy of its 512 KB), else a new one with room for `size`.
fn unshared(sent: &mut VecDeque<Chunk>, size: usize) -> Chunk {
    match sent.front_mut().map(Arc::get_mut) {
        Some(Some(_)) => sent.pop_front().expect("the front was just seen"),
        _ => Arc::new(Vec::with_capacity(size)),
    }
}

/// A worker's end of the fan-out: the chunks as they come, and its own copy of the
/// stream's key table.
pub(super) struct Received {
    rx: Receiver<Message>,
    keys: KeyTable,
    history: Option<Arc<History>>,
}

/// The producer stopped before the end of the stream (its error is the run's).
pub(super) struct Stopped;

impl Received {
    pub(super) fn new(rx: Receiver<Message>) -> Received {
        Received {
            rx,
            keys: KeyTable::default(),
            history: None,
        }
    }

    /// The next chunk, with the keys it introduced added to [`keys`](Self::keys);
    /// `None` once the stream is complete.
    pub(super) fn next(&mut self) -> Result<Option<Chunk>, Stopped> {
        match self.rx.recv() {
            Ok(Message::Chunk { arrivals, new_keys }) => {
                for name in new_keys.iter() {
                    self.keys.intern_shared(name);
                }
                Ok(Some(arrivals))
            }
            Ok(Message::End(history)) => {
                self.history = history;
                Ok(None)
            }
            Err(_) => Err(Stopped),
        }
    }

    /// The keys seen so far.
    pub(super) fn keys(&self) -> &KeyTable {
        &self.keys
    }

    /// The key table and the stream's history (if the producer kept one), once the
    /// stream is over.
    pub(super) fn finish(self) -> (KeyTable, Option<Arc<History>>) {
        (self.keys, self.history)
    }
}

/// Every arrival of a stream, in order, a few bytes each, so that a second pass can
/// replay the arrivals of a few keys instead of generating the whole stream again (for
/// a trace, parsing every line again, which is most of a replay's cost).
///
/// Each arrival is `key · 2 + (cost ≠ 1)`, the nanoseconds since the previous arrival,
/// and the cost when it is not 1, each as a LEB128 varint: 5–7 bytes for the bundled
/// traces and Poisson streams. A history that would outgrow [`History::BUDGET`] is
/// dropped (as is one whose instants go backwards, which a stream never does): the
/// second pass then generates the stream again, with the same result.
#[derive(Debug, Default)]
pub(super) struct History {
    bytes: Vec<u8>,
    last: u64,
}

impl History {
    /// The most bytes a history may take (about 10 M arrivals).
    pub(super) const BUDGET: usize = 64 << 20;

    /// Adds `chunk` to `history`, or drops the history when it no longer fits.
    pub(super) fn keep(history: &mut Option<History>, chunk: &[(u64, Arrival)]) {
        if let Some(h) = history.as_mut()
            && !h.push(chunk)
        {
            *history = None;
        }
    }

    /// Appends `chunk`; false when the history can no longer be kept.
    fn push(&mut self, chunk: &[(u64, Arrival)]) -> bool {
        for (_, a) in chunk {
            let Some(gap) = a.time.as_u64().checked_sub(self.last) else {
                return false;
            };
            let other_cost = a.cost != 1;
            put_varint(
                &mut self.bytes,
                u64::from(a.key) << 1 | u64::from(other_cost),
            );
            put_varint(&mut self.bytes, gap);
            if other_cost {
                put_varint(&mut self.bytes, a.cost);
            }
            self.last = a.time.as_u64();
        }
        self.bytes.len() <= Self::BUDGET
    }

    /// The arrivals of the keys `wanted`, in stream order, numbered from 0 as
    /// [`ArrivalStream::only`] numbers them.
    pub(super) fn replay<'a>(
        &'a self,
        wanted: &'a [u32],
    ) -> impl Iterator<Item = (u64, Arrival)> + 'a {
        let mut at = 0;
        let mut time = 0u64;
        let mut seq = 0;
        std::iter::from_fn(move || {
            while at < self.bytes.len() {
                let tagged = get_varint(&self.bytes, &mut at);
                time += get_varint(&self.bytes, &mut at);
                let cost = match tagged & 1 {
                    0 => 1,
                    _ => get_varint(&self.bytes, &mut at),
                };
                // Pushed from a `u32` shifted left by one: the shift back fits.
                let key = (tagged >> 1) as u32;
                if wanted.contains(&key) {
                    let arrival = Arrival {
                        time: Nanos::new(time),
                        key,
                        cost,
                    };
                    seq += 1;
                    return Some((seq - 1, arrival));
                }
            }
            None
        })
    }

    /// Bytes held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }
}

/// Appends `v` as a LEB128 varint: 7 bits a byte, low bits first.
fn put_varint(bytes: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        bytes.push((v as u8) | 0x80);
        v >>= 7;
    }
    bytes.push(v as u8);
}

/// Reads the LEB128 varint at `*at` (written by [`put_varint`]) and moves past it.
fn get_varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*at) {
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    v
}

/// How a group gets the reference's decisions (open clients only).
pub(super) enum Share {
    /// Computes them itself, if it needs them: from its own sliding-log driver, or
    /// from a separate copy of the log.
    Alone,
    /// Owns the sliding-log driver and sends each chunk's decisions to these groups.
    Send(Vec<SyncSender<Vec<bool>>>),
    /// Receives each chunk's decisions from the group that owns the sliding log.
    Receive(Receiver<Vec<bool>>),
}

/// Where one group's reference decisions come from, chunk by chunk.
pub(super) struct ReferenceFeed {
    /// The driver that is the reference itself: its decisions on the chunk are the
    /// log's, so it runs first and no separate copy is needed.
    pub(super) log_driver: Option<usize>,
    /// Groups that receive the log driver's decisions.
    senders: Vec<SyncSender<Vec<bool>>>,
    /// The group's decisions come from the group that runs the log.
    receiver: Option<Receiver<Vec<bool>>>,
    /// The group's own copy of the log, when it needs one and has no other source.
    reference: Option<Reference>,
    /// The reference's decisions on the current chunk.
    allowed: Vec<bool>,
}

impl ReferenceFeed {
    pub(super) fn new(
        scenario: &Scenario,
        drivers: &[Box<dyn Drive + '_>],
        share: Share,
        chunk: usize,
    ) -> ReferenceFeed {
        let log_driver = drivers.iter().position(|d| d.is_reference());
        let (senders, receiver) = match share {
            Share::Send(senders) if log_driver.is_some() => (senders, None),
            Share::Receive(receiver) => (Vec::new(), Some(receiver)),
            _ => (Vec::new(), None),
        };
        let reference = (log_driver.is_none()
            && receiver.is_none()
            && drivers.iter().any(|d| d.wants_reference()))
        .then(|| Reference::new(scenario));
        ReferenceFeed {
            log_driver,
            senders,
            receiver,
            reference,
            allowed: Vec::with_capacity(chunk),
        }
    }

    /// The reference's decision on each arrival of `chunk`, or `None` when the group
    /// has no reference. Runs the log driver (if the group has one) on the chunk.
    pub(super) fn decide(
        &mut self,
        chunk: &[(u64, Arrival)],
        drivers: &mut [Box<dyn Drive + '_>],
        keys: &KeyTable,
    ) -> Option<&[bool]> {
        self.allowed.clear();
        if let Some(r) = self.reference.as_mut() {
            r.decide(chunk, &mut self.allowed);
        }
        if let Some(i) = self.log_driver {
            drivers[i].feed(chunk, None, keys, Some(&mut self.allowed));
            // A receiver that has stopped (its run failed) is simply dropped.
            self.senders
                .retain(|tx| tx.send(self.allowed.clone()).is_ok());
        }
        if let Some(rx) = self.receiver.as_ref() {
            match rx.recv() {
                Ok(decided) => self.allowed = decided,
                // The log's run failed, which fails the whole run: stop counting.
                Err(_) => self.receiver = None,
            }
        }
        (self.reference.is_some() || self.log_driver.is_some() || self.receiver.is_some())
            .then_some(self.allowed.as_slice())
    }
}

/// The group's own copy of the reference. Its decisions depend only on the stream, so
/// one copy serves every algorithm of a group.
struct Reference {
    limiter: ReferenceLimiter,
    sweeps: Sweeps,
}

/// The log for one rule, or a composite of logs (exact for every rule) when the
/// scenario has several `[[limit]]`s; an enum so the common case stays unboxed.
enum ReferenceLimiter {
    One(DenseLimiter<SlidingWindowLog>),
    All(DenseLimiter<Composite<SlidingWindowLog>>),
}

impl ReferenceLimiter {
    fn allows(&mut self, key: u32, cost: u64, now: Nanos) -> bool {
        match self {
            ReferenceLimiter::One(l) => admits(l, key, cost, now),
            ReferenceLimiter::All(l) => admits(l, key, cost, now),
        }
    }

    fn evict_idle(&mut self, now: Nanos) {
        match self {
            ReferenceLimiter::One(l) => l.evict_idle(now),
            ReferenceLimiter::All(l) => l.evict_idle(now),
        };
    }
}

/// Whether `limiter` admits `key`'s request of `cost` at `now`, as `try_acquire_n`
/// decides it (a cost above the capacity is refused before the key is looked up), but
/// without the rest of its answer (`remaining`, the waits), which nobody reads here.
fn admits<A: Algorithm>(limiter: &mut DenseLimiter<A>, key: u32, cost: u64, now: Nanos) -> bool {
    crate::limiter::fits(limiter.algorithm(), cost).is_ok()
        && limiter.with_state(key, now, |a, s, now| a.try_acquire(s, now, cost))
}

impl Reference {
    fn new(sc: &Scenario) -> Reference {
        let limiter = if sc.extra_limits.is_empty() {
            ReferenceLimiter::One(DenseLimiter::new(SlidingWindowLog::new(sc.rule)))
        } else {
            let logs = std::iter::once(sc.rule)
                .chain(sc.extra_limits.iter().copied())
                .map(SlidingWindowLog::new);
            let all = Composite::new(logs.collect()).expect("a scenario has at least one rule");
            ReferenceLimiter::All(DenseLimiter::new(all))
        };
        Reference {
            limiter,
            sweeps: Sweeps::new(sc),
        }
    }

    /// Whether the log admits each arrival of `chunk`, into `out`.
    fn decide(&mut self, chunk: &[(u64, Arrival)], out: &mut Vec<bool>) {
        for (_, a) in chunk {
            while let Some(at) = self.sweeps.next_due(a.time) {
                // Idle keys are forgotten, as the algorithms' own limiters do, to keep
                // memory bounded; that never changes a decision.
                self.limiter.evict_idle(at);
            }
            out.push(self.limiter.allows(a.key, a.cost, a.time));
        }
    }
}

/// The first rule's trailing-window counts of a group's runs that see every arrival at
/// its instant and admit it there or not at all, counted together: one
/// [`WindowTracker`] with a lane per run, fed each chunk's decisions once every run of
/// the group has decided it. An arrival admitted by several runs is one entry of its
/// FIFO, and a key's counts of every run share a cache line, where a tracker per run
/// would touch one of each per run. The counts are exactly those of a tracker per run
/// (see the tests of `metrics::window`); only the memory they take differs. The
/// default counts none of its runs (each counts its own).
#[derive(Default)]
pub(super) struct GroupCount {
    /// Per run of the group, in the group's order: its lane, if the group counts it.
    lanes: Vec<Option<usize>>,
    /// Keep each lane's series (every run but a sweep's).
    keep_series: bool,
    /// `None` when the group counts no run.
    tracker: Option<WindowTracker>,
    /// Per lane: the series of its tracked key's count.
    series: Vec<SeriesThinner>,
    /// Per lane: its run's decisions on the chunk being fed.
    decided: Vec<Vec<bool>>,
    /// Per arrival of the chunk being counted: the lanes that admitted it.
    masks: Vec<Lanes>,
    /// The chunk's admissions, with the lanes that admitted each.
    admissions: Vec<(u32, Nanos, u64, Lanes)>,
}

impl GroupCount {
    /// A count for the runs of `entries` (in the group's order) that can be counted
    /// together ([`GroupCount::can_count`]), up to [`MAX_LANES`] of them; each run's
    /// `Job` must say whether it is counted, as [`counts`](Self::counts) does. Without
    /// `keep_series` (a sweep's runs), no series is kept.
    pub(super) fn new(sc: &Scenario, entries: &[&Entry], keep_series: bool) -> GroupCount {
        let mut n = 0;
        let lanes: Vec<Option<usize>> = entries
            .iter()
            .map(|e| {
                let lane = (GroupCount::can_count(sc, e) && n < MAX_LANES).then_some(n);
                n += usize::from(lane.is_some());
                lane
            })
            .collect();
        let rule = sc.rule;
        let span = if keep_series {
            sc.duration
        } else {
            Nanos::ZERO
        };
        GroupCount {
            lanes,
            keep_series,
            tracker: (n > 0)
                .then(|| WindowTracker::with_lanes(rule.window(), rule.max_requests(), n)),
            series: (0..n).map(|_| SeriesThinner::new(span)).collect(),
            decided: vec![Vec::new(); n],
            masks: Vec::new(),
            admissions: Vec::new(),
        }
    }

    /// Whether a run of `entry` on `sc` can be counted with others: open clients on one
    /// server (every arrival decided at its instant, in the stream's order), a built-in
    /// (a policer: admitted at its instant or denied, never delayed), and one rule.
    pub(super) fn can_count(sc: &Scenario, entry: &Entry) -> bool {
        sc.client == ClientModel::Open
            && sc.deployment.is_none()
            && sc.extra_limits.is_empty()
            && entry.builtin().is_some()
    }

    /// Whether run `i` of the group is counted here.
    pub(super) fn counts(&self, i: usize) -> bool {
        self.lanes.get(i).copied().flatten().is_some()
    }

    /// Where run `i` hands its decisions on the next chunk, when it is counted here.
    pub(super) fn decisions(&mut self, i: usize) -> Option<&mut Vec<bool>> {
        let lane = self.lanes.get(i).copied().flatten()?;
        let decided = &mut self.decided[lane];
        decided.clear();
        Some(decided)
    }

    /// Counts `chunk`'s admissions, once every run has decided it; `log` is the
    /// decisions of run `log.0`, which were handed to the reference instead.
    pub(super) fn count(&mut self, chunk: &[(u64, Arrival)], log: Option<(usize, &[bool])>) {
        let Some(tracker) = self.tracker.as_mut() else {
            return;
        };
        let masks = &mut self.masks;
        masks.clear();
        masks.resize(chunk.len(), 0);
        for (i, lane) in self.lanes.iter().enumerate() {
            let Some(l) = *lane else { continue };
            let decided = match log {
                Some((j, log)) if j == i => log,
                _ => &self.decided[l],
            };
            for (mask, &allowed) in masks.iter_mut().zip(decided) {
                *mask |= Lanes::from(allowed) << l;
            }
        }
        self.admissions.clear();
        self.admissions.extend(
            chunk
                .iter()
                .zip(masks.iter())
                .filter(|(_, m)| **m != 0)
                .map(|((_, a), &mask)| (a.key, a.time, a.cost, mask)),
        );
        let (series, keep) = (&mut self.series, self.keep_series);
        tracker.admit_lanes(&self.admissions, |l, t, c| {
            if keep {
                series[l].push(t, c);
            }
        });
    }

    /// The run is over at `end`: per run of the group, in order, what its lane found
    /// (none at all for a group that counts none of its runs).
    pub(super) fn finish(self, end: Nanos) -> Vec<Option<Counted>> {
        let GroupCount {
            lanes,
            keep_series,
            tracker,
            mut series,
            ..
        } = self;
        let Some(mut tracker) = tracker else {
            return lanes.iter().map(|_| None).collect();
        };
        tracker.finish_lanes(end, |l, t, c| {
            if keep_series {
                series[l].push(t, c);
            }
        });
        // Lanes are numbered in the group's order, so the series come in that order.
        let mut series = series.into_iter();
        let mut counted = |l: usize| Some(Counted::new(tracker.lane(l), series.next()?));
        lanes
            .iter()
            .map(|lane| lane.and_then(&mut counted))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(time: u64, key: u32, cost: u64) -> (u64, Arrival) {
        let a = Arrival {
            time: Nanos::new(time),
            key,
            cost,
        };
        (0, a)
    }

    /// Every field round-trips at its extremes (key `u32::MAX`, gaps of 0 and of the
    /// whole clock, cost 0, 1 and `u64::MAX`), and only the wanted keys come back, in
    /// order, numbered from 0.
    #[test]
    fn a_history_replays_exactly_the_wanted_keys_arrivals() {
        let all = [
            arrival(0, 0, 1),
            arrival(0, u32::MAX, u64::MAX),
            arrival(5, 7, 0),
            arrival(5, 0, 3),
            arrival(1 << 40, 7, 1),
            arrival(u64::MAX, 0, 1),
        ];
        let mut history = Some(History::default());
        History::keep(&mut history, &all[..2]);
        History::keep(&mut history, &all[2..]);
        let history = history.expect("a short stream fits");
        for wanted in [vec![0], vec![7, u32::MAX], vec![1], vec![0, 7, u32::MAX]] {
            let expected: Vec<(u64, Arrival)> = all
                .iter()
                .filter(|(_, a)| wanted.contains(&a.key))
                .enumerate()
                .map(|(i, &(_, a))| (i as u64, a))
                .collect();
            let got: Vec<_> = history.replay(&wanted).collect();
            assert_eq!(got, expected, "wanted {wanted:?}");
        }
    }

    /// A history whose instants go backwards, or that outgrows its budget, is dropped
    /// rather than kept wrong or unbounded.
    #[test]
    fn a_history_is_dropped_when_it_cannot_be_kept() {
        let mut backwards = Some(History::default());
        History::keep(&mut backwards, &[arrival(10, 1, 1), arrival(9, 1, 1)]);
        assert!(backwards.is_none());

        // Each arrival but a chunk's first takes 1 + 8 bytes here (a gap of 2^50 ns).
        let big: Vec<_> = (0..1024u64).map(|i| arrival(i << 50, 0, 1)).collect();
        let mut history = Some(History::default());
        let mut kept = 0;
        while let Some(h) = history.as_ref() {
            assert!(h.len() <= History::BUDGET, "{} bytes kept", h.len());
            kept += 1;
            History::keep(&mut history, &big);
            if let Some(h) = history.as_mut() {
                h.last = 0;
            }
        }
        assert!(
            kept > History::BUDGET / (10 * 1024),
            "dropped after {kept} chunks"
        );
    }

    /// The producer refills the oldest chunk in place once every worker has let go of
    /// it, and makes a new one (room for a whole chunk) while any still holds it. The
    /// decisions are the same either way; only this test sees the difference.
    #[test]
    fn a_chunk_no_worker_holds_is_refilled_and_a_held_one_is_not() {
        let old: Chunk = Arc::new(vec![arrival(1, 0, 1)]);
        let mut sent = VecDeque::from([Arc::clone(&old)]);
        let fresh = unshared(&mut sent, 5);
        assert!(!Arc::ptr_eq(&fresh, &old) && fresh.is_empty() && fresh.capacity() == 5);
        assert_eq!(sent.len(), 1, "a held chunk stays until it is let go");
        drop(old);
        let reused = unshared(&mut sent, 5);
        assert!(
            sent.is_empty() && reused.len() == 1,
            "the let-go chunk, unrefilled yet"
        );
    }
}
