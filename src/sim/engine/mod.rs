//! The discrete-event engine: feeds each algorithm its stream through the library's
//! own [`RateLimiter`] on a [`FakeClock`], and measures what it decides.
//!
//! The engine owns event order and client behaviour; it never decides a request
//! itself (the limiter does) and never writes files (sinks do).
//!
//! ## How a run works
//! - Algorithms are dealt round-robin to the worker threads. A thread generates the
//!   arrival stream from the seed once, a chunk at a time, and feeds each chunk to
//!   every algorithm it owns in turn: every algorithm sees the identical stream, the
//!   stream is never held in memory whole, and a thread's results do not depend on
//!   which other algorithms share it, so a threaded run equals a sequential one.
//! - Open clients: the sliding log (the exact reference) decides each chunk once, and
//!   every other algorithm counts `false_allow` / `false_deny` against it. When the
//!   log is one of the algorithms run, its own decisions are the reference, and the
//!   thread running it sends them to the other threads chunk by chunk.
//! - Retry clients: a denied request is queued at `now + retry_after + U[0, jitter]`.
//!   Retries due at the same instant as a new arrival go first (they were scheduled
//!   earlier); retries at the same instant keep FIFO order (an insertion counter, as in
//!   nexosim's queue). A retry that would fall at or after `duration` is `unfinished`.
//! - Every denial is judged: the key's state is asked, at later instants, whether the
//!   request would pass (`Algorithm::would_pass`, nothing consumed), to find the exact
//!   earliest instant and judge `retry_after` against it. This assumes passing is
//!   monotone in time when nothing else happens, which holds for all six built-in
//!   algorithms. The instant found is remembered per key until the key's next
//!   admission (see `Probes`).
//! - The engine owns its limiters, so it decides through their lock-free `&mut` path;
//!   the trailing-window counts are updated after each chunk, in order.
//! - A janitor sweep (every `max(W, duration / 1000)`) evicts idle keys, as a real
//!   deployment would, and samples `peak_keys` and per-key state size.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::mpsc::{Receiver, SyncSender};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::metrics::{
    BucketCursor, Honesty, LatencyHistogram, Metrics, SeriesThinner, Timeline, WindowTracker,
};
use super::scenario::{ClientModel, Scenario, ScenarioError};
use super::traffic::{Arrival, ArrivalStream, KeyTable};
use super::{AlgorithmReport, DecisionRow, DecisionSink, RuleReport, RunReport, SimError};
use crate::algorithm::{
    Algorithm, FixedWindow, Gcra, LeakyBucket, LogState, SlidingWindowCounter, SlidingWindowLog,
    TokenBucket,
};
use crate::composite::Composite;
use crate::limiter::RateLimiter;
use crate::registry::Registry;
use crate::time::{FakeClock, NANOS_PER_SEC, Nanos};

/// How to run.
#[derive(Clone, Copy)]
pub struct RunOptions<'a> {
    /// Worker threads; algorithms are spread over them. 0 or 1 runs sequentially.
    /// Results do not depend on this.
    pub threads: usize,
    /// Called now and then with `(done, total)` progress units: each algorithm
    /// contributes [`PROGRESS_STEPS`] units as its simulated time advances. Called from
    /// worker threads; `done` only grows and reaches `total` when the run ends.
    pub progress: Option<&'a (dyn Fn(u64, u64) + Sync)>,
}

impl Default for RunOptions<'_> {
    /// Sequential, no progress reports.
    fn default() -> Self {
        RunOptions {
            threads: 1,
            progress: None,
        }
    }
}

impl std::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("threads", &self.threads)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// Progress units per algorithm.
pub const PROGRESS_STEPS: u64 = 1_000;

/// Runs every algorithm of `scenario`. `sinks` is called once per algorithm, in order,
/// before any simulation starts (so a bad output path fails early); each algorithm's
/// decisions go to its own sink, in decision order.
pub fn run(
    scenario: &Scenario,
    options: &RunOptions<'_>,
    sinks: &mut dyn FnMut(&str) -> std::io::Result<Box<dyn DecisionSink>>,
) -> Result<RunReport, SimError> {
    if scenario.algorithms.is_empty() {
        return Err(SimError::NoAlgorithms);
    }
    let threads = options.threads.clamp(1, scenario.algorithms.len());
    let mut groups: Vec<Vec<Assigned<'_>>> = (0..threads).map(|_| Vec::new()).collect();
    for (index, name) in scenario.algorithms.iter().enumerate() {
        let sink = sinks(name).map_err(|source| SimError::Sink {
            algorithm: name.clone(),
            source,
        })?;
        groups[index % threads].push(Assigned {
            index,
            name: name.as_str(),
            sink,
        });
    }
    let progress = Progress {
        done: AtomicU64::new(0),
        total: scenario.algorithms.len() as u64 * PROGRESS_STEPS,
        callback: options.progress,
    };
    let shared = share_reference(scenario, &groups);
    // Each group is independent and its results are keyed by algorithm index, so the
    // grouping (and the thread count) cannot affect the report.
    let mut results: Vec<Option<Result<AlgorithmReport, SimError>>> =
        scenario.algorithms.iter().map(|_| None).collect();
    let finished: Vec<Vec<(usize, Result<AlgorithmReport, SimError>)>> = if threads == 1 {
        groups
            .into_iter()
            .zip(shared)
            .map(|(g, share)| run_group(scenario, g, &progress, share))
            .collect()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = groups
                .into_iter()
                .zip(shared)
                .map(|(g, share)| {
                    let progress = &progress;
                    s.spawn(move || run_group(scenario, g, progress, share))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    for (index, result) in finished.into_iter().flatten() {
        results[index] = Some(result);
    }
    let mut algorithms = Vec::new();
    for (slot, name) in results.into_iter().zip(&scenario.algorithms) {
        match slot {
            Some(result) => algorithms.push(result?),
            None => unreachable!("every algorithm belongs to exactly one group: {name}"),
        }
    }
    Ok(RunReport {
        scenario: scenario.name.clone(),
        description: scenario.description.clone(),
        seed: scenario.seed,
        duration: scenario.duration,
        rule: RuleReport::from(&scenario.rule),
        extra_limits: scenario.extra_limits.iter().map(RuleReport::from).collect(),
        client: scenario.client.name().to_string(),
        algorithms,
    })
}

/// How a group gets the reference's decisions (open clients only).
enum Share {
    /// Computes them itself, if it needs them: from its own sliding-log driver, or
    /// from a separate copy of the log.
    Alone,
    /// Owns the sliding-log driver and sends each chunk's decisions to these groups.
    Send(Vec<SyncSender<Vec<bool>>>),
    /// Receives each chunk's decisions from the group that owns the sliding log.
    Receive(Receiver<Vec<bool>>),
}

/// With open clients and several groups, the sliding log's decisions are computed once,
/// by the group that runs the log as an algorithm, and sent to the others chunk by
/// chunk, instead of every other group running its own copy of the log. The stream and
/// the log are deterministic, so this changes no result.
fn share_reference(scenario: &Scenario, groups: &[Vec<Assigned<'_>>]) -> Vec<Share> {
    let mut shares: Vec<Share> = groups.iter().map(|_| Share::Alone).collect();
    let owner = groups
        .iter()
        .position(|g| g.iter().any(|a| a.name == "sliding_window_log"));
    let (Some(owner), ClientModel::Open) = (owner, scenario.client) else {
        return shares;
    };
    let mut senders = Vec::new();
    for (i, share) in shares.iter_mut().enumerate() {
        if i != owner {
            // A few chunks of slack so the two threads rarely wait for each other.
            let (tx, rx) = std::sync::mpsc::sync_channel(16);
            senders.push(tx);
            *share = Share::Receive(rx);
        }
    }
    shares[owner] = Share::Send(senders);
    shares
}

/// One algorithm handed to a worker: its index in the scenario and its sink.
struct Assigned<'a> {
    index: usize,
    name: &'a str,
    sink: Box<dyn DecisionSink>,
}

struct Progress<'a> {
    done: AtomicU64,
    total: u64,
    callback: Option<&'a (dyn Fn(u64, u64) + Sync)>,
}

impl Progress<'_> {
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

/// Runs a group of algorithms in lockstep on one thread: the arrival stream is
/// generated once and each chunk of it is fed to every algorithm of the group, and the
/// sliding-log reference (for `false_allow` / `false_deny`) is computed once per chunk
/// for all of them. If the key whose window count was drawn is not an algorithm's worst
/// key, a second, silent pass draws the worst key instead (the series cannot be known
/// to be needed until the run is over, and keeping it for every key would not fit in
/// bounded memory).
fn run_group<'a>(
    scenario: &'a Scenario,
    group: Vec<Assigned<'a>>,
    progress: &'a Progress<'a>,
    share: Share,
) -> Vec<(usize, Result<AlgorithmReport, SimError>)> {
    let mut results = Vec::new();
    let mut drivers = Vec::new();
    let mut owners = Vec::new();
    for a in group {
        match driver(a.name, scenario, Some(a.sink), Some(progress), None) {
            Ok(d) => {
                drivers.push(d);
                owners.push((a.index, a.name));
            }
            Err(e) => results.push((a.index, Err(e))),
        }
    }
    let mut again = Vec::new();
    let mut again_slots = Vec::new();
    let first = run_pass(scenario, drivers, share);
    for ((index, name), outcome) in owners.into_iter().zip(first) {
        match outcome {
            Ok(o) => {
                if let Some(worst) = o.worst
                    && o.tracked_max < o.report.metrics.max_in_window
                {
                    match driver(name, scenario, None, None, Some(worst)) {
                        Ok(d) => {
                            again.push(d);
                            again_slots.push(results.len());
                        }
                        Err(e) => {
                            results.push((index, Err(e)));
                            continue;
                        }
                    }
                }
                results.push((index, Ok(o.report)));
            }
            Err(e) => results.push((index, Err(e))),
        }
    }
    let second = run_pass(scenario, again, Share::Alone);
    for (slot, outcome) in again_slots.into_iter().zip(second) {
        let result = &mut results[slot].1;
        match (outcome, result.as_mut()) {
            (Ok(o), Ok(report)) => report.window_counts = o.report.window_counts,
            (Err(e), _) => *result = Err(e),
            (Ok(_), Err(_)) => {}
        }
    }
    results
}

/// Arrivals generated and fed to the algorithms at a time: small enough to stay in
/// cache, large enough that the per-chunk dynamic dispatch is noise.
const CHUNK: usize = 1024;

/// Generates the stream once and feeds it, chunk by chunk, to every driver.
fn run_pass<'a>(
    scenario: &'a Scenario,
    mut drivers: Vec<Box<dyn Drive + 'a>>,
    share: Share,
) -> Vec<Result<Outcome, SimError>> {
    if drivers.is_empty() {
        return Vec::new();
    }
    match feed_all(scenario, &mut drivers, share) {
        Ok(stream) => drivers
            .into_iter()
            .map(|d| d.finish(stream.keys()))
            .collect(),
        Err(e) => drivers
            .iter()
            .map(|_| Err(SimError::Scenario(e.clone())))
            .collect(),
    }
}

fn feed_all(
    scenario: &Scenario,
    drivers: &mut [Box<dyn Drive + '_>],
    share: Share,
) -> Result<ArrivalStream, ScenarioError> {
    let mut stream = ArrivalStream::new(scenario)?;
    // A sliding log among the drivers is the reference itself: its decisions on the
    // chunk are the log's, so it runs first and no separate copy is needed.
    let log_driver = drivers.iter().position(|d| d.is_reference());
    let (mut senders, mut receiver) = match share {
        Share::Send(senders) if log_driver.is_some() => (senders, None),
        Share::Receive(receiver) => (Vec::new(), Some(receiver)),
        _ => (Vec::new(), None),
    };
    let mut reference =
        (log_driver.is_none() && receiver.is_none() && drivers.iter().any(|d| d.wants_reference()))
            .then(|| Reference::new(scenario));
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut log_allowed = Vec::with_capacity(CHUNK);
    loop {
        chunk.clear();
        while chunk.len() < CHUNK {
            match stream.next_arrival()? {
                Some(arrival) => chunk.push(arrival),
                None => break,
            }
        }
        if chunk.is_empty() {
            return Ok(stream);
        }
        log_allowed.clear();
        if let Some(r) = reference.as_mut() {
            r.decide(&chunk, &mut log_allowed);
        }
        if let Some(i) = log_driver {
            drivers[i].feed(&chunk, None, stream.keys(), Some(&mut log_allowed));
            // A receiver that has stopped (its run failed) is simply dropped.
            senders.retain(|tx| tx.send(log_allowed.clone()).is_ok());
        }
        if let Some(rx) = receiver.as_ref() {
            match rx.recv() {
                Ok(decided) => log_allowed = decided,
                // The log's run failed, which fails the whole run: stop counting.
                Err(_) => receiver = None,
            }
        }
        let log = (reference.is_some() || log_driver.is_some() || receiver.is_some())
            .then_some(log_allowed.as_slice());
        for (i, d) in drivers.iter_mut().enumerate() {
            if Some(i) != log_driver {
                d.feed(&chunk, log, stream.keys(), None);
            }
        }
    }
}

/// The exact reference for open clients: the sliding log on the same stream. Its
/// decisions depend only on the stream, so one copy serves every algorithm of a group.
struct Reference {
    clock: FakeClock,
    limiter: ReferenceLimiter,
    sweep_every: u64,
    next_sweep: u64,
}

/// The log for one rule, or a composite of logs (exact for every rule) when the
/// scenario has several `[[limit]]`s; an enum so the common case stays unboxed.
enum ReferenceLimiter {
    One(RateLimiter<SlidingWindowLog, u32, FakeClock>),
    All(RateLimiter<Composite<SlidingWindowLog>, u32, FakeClock>),
}

impl ReferenceLimiter {
    fn allows(&mut self, key: u32, cost: u64) -> bool {
        match self {
            ReferenceLimiter::One(l) => l.try_acquire_n_mut(&key, cost).is_ok_and(|d| d.allowed),
            ReferenceLimiter::All(l) => l.try_acquire_n_mut(&key, cost).is_ok_and(|d| d.allowed),
        }
    }

    fn evict_idle(&self) {
        match self {
            ReferenceLimiter::One(l) => l.evict_idle(),
            ReferenceLimiter::All(l) => l.evict_idle(),
        };
    }
}

impl Reference {
    fn new(sc: &Scenario) -> Reference {
        let clock = FakeClock::new(Nanos::ZERO);
        let sweep_every = sweep_interval(sc);
        let limiter = if sc.extra_limits.is_empty() {
            ReferenceLimiter::One(RateLimiter::with_clock(
                SlidingWindowLog::new(sc.rule),
                clock.clone(),
            ))
        } else {
            let logs = std::iter::once(sc.rule)
                .chain(sc.extra_limits.iter().copied())
                .map(SlidingWindowLog::new);
            let all = Composite::new(logs.collect()).expect("a scenario has at least one rule");
            ReferenceLimiter::All(RateLimiter::with_clock(all, clock.clone()))
        };
        Reference {
            limiter,
            clock,
            sweep_every,
            next_sweep: sweep_every,
        }
    }

    /// Whether the log admits each arrival of `chunk`, into `out`.
    fn decide(&mut self, chunk: &[(u64, Arrival)], out: &mut Vec<bool>) {
        for (_, a) in chunk {
            while a.time.as_u64() >= self.next_sweep {
                // Idle keys are forgotten, as the algorithms' own limiters do, to keep
                // memory bounded; that never changes a decision.
                self.clock.set(Nanos::new(self.next_sweep));
                self.limiter.evict_idle();
                self.next_sweep = self.next_sweep.saturating_add(self.sweep_every);
            }
            self.clock.set(a.time);
            out.push(self.limiter.allows(a.key, a.cost));
        }
    }
}

/// The janitor's period: `max(W, duration / 1000)`.
fn sweep_interval(sc: &Scenario) -> u64 {
    sc.rule
        .window()
        .as_u64()
        .max(sc.duration.as_u64().div_ceil(1000))
}

/// Static dispatch: each built-in name runs the engine monomorphised for its concrete
/// type; any other registered name falls back to the type-erased algorithm.
fn driver<'a>(
    name: &str,
    sc: &'a Scenario,
    sink: Option<Box<dyn DecisionSink>>,
    progress: Option<&'a Progress<'a>>,
    track: Option<u32>,
) -> Result<Box<dyn Drive + 'a>, SimError> {
    let rule = sc.rule;
    let job = Job {
        scenario: sc,
        sink,
        progress,
        track,
    };
    if !sc.extra_limits.is_empty() {
        // Several [[limit]]s: the algorithm enforces all of them as one composite.
        let registry = Registry::default();
        let rules = std::iter::once(rule).chain(sc.extra_limits.iter().copied());
        let parts = rules
            .map(|r| registry.create(name, r))
            .collect::<Result<Vec<_>, _>>()?;
        let all = Composite::new(parts).expect("a scenario has at least one rule");
        return Ok(job.driver(all, None));
    }
    Ok(match name {
        "token_bucket" => job.driver(TokenBucket::new(rule), None),
        "leaky_bucket" => job.driver(LeakyBucket::new(rule), None),
        "fixed_window" => job.driver(FixedWindow::new(rule), None),
        "sliding_window_log" => job.driver(SlidingWindowLog::new(rule), Some(log_heap_bytes)),
        "sliding_window_counter" => job.driver(SlidingWindowCounter::new(rule), None),
        "gcra" => job.driver(Gcra::new(rule), None),
        other => job.driver(Registry::default().create(other, rule)?, None),
    })
}

/// Heap held by a sliding-log state: one `(instant, cost)` per logged instant.
fn log_heap_bytes(state: &LogState) -> usize {
    state.len() * std::mem::size_of::<(Nanos, u64)>()
}

struct Job<'a> {
    scenario: &'a Scenario,
    /// `None` for the silent second pass: no rows, no reference, no probes.
    sink: Option<Box<dyn DecisionSink>>,
    progress: Option<&'a Progress<'a>>,
    /// The key whose window count to draw; `None` = the first key admitted.
    track: Option<u32>,
}

struct Outcome {
    report: AlgorithmReport,
    worst: Option<u32>,
    tracked_max: u64,
}

/// One algorithm's run, fed the stream a chunk at a time.
trait Drive {
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
}

/// One request attempt waiting in the event queue.
#[derive(Debug, Clone, Copy)]
struct Event {
    time: Nanos,
    seq: u64,
    key: u32,
    cost: u64,
    attempt: u32,
    /// When the request first arrived (for latency).
    first: Nanos,
}

/// A min-heap on `(time, insertion order)`: same-instant events leave in FIFO order.
#[derive(Default)]
struct EventQueue {
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
    fn push(&mut self, event: Event) {
        self.heap.push(Reverse(Queued {
            order: self.inserted,
            event,
        }));
        self.inserted += 1;
    }

    /// The earliest event, if it is due at or before `time`.
    fn pop_due(&mut self, time: Nanos) -> Option<Event> {
        if self.heap.peek()?.0.event.time > time {
            return None;
        }
        self.heap.pop().map(|Reverse(q)| q.event)
    }
}

impl<'a> Job<'a> {
    fn driver<A: Algorithm>(
        self,
        algorithm: A,
        heap_bytes: Option<fn(&A::State) -> usize>,
    ) -> Box<dyn Drive + 'a> {
        let sc = self.scenario;
        let rule = sc.rule;
        let name = algorithm.name().to_string();
        let silent = self.sink.is_none();
        let clock = FakeClock::new(Nanos::ZERO);
        let limiter: RateLimiter<A, u32, FakeClock> =
            RateLimiter::with_clock(algorithm, clock.clone());
        let open = sc.client == ClientModel::Open && !silent;
        // With several [[limit]]s the log here is the composite of logs over all of
        // them, exactly as the reference is.
        let is_reference = open && name == "sliding_window_log";
        let wants_reference = open && !is_reference;
        let (retry, max_retries, jitter) = match sc.client {
            ClientModel::Open => (false, 0, Nanos::ZERO),
            ClientModel::Retry {
                max_retries,
                jitter,
            } => (true, max_retries, jitter),
        };
        // Stream 0 of the seed is the jitter's; traffic sources use streams 1, 2, ...
        let mut jitter_rng = ChaCha8Rng::seed_from_u64(sc.seed);
        jitter_rng.set_stream(0);
        let sweep_every = sweep_interval(sc);
        let timeline = Timeline::new(sc.duration);
        let mut tracker = WindowTracker::new(rule.window(), rule.max_requests());
        if let Some(key) = self.track {
            tracker.track(key);
        }
        // The silent pass only redraws one key's window count. With open clients a
        // key's decisions depend on its own arrivals alone (eviction forgets only
        // states indistinguishable from fresh ones), so every other key is skipped.
        let only_key = match (silent, retry) {
            (true, false) => self.track,
            _ => None,
        };
        Box::new(Driver {
            sc,
            m: Metrics {
                algorithm: name.clone(),
                ..Metrics::default()
            },
            name,
            silent,
            rows: self.sink.as_ref().is_some_and(|s| s.wants_rows()),
            sink: self.sink,
            progress: self.progress,
            clock,
            limiter,
            wants_reference,
            is_reference,
            retry,
            max_retries,
            jitter,
            jitter_rng,
            queue: EventQueue::default(),
            false_allow: 0,
            false_deny: 0,
            succeeded: 0,
            gave_up: 0,
            unfinished: 0,
            wasted: 0,
            tracker,
            series: SeriesThinner::new(sc.duration),
            admitted: Vec::new(),
            timeline_cursor: BucketCursor::new(timeline.bucket),
            timeline,
            latency: LatencyHistogram::default(),
            sweep_every,
            next_sweep: sweep_every,
            janitor: Janitor::<A> {
                heap_bytes,
                touched: Vec::new(),
                marked: Vec::new(),
                peak_keys: 0,
                state_bytes: std::mem::size_of::<A::State>() as u64,
            },
            events: 0,
            reported: 0,
            probes: Probes::new(),
            only_key,
            error: None,
        })
    }
}

/// The state of one algorithm's run between chunks.
struct Driver<'a, A: Algorithm> {
    sc: &'a Scenario,
    name: String,
    silent: bool,
    /// The sink wants each decision's row.
    rows: bool,
    sink: Option<Box<dyn DecisionSink>>,
    progress: Option<&'a Progress<'a>>,
    clock: FakeClock,
    limiter: RateLimiter<A, u32, FakeClock>,
    wants_reference: bool,
    is_reference: bool,
    retry: bool,
    max_retries: u32,
    jitter: Nanos,
    jitter_rng: ChaCha8Rng,
    queue: EventQueue,
    m: Metrics,
    false_allow: u64,
    false_deny: u64,
    succeeded: u64,
    gave_up: u64,
    unfinished: u64,
    wasted: u64,
    tracker: WindowTracker,
    series: SeriesThinner,
    /// `(key, instant, cost)` of each admission not yet counted by `tracker`.
    admitted: Vec<(u32, Nanos, u64)>,
    timeline: Timeline,
    timeline_cursor: BucketCursor,
    latency: LatencyHistogram,
    sweep_every: u64,
    next_sweep: u64,
    janitor: Janitor<A>,
    events: u64,
    reported: u64,
    /// Each denial's earliest passing instant, probed or remembered.
    probes: Probes,
    /// The silent open-client pass skips every key but this one.
    only_key: Option<u32>,
    /// The first sink error: the run stops deciding and reports it.
    error: Option<SimError>,
}

impl<A: Algorithm> Drive for Driver<'_, A> {
    fn wants_reference(&self) -> bool {
        self.wants_reference
    }

    fn is_reference(&self) -> bool {
        self.is_reference
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
            // Retries due at the same instant as a new arrival go first: they were
            // scheduled earlier.
            while let Some(retry) = self.queue.pop_due(a.time) {
                if let Err(e) = self.step(retry, None, keys) {
                    self.error = Some(e);
                    return;
                }
            }
            let event = Event {
                time: a.time,
                seq,
                key: a.key,
                cost: a.cost,
                attempt: 0,
                first: a.time,
            };
            // A log shorter than the chunk only follows a failed reference run, which
            // fails the whole run anyway.
            match self.step(event, log_allowed.and_then(|l| l.get(i).copied()), keys) {
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
        self.track_admitted();
    }

    fn finish(mut self: Box<Self>, keys: &KeyTable) -> Result<Outcome, SimError> {
        while self.error.is_none()
            && let Some(retry) = self.queue.pop_due(Nanos::MAX)
        {
            if let Err(e) = self.step(retry, None, keys) {
                self.error = Some(e);
            }
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.track_admitted();
        // Flush now, so a failed write is an error rather than lost on drop.
        if let Some(sink) = self.sink.as_mut() {
            sink.finish().map_err(|source| SimError::Sink {
                algorithm: self.name.clone(),
                source,
            })?;
        }
        (*self).outcome(keys)
    }
}

impl<A: Algorithm> Driver<'_, A> {
    /// Counts the admissions of the last chunk in the trailing windows, in order. Done
    /// after the chunk rather than at each decision: the tracker only observes, and a
    /// short loop of independent counter updates lets the processor overlap their
    /// cache misses, which interleaved with decisions it could not.
    fn track_admitted(&mut self) {
        for &(key, at, cost) in &self.admitted {
            let series = &mut self.series;
            self.tracker.admit(key, at, cost, |t, c| series.push(t, c));
        }
        self.admitted.clear();
    }

    /// Decides one request attempt and records what the metrics need; returns
    /// whether it was admitted.
    fn step(
        &mut self,
        event: Event,
        log_allowed: Option<bool>,
        keys: &KeyTable,
    ) -> Result<bool, SimError> {
        if self.only_key.is_some_and(|k| k != event.key) {
            return Ok(false);
        }
        let now = event.time;
        while now.as_u64() >= self.next_sweep {
            self.clock.set(Nanos::new(self.next_sweep));
            self.janitor.sweep(&self.limiter, true);
            self.next_sweep = self.next_sweep.saturating_add(self.sweep_every);
        }
        self.clock.set(now);
        if self.janitor.heap_bytes.is_some() {
            self.janitor.touch(event.key);
        }

        let limiter = &mut self.limiter;
        // `fits`: the cost is within the capacity. Only a request that does not fit
        // can never pass; one that fits may still be told `Nanos::MAX` (a wait past
        // the end of the clock's range, e.g. under a window of centuries).
        let (allowed, remaining, retry_after, fits) =
            match limiter.try_acquire_n_mut(&event.key, event.cost) {
                Ok(d) => (d.allowed, d.remaining, d.retry_after, true),
                Err(_) => (false, limiter.peek(&event.key).remaining, Nanos::MAX, false),
            };
        let m = &mut self.m;
        m.attempts += 1;
        if event.attempt == 0 {
            m.requests += 1;
        }
        let bucket = self.timeline_cursor.index(now);
        self.timeline.record_in(bucket, allowed);
        if allowed {
            m.allowed += 1;
            self.probes.forget(event.key);
            self.admitted.push((event.key, now, event.cost));
            if self.retry {
                self.succeeded += 1;
                self.latency.record(now - event.first);
            }
        } else {
            m.denied += 1;
            if event.attempt > 0 {
                self.wasted += 1;
            }
            if !fits {
                m.never_fits += 1;
            } else {
                if !self.silent {
                    let earliest =
                        self.probes
                            .earliest(limiter, event.key, event.cost, now, retry_after);
                    judge(m, now, retry_after, earliest);
                }
                if self.retry {
                    if event.attempt >= self.max_retries {
                        self.gave_up += 1;
                    } else {
                        let extra = match self.jitter.as_u64() {
                            0 => 0,
                            j => self.jitter_rng.random_range(0..=j),
                        };
                        let at = now + retry_after + Nanos::new(extra);
                        if at >= self.sc.duration {
                            self.unfinished += 1;
                        } else {
                            self.queue.push(Event {
                                time: at,
                                attempt: event.attempt + 1,
                                ..event
                            });
                        }
                    }
                }
            }
        }
        if self.wants_reference
            && let Some(log_allowed) = log_allowed
        {
            self.false_allow += u64::from(allowed && !log_allowed);
            self.false_deny += u64::from(!allowed && log_allowed);
        }
        if self.rows
            && let Some(sink) = self.sink.as_mut()
        {
            let row = DecisionRow {
                algorithm: &self.name,
                seq: event.seq,
                attempt: event.attempt,
                time: now,
                key: keys.name(event.key),
                cost: event.cost,
                allowed,
                remaining,
                retry_after: fits.then_some(retry_after),
            };
            sink.record(&row).map_err(|source| SimError::Sink {
                algorithm: self.name.clone(),
                source,
            })?;
        }
        self.events += 1;
        if self.events.is_multiple_of(4096)
            && let Some(p) = self.progress
        {
            let duration = self.sc.duration.as_u64();
            let step = (u128::from(now.as_u64()) * u128::from(PROGRESS_STEPS)
                / u128::from(duration)) as u64;
            let step = step.min(PROGRESS_STEPS);
            p.add(step.saturating_sub(self.reported));
            self.reported = self.reported.max(step);
        }
        Ok(allowed)
    }

    /// The run is over: the final sweep, and the metrics.
    fn outcome(mut self, keys: &KeyTable) -> Result<Outcome, SimError> {
        let sc = self.sc;
        let rule = sc.rule;
        self.clock.set(sc.duration);
        self.janitor.sweep(&self.limiter, false);
        if let Some(p) = self.progress {
            p.add(PROGRESS_STEPS - self.reported);
        }
        let Driver {
            mut m,
            mut tracker,
            mut series,
            latency,
            janitor,
            timeline,
            name,
            false_allow,
            false_deny,
            succeeded,
            gave_up,
            unfinished,
            wasted,
            ..
        } = self;

        tracker.finish(sc.duration, |t, c| series.push(t, c));
        m.max_in_window = tracker.max;
        // The worst key is the one whose series `window_counts` shows: the tracked key
        // when it ties with the first key to reach the maximum (no second pass then),
        // otherwise that first key (the second pass redraws the series for it).
        let shown = match tracker.tracked {
            Some(k) if tracker.tracked_max == tracker.max && tracker.max > 0 => Some(k),
            _ => tracker.worst_key,
        };
        m.worst_key = shown.map(|k| keys.name(k).to_string());
        m.over_admission = tracker.max as f64 / rule.max_requests() as f64;
        m.excess = tracker.excess;
        m.allow_rate = (m.attempts > 0).then(|| m.allowed as f64 / m.attempts as f64);
        if sc.client == ClientModel::Open {
            m.false_allow = Some(false_allow);
            m.false_deny = Some(false_deny);
        } else {
            m.succeeded = Some(succeeded);
            m.gave_up = Some(gave_up);
            m.unfinished = Some(unfinished);
            m.wasted_retries = Some(wasted);
            m.latency_p50_ns = latency.quantile(0.5);
            m.latency_p99_ns = latency.quantile(0.99);
            m.latency_max_ns = latency.max();
        }
        m.peak_keys = janitor.peak_keys;
        m.state_bytes_per_key = janitor.state_bytes;

        Ok(Outcome {
            report: AlgorithmReport {
                name,
                metrics: m,
                window_counts: series.finish(),
                timeline,
            },
            worst: tracker.worst_key,
            tracked_max: tracker.tracked_max,
        })
    }
}
/// Counts `retry_after` (and its whole-second header form) against the exact
/// earliest instant the denied request would pass.
fn judge(m: &mut Metrics, now: Nanos, retry_after: Nanos, earliest: Option<Nanos>) {
    // Instants past the clock's last one (`u64::MAX` ns) are all "the end": an advice
    // that points there is exact when nothing passes before it (`earliest` is `None`),
    // too early when the wait it gives ends inside the range and nothing passes there.
    let end = 1u128 << 64;
    let earliest = earliest.map_or(end, |e| u128::from(e.as_u64()));
    let now = u128::from(now.as_u64());
    match Honesty::judge((now + u128::from(retry_after.as_u64())).min(end), earliest) {
        Honesty::Exact => m.retry_after_exact += 1,
        Honesty::TooEarly => m.retry_after_too_early += 1,
        Honesty::TooLate => m.retry_after_too_late += 1,
    }
    // HTTP's Retry-After: whole seconds, rounded up, and never 0 on a denial.
    let secs = retry_after.as_u64().div_ceil(NANOS_PER_SEC).max(1);
    let advised = now + u128::from(secs) * u128::from(NANOS_PER_SEC);
    match Honesty::judge(advised.min(end), earliest) {
        Honesty::Exact => m.retry_after_secs_exact += 1,
        Honesty::TooEarly => m.retry_after_secs_too_early += 1,
        Honesty::TooLate => m.retry_after_secs_too_late += 1,
    }
}

/// Finds each denial's earliest passing instant ([`earliest_pass`]) and remembers
/// it per key, so a run of denials on one key probes once.
///
/// Exact, not a cache that can go stale: a denial changes no later decision (a
/// property every built-in algorithm passes in `tests/conformance.rs`, and which the
/// probe itself already relies on), so while a key is not admitted, the earliest
/// instant a request of a given cost passes stays the same instant. The engine forgets
/// a key on each of its admissions; an instant at or before `now` is never reused
/// (an evicted, recreated key). Debug builds — every test — recompute each
/// remembered answer and compare.
struct Probes {
    /// Direct-mapped by key: `(key, cost, earliest passing instant or None = never)`.
    slots: Vec<Option<(u32, u64, Option<Nanos>)>>,
}

impl Probes {
    /// Slots in the memo: the hottest keys of a skewed stream get their own.
    const SLOTS: usize = 1024;

    fn new() -> Self {
        Probes {
            slots: vec![None; Self::SLOTS],
        }
    }

    fn slot(key: u32) -> usize {
        key as usize % Self::SLOTS
    }

    /// `key` was admitted: what was remembered about it no longer holds.
    fn forget(&mut self, key: u32) {
        let slot = &mut self.slots[Self::slot(key)];
        if slot.is_some_and(|(k, _, _)| k == key) {
            *slot = None;
        }
    }

    /// The earliest instant after `now` at which the request of `cost` just denied
    /// for `key` (advertised wait `retry_after`) would pass; `None` if it never does.
    fn earliest<A: Algorithm>(
        &mut self,
        limiter: &mut RateLimiter<A, u32, FakeClock>,
        key: u32,
        cost: u64,
        now: Nanos,
        retry_after: Nanos,
    ) -> Option<Nanos> {
        let slot = Self::slot(key);
        let remembered = match self.slots[slot] {
            Some((k, c, earliest)) if k == key && c == cost && earliest.is_none_or(|e| e > now) => {
                Some(earliest)
            }
            _ => None,
        };
        if let Some(earliest) = remembered
            && !cfg!(debug_assertions)
        {
            return earliest;
        }
        let earliest = limiter.with_state_mut(&key, |algo, state, _| {
            earliest_pass(algo, state, now, retry_after, cost)
        });
        if let Some(r) = remembered {
            assert_eq!(
                r, earliest,
                "a remembered probe went stale: key {key}, cost {cost}"
            );
        }
        self.slots[slot] = Some((key, cost, earliest));
        earliest
    }
}

/// The earliest instant after `now` at which a request of `cost` passes on `state`
/// (nothing else happening), or `None` if it never does. The request was just denied at
/// `now`. Each probe asks [`Algorithm::would_pass`], which decides as `try_acquire`
/// would on a copy. The advertised wait is tried first (with the instant just before
/// it), so an exact algorithm costs two probes; otherwise the instant is found by
/// exponential then binary search.
fn earliest_pass<A: Algorithm>(
    algorithm: &A,
    state: &A::State,
    now: Nanos,
    hint: Nanos,
    cost: u64,
) -> Option<Nanos> {
    let mut passes = |t: u64| algorithm.would_pass(state, Nanos::new(t), cost);
    let denied = now.as_u64(); // known: denied at `now`
    let guess = (now + hint).as_u64();
    // Try the advertised instant, and the instant just before it.
    let (mut fails, mut pass) = if guess > denied && (guess - 1 == denied || !passes(guess - 1)) {
        if passes(guess) {
            return Some(Nanos::new(guess));
        }
        exponential_search(&mut passes, guess, hint)?
    } else if guess > denied {
        // Passes one nanosecond early: the answer is at or before that.
        (denied, guess - 1)
    } else {
        exponential_search(&mut passes, denied, hint)?
    };
    // Invariant: fails at `fails`, passes at `pass`.
    while pass - fails > 1 {
        let mid = fails + (pass - fails) / 2;
        if passes(mid) {
            pass = mid;
        } else {
            fails = mid;
        }
    }
    Some(Nanos::new(pass))
}

/// Steps from `fails` (a failing instant) by doubling steps, starting with `hint`,
/// until an instant passes: `(the last failing instant, the first passing one)`, or
/// `None` if nothing up to the end of time passes.
fn exponential_search(
    passes: &mut impl FnMut(u64) -> bool,
    mut fails: u64,
    hint: Nanos,
) -> Option<(u64, u64)> {
    let mut step = hint.as_u64().max(1);
    loop {
        let t = fails.saturating_add(step);
        if passes(t) {
            return Some((fails, t));
        }
        if t == u64::MAX {
            return None;
        }
        fails = t;
        step = step.saturating_mul(2);
    }
}

/// The periodic idle-key sweep, and the memory samples taken at it.
struct Janitor<A: Algorithm> {
    heap_bytes: Option<fn(&A::State) -> usize>,
    /// Keys seen since the last sweep (only when states own heap memory).
    touched: Vec<u32>,
    marked: Vec<bool>,
    peak_keys: u64,
    state_bytes: u64,
}

impl<A: Algorithm> Janitor<A> {
    fn touch(&mut self, key: u32) {
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
    fn sweep(&mut self, limiter: &RateLimiter<A, u32, FakeClock>, evict: bool) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::Rule;

    #[test]
    fn the_probe_finds_the_true_earliest_instant_even_from_a_wrong_hint() {
        let rule = Rule::new(1, Nanos::from_secs(10)).unwrap();
        let algo = FixedWindow::new(rule);
        let mut state = algo.new_state(Nanos::ZERO);
        assert!(algo.try_acquire(&mut state, Nanos::from_secs(3), 1));
        let now = Nanos::from_secs(4);
        assert!(!algo.try_acquire(&mut state, now, 1));
        let truth = Some(Nanos::from_secs(10));
        for hint in [
            0,
            1,
            5_999_999_999,
            6_000_000_000,
            6_000_000_001,
            50_000_000_000,
        ] {
            assert_eq!(
                earliest_pass(&algo, &state, now, Nanos::new(hint), 1),
                truth,
                "hint {hint} ns"
            );
        }
    }

    /// The probe asks `would_pass` (the sliding log answers it without a copy); against
    /// `try_acquire` on a fresh copy at every nanosecond, for every built-in algorithm
    /// and hints that are exact, early, late or arbitrary, it must find the same
    /// earliest instant.
    #[test]
    fn the_probe_agrees_with_a_fresh_copy_at_every_nanosecond() {
        let rule = Rule::new(3, Nanos::new(100)).unwrap();
        let registry = crate::registry::Registry::default();
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let mut checked = 0;
        for name in registry.names() {
            let algo = registry.create(name, rule).unwrap();
            let mut state = algo.new_state(Nanos::ZERO);
            let mut now = 0u64;
            for _ in 0..2_000 {
                now += rng.random_range(0..40);
                let cost = rng.random_range(1..=3);
                let t = Nanos::new(now);
                if algo.try_acquire(&mut state, t, cost) {
                    continue;
                }
                let truth = (now + 1..now + 10_000)
                    .find(|&at| algo.try_acquire(&mut state.clone(), Nanos::new(at), cost))
                    .map(Nanos::new);
                let exact = algo.retry_after(&state, t, cost).unwrap();
                let wait = truth.expect("every cost fits").as_u64() - now;
                for hint in [
                    exact.as_u64(),
                    0,
                    1,
                    wait - 1,
                    wait + 5,
                    rng.random_range(0..300),
                ] {
                    let found = earliest_pass(&algo, &state, t, Nanos::new(hint), cost);
                    assert_eq!(
                        found, truth,
                        "{name}: denied at {now}, cost {cost}, hint {hint}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 6_000, "too few denials were probed: {checked}");
    }

    /// Near the end of time the search saturates: it must still find an instant that
    /// is `u64::MAX` itself, and answer `None` when nothing up to it passes (also for a
    /// cost above the capacity), whatever the hint. Checked against every instant.
    #[test]
    fn the_probe_is_exact_up_to_the_end_of_time() {
        let registry = crate::registry::Registry::default();
        let end = u64::MAX;
        let mut at_the_end = 0;
        for window in [5, 1_000_000_000] {
            let rule = Rule::new(2, Nanos::new(window)).unwrap();
            for name in registry.names() {
                let algo = registry.create(name, rule).unwrap();
                for start in end - 12..end - 1 {
                    let mut state = algo.new_state(Nanos::new(start));
                    assert!(algo.try_acquire(&mut state, Nanos::new(start), 2));
                    for now in start..end {
                        for cost in [1, 2, 3] {
                            let t = Nanos::new(now);
                            if algo.would_pass(&state, t, cost) {
                                continue;
                            }
                            let truth = (now + 1..=end)
                                .find(|&at| {
                                    algo.try_acquire(&mut state.clone(), Nanos::new(at), cost)
                                })
                                .map(Nanos::new);
                            at_the_end += usize::from(truth == Some(Nanos::MAX));
                            for hint in [0, 1, 2, 7, end - 1, end] {
                                assert_eq!(
                                    earliest_pass(&algo, &state, t, Nanos::new(hint), cost),
                                    truth,
                                    "{name} W={window}: admitted at {start}, denied at {now}, \
                                     cost {cost}, hint {hint}"
                                );
                            }
                        }
                    }
                }
            }
        }
        assert!(at_the_end > 0, "no case passes exactly at u64::MAX");
    }

    /// Judging at the end of the clock's range: `None` (passes at no instant) matches
    /// only an advice that points past the last instant.
    #[test]
    fn advice_past_the_end_of_time_is_exact_only_when_nothing_passes_before() {
        let cases = [
            // (now, retry_after, earliest) → (exact, too early, too late)
            (5, 10, None, (0, 1, 0)),
            (5, u64::MAX, None, (1, 0, 0)),
            (u64::MAX - 3, 4, None, (1, 0, 0)),
            (u64::MAX - 3, 3, None, (0, 1, 0)),
            (0, u64::MAX, Some(u64::MAX), (1, 0, 0)),
            (5, u64::MAX, Some(100), (0, 0, 1)),
            (5, 95, Some(100), (1, 0, 0)),
        ];
        for (now, wait, earliest, expected) in cases {
            let mut m = Metrics::default();
            judge(
                &mut m,
                Nanos::new(now),
                Nanos::new(wait),
                earliest.map(Nanos::new),
            );
            let got = (
                m.retry_after_exact,
                m.retry_after_too_early,
                m.retry_after_too_late,
            );
            assert_eq!(
                got, expected,
                "now {now}, wait {wait}, earliest {earliest:?}"
            );
        }
    }

    #[test]
    fn the_event_queue_is_fifo_among_equal_instants() {
        let mut q = EventQueue::default();
        let at = |time: u64, seq: u64| Event {
            time: Nanos::new(time),
            seq,
            key: 0,
            cost: 1,
            attempt: 1,
            first: Nanos::ZERO,
        };
        for (t, s) in [(5, 0), (3, 1), (5, 2), (3, 3)] {
            q.push(at(t, s));
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.pop_due(Nanos::MAX))
            .map(|e| e.seq)
            .collect();
        assert_eq!(order, [1, 3, 0, 2]);
        assert!(q.pop_due(Nanos::ZERO).is_none());
    }
}
