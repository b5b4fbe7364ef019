//! The discrete-event engine: feeds each algorithm its stream through the library's
//! own [`RateLimiter`] on a [`FakeClock`], and measures what it decides.
//!
//! The engine owns event order and client behaviour; it never decides a request
//! itself (the limiter does) and never writes files (sinks do).
//!
//! ## How a run works
//! - Every algorithm is an independent *job*: it regenerates the arrival stream from the
//!   seed, so every algorithm sees the identical stream without the stream ever being
//!   held in memory, and jobs can run on separate threads with results identical to a
//!   sequential run.
//! - Open clients: for algorithms other than the sliding log, the job also runs the
//!   sliding log (the exact reference) in lockstep on the same clock, to count
//!   `false_allow` / `false_deny`.
//! - Retry clients: a denied request is queued at `now + retry_after + U[0, jitter]`.
//!   Retries due at the same instant as a new arrival go first (they were scheduled
//!   earlier); retries at the same instant keep FIFO order (an insertion counter, as in
//!   nexosim's queue). A retry that would fall at or after `duration` is `unfinished`.
//! - Every denial is probed: a copy of the key's state is asked, at later instants,
//!   whether the request would pass, to find the exact earliest instant and judge
//!   `retry_after` against it. This assumes passing is monotone in time when nothing
//!   else happens, which holds for all six built-in algorithms.
//! - A janitor sweep (every `max(W, duration / 1000)`) evicts idle keys, as a real
//!   deployment would, and samples `peak_keys` and per-key state size.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::metrics::{Honesty, LatencyHistogram, Metrics, SeriesThinner, Timeline, WindowTracker};
use super::scenario::{ClientModel, Scenario};
use super::traffic::ArrivalStream;
use super::{AlgorithmReport, DecisionRow, DecisionSink, RuleReport, RunReport, SimError};
use crate::algorithm::{
    Algorithm, FixedWindow, Gcra, LeakyBucket, LogState, SlidingWindowCounter, SlidingWindowLog,
    TokenBucket,
};
use crate::limiter::RateLimiter;
use crate::registry::Registry;
use crate::rule::Rule;
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
    let mut jobs = Vec::new();
    for name in &scenario.algorithms {
        let sink = sinks(name).map_err(|source| SimError::Sink {
            algorithm: name.clone(),
            source,
        })?;
        jobs.push(Mutex::new(Some((name.as_str(), sink))));
    }
    let progress = Progress {
        done: AtomicU64::new(0),
        total: jobs.len() as u64 * PROGRESS_STEPS,
        callback: options.progress,
    };
    let results: Vec<Mutex<Option<Result<AlgorithmReport, SimError>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    // Workers take whole algorithms; each writes only its own result slot, so the
    // order of completion cannot affect the report.
    let work = || {
        loop {
            let i = next.fetch_add(1, AtomicOrdering::Relaxed);
            let Some(job) = jobs.get(i) else { break };
            let Some((name, mut sink)) = take(job) else {
                continue;
            };
            let result = simulate(scenario, name, sink.as_mut(), &progress).and_then(|report| {
                // Flush now, so a failed write is an error rather than lost on drop.
                sink.finish().map_err(|source| SimError::Sink {
                    algorithm: name.to_string(),
                    source,
                })?;
                Ok(report)
            });
            *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
        }
    };
    let threads = options.threads.clamp(1, jobs.len());
    if threads == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(work);
            }
        });
    }
    let mut algorithms = Vec::new();
    for (slot, name) in results.into_iter().zip(&scenario.algorithms) {
        match slot.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(result) => algorithms.push(result?),
            None => unreachable!("every job slot is filled before the workers finish: {name}"),
        }
    }
    Ok(RunReport {
        scenario: scenario.name.clone(),
        description: scenario.description.clone(),
        seed: scenario.seed,
        duration: scenario.duration,
        rule: RuleReport {
            max_requests: scenario.rule.max_requests(),
            window: scenario.rule.window(),
            burst: scenario.rule.burst(),
        },
        client: scenario.client.name().to_string(),
        algorithms,
    })
}

fn take<T>(m: &Mutex<Option<T>>) -> Option<T> {
    m.lock().unwrap_or_else(|p| p.into_inner()).take()
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

/// One algorithm, start to finish. If the key whose window count was drawn is not the
/// worst key, a second, silent pass draws the worst key instead (the series cannot be
/// known to be needed until the run is over, and keeping it for every key would not
/// fit in bounded memory).
fn simulate(
    scenario: &Scenario,
    name: &str,
    sink: &mut dyn DecisionSink,
    progress: &Progress<'_>,
) -> Result<AlgorithmReport, SimError> {
    let first = dispatch(
        name,
        scenario.rule,
        Job {
            scenario,
            sink: Some(sink),
            progress: Some(progress),
            track: None,
        },
    )?;
    let mut report = first.report;
    if let Some(worst) = first.worst
        && first.tracked_max < report.metrics.max_in_window
    {
        let again = Job {
            scenario,
            sink: None,
            progress: None,
            track: Some(worst),
        };
        report.window_counts = dispatch(name, scenario.rule, again)?.report.window_counts;
    }
    Ok(report)
}

/// Static dispatch: each built-in name runs the engine monomorphised for its concrete
/// type; any other registered name falls back to the type-erased algorithm.
fn dispatch(name: &str, rule: Rule, job: Job<'_, '_>) -> Result<Outcome, SimError> {
    match name {
        "token_bucket" => job.drive(TokenBucket::new(rule), None),
        "leaky_bucket" => job.drive(LeakyBucket::new(rule), None),
        "fixed_window" => job.drive(FixedWindow::new(rule), None),
        "sliding_window_log" => job.drive(SlidingWindowLog::new(rule), Some(log_heap_bytes)),
        "sliding_window_counter" => job.drive(SlidingWindowCounter::new(rule), None),
        "gcra" => job.drive(Gcra::new(rule), None),
        other => job.drive(Registry::default().create(other, rule)?, None),
    }
}

/// Heap held by a sliding-log state: one `(instant, cost)` per logged instant.
fn log_heap_bytes(state: &LogState) -> usize {
    state.len() * std::mem::size_of::<(Nanos, u64)>()
}

struct Job<'a, 's> {
    scenario: &'a Scenario,
    /// `None` for the silent second pass: no rows, no reference, no probes.
    sink: Option<&'s mut dyn DecisionSink>,
    progress: Option<&'a Progress<'a>>,
    /// The key whose window count to draw; `None` = the first key admitted.
    track: Option<u32>,
}

struct Outcome {
    report: AlgorithmReport,
    worst: Option<u32>,
    tracked_max: u64,
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

impl Job<'_, '_> {
    fn drive<A: Algorithm>(
        mut self,
        algorithm: A,
        heap_bytes: Option<fn(&A::State) -> usize>,
    ) -> Result<Outcome, SimError> {
        let sc = self.scenario;
        let rule = sc.rule;
        let name = algorithm.name().to_string();
        let silent = self.sink.is_none();
        let clock = FakeClock::new(Nanos::ZERO);
        let limiter: RateLimiter<A, u32, FakeClock> =
            RateLimiter::with_clock(algorithm, clock.clone());
        let reference: Option<RateLimiter<SlidingWindowLog, u32, FakeClock>> =
            (sc.client == ClientModel::Open && !silent && name != "sliding_window_log")
                .then(|| RateLimiter::with_clock(SlidingWindowLog::new(rule), clock.clone()));
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

        let mut stream = ArrivalStream::new(sc)?;
        let mut queue = EventQueue::default();
        let mut m = Metrics {
            algorithm: name.clone(),
            ..Metrics::default()
        };
        let (mut false_allow, mut false_deny) = (0, 0);
        let (mut succeeded, mut gave_up, mut unfinished, mut wasted) = (0, 0, 0, 0);
        let mut tracker = WindowTracker::new(rule.window(), rule.max_requests());
        let mut series = SeriesThinner::new(sc.duration);
        let mut track = self.track;
        let mut timeline = Timeline::new(sc.duration);
        let mut latency = LatencyHistogram::default();

        let duration = sc.duration.as_u64();
        let sweep_every = rule.window().as_u64().max(duration.div_ceil(1000));
        let mut next_sweep = sweep_every;
        let mut janitor = Janitor::<A> {
            heap_bytes,
            touched: Vec::new(),
            marked: Vec::new(),
            peak_keys: 0,
            state_bytes: std::mem::size_of::<A::State>() as u64,
        };
        let (mut events, mut reported) = (0u64, 0u64);

        let mut next_arrival = stream.next_arrival()?;
        loop {
            let arrival_time = next_arrival.map_or(Nanos::MAX, |(_, a)| a.time);
            let event = match queue.pop_due(arrival_time) {
                Some(retry) => retry,
                None => match next_arrival {
                    None => break,
                    Some((seq, a)) => {
                        next_arrival = stream.next_arrival()?;
                        Event {
                            time: a.time,
                            seq,
                            key: a.key,
                            cost: a.cost,
                            attempt: 0,
                            first: a.time,
                        }
                    }
                },
            };
            let now = event.time;
            while now.as_u64() >= next_sweep {
                clock.set(Nanos::new(next_sweep));
                janitor.sweep(&limiter, true);
                if let Some(r) = &reference {
                    r.evict_idle();
                }
                next_sweep = next_sweep.saturating_add(sweep_every);
            }
            clock.set(now);
            if janitor.heap_bytes.is_some() {
                janitor.touch(event.key);
            }

            let (allowed, remaining, retry_after) =
                match limiter.try_acquire_n(&event.key, event.cost) {
                    Ok(d) => (d.allowed, d.remaining, d.retry_after),
                    Err(_) => (false, limiter.peek(&event.key).remaining, Nanos::MAX),
                };
            m.attempts += 1;
            if event.attempt == 0 {
                m.requests += 1;
            }
            timeline.record(now, allowed);
            if allowed {
                m.allowed += 1;
                let tracked = *track.get_or_insert(event.key);
                if event.key == tracked {
                    tracker.admit(event.key, now, event.cost, |t, c| series.push(t, c));
                } else {
                    tracker.admit(event.key, now, event.cost, |_, _| {});
                }
                if retry {
                    succeeded += 1;
                    latency.record(now - event.first);
                }
            } else {
                m.denied += 1;
                if event.attempt > 0 {
                    wasted += 1;
                }
                if retry_after == Nanos::MAX {
                    m.never_fits += 1;
                } else {
                    if !silent {
                        let state = limiter.snapshot(&event.key);
                        if let Some(earliest) = state.and_then(|s| {
                            earliest_pass(limiter.algorithm(), &s, now, retry_after, event.cost)
                        }) {
                            judge(&mut m, now, retry_after, earliest);
                        }
                    }
                    if retry {
                        if event.attempt >= max_retries {
                            gave_up += 1;
                        } else {
                            let extra = match jitter.as_u64() {
                                0 => 0,
                                j => jitter_rng.random_range(0..=j),
                            };
                            let at = now + retry_after + Nanos::new(extra);
                            if at >= sc.duration {
                                unfinished += 1;
                            } else {
                                queue.push(Event {
                                    time: at,
                                    attempt: event.attempt + 1,
                                    ..event
                                });
                            }
                        }
                    }
                }
            }
            if let Some(r) = &reference {
                let log_allowed = r
                    .try_acquire_n(&event.key, event.cost)
                    .is_ok_and(|d| d.allowed);
                false_allow += u64::from(allowed && !log_allowed);
                false_deny += u64::from(!allowed && log_allowed);
            }
            if let Some(sink) = self.sink.as_mut() {
                let row = DecisionRow {
                    algorithm: &name,
                    seq: event.seq,
                    attempt: event.attempt,
                    time: now,
                    key: stream.keys().name(event.key),
                    cost: event.cost,
                    allowed,
                    remaining,
                    retry_after,
                };
                sink.record(&row).map_err(|source| SimError::Sink {
                    algorithm: name.clone(),
                    source,
                })?;
            }
            events += 1;
            if events.is_multiple_of(4096)
                && let Some(p) = self.progress
            {
                let step = (u128::from(now.as_u64()) * u128::from(PROGRESS_STEPS)
                    / u128::from(duration)) as u64;
                let step = step.min(PROGRESS_STEPS);
                p.add(step.saturating_sub(reported));
                reported = reported.max(step);
            }
        }
        clock.set(sc.duration);
        janitor.sweep(&limiter, false);
        if let Some(p) = self.progress {
            p.add(PROGRESS_STEPS - reported);
        }

        let tracked_max = track.map_or(0, |k| tracker.max_of(k));
        if let Some(k) = track {
            tracker.finish(k, sc.duration, |t, c| series.push(t, c));
        }
        m.max_in_window = tracker.max;
        m.worst_key = tracker
            .worst_key
            .map_or_else(String::new, |k| stream.keys().name(k).to_string());
        m.over_admission = tracker.max as f64 / rule.max_requests() as f64;
        m.excess = tracker.excess;
        m.allow_rate = if m.attempts == 0 {
            0.0
        } else {
            m.allowed as f64 / m.attempts as f64
        };
        if sc.client == ClientModel::Open {
            m.false_allow = Some(false_allow);
            m.false_deny = Some(false_deny);
        } else {
            m.succeeded = Some(succeeded);
            m.gave_up = Some(gave_up);
            m.unfinished = Some(unfinished);
            m.wasted_retries = Some(wasted);
            m.latency_p50_ns = latency.quantile(0.5).or(Some(0));
            m.latency_p99_ns = latency.quantile(0.99).or(Some(0));
            m.latency_max_ns = latency.max().or(Some(0));
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
            tracked_max,
        })
    }
}

/// Counts `retry_after` (and its whole-second header form) against the exact
/// earliest instant the denied request would pass.
fn judge(m: &mut Metrics, now: Nanos, retry_after: Nanos, earliest: Nanos) {
    let now = u128::from(now.as_u64());
    let earliest = u128::from(earliest.as_u64());
    match Honesty::judge(now + u128::from(retry_after.as_u64()), earliest) {
        Honesty::Exact => m.retry_after_exact += 1,
        Honesty::TooEarly => m.retry_after_too_early += 1,
        Honesty::TooLate => m.retry_after_too_late += 1,
    }
    // HTTP's Retry-After: whole seconds, rounded up, and never 0 on a denial.
    let secs = retry_after.as_u64().div_ceil(NANOS_PER_SEC).max(1);
    match Honesty::judge(now + u128::from(secs) * u128::from(NANOS_PER_SEC), earliest) {
        Honesty::Exact => m.retry_after_secs_exact += 1,
        Honesty::TooEarly => m.retry_after_secs_too_early += 1,
        Honesty::TooLate => m.retry_after_secs_too_late += 1,
    }
}

/// The earliest instant after `now` at which a request of `cost` passes on a copy of
/// `state` (nothing else happening), or `None` if it never does. The request was just
/// denied at `now`. The advertised wait is tried first, so an exact algorithm costs
/// two probes; otherwise the instant is found by exponential then binary search.
pub(crate) fn earliest_pass<A: Algorithm>(
    algorithm: &A,
    state: &A::State,
    now: Nanos,
    hint: Nanos,
    cost: u64,
) -> Option<Nanos> {
    let passes = |t: u64| algorithm.try_acquire(&mut state.clone(), Nanos::new(t), cost);
    let mut fails = now.as_u64(); // known: denied at `now`
    let guess = (now + hint).as_u64();
    let mut pass = if guess > fails && passes(guess) {
        if !passes(guess - 1) {
            return Some(Nanos::new(guess));
        }
        guess
    } else {
        fails = fails.max(guess);
        let mut step = hint.as_u64().max(1);
        loop {
            let t = fails.saturating_add(step);
            if passes(t) {
                break t;
            }
            if t == u64::MAX {
                return None;
            }
            fails = t;
            step = step.saturating_mul(2);
        }
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
                if let Some(state) = limiter.snapshot(&key) {
                    let bytes = std::mem::size_of::<A::State>() + heap_bytes(&state);
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
