//! The discrete-event engine: feeds each algorithm its stream through the library's
//! own state store for numbered clients, [`DenseLimiter`](crate::DenseLimiter), at the
//! instants of a fake clock, and measures what it decides.
//!
//! The engine owns event order and client behaviour; it never decides a request
//! itself (the limiter does) and never writes files (sinks do).
//!
//! ## How a run works
//! - Algorithms are dealt round-robin to the worker threads. The arrival stream is
//!   generated from the seed once, a chunk at a time (by the only worker, or by the
//!   calling thread for all of them), and each worker feeds each chunk to every
//!   algorithm it owns in turn: every algorithm sees the identical stream, the stream
//!   is never held in memory whole, and a thread's results do not depend on which
//!   other algorithms share it, so a threaded run equals a sequential one.
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
//!   admission (see `probe::Probes`).
//! - The engine owns its limiters and numbers its clients, so a client's state is one
//!   index away (no hashing, no lock); the trailing-window counts are updated after
//!   each chunk, in order.
//! - A janitor sweep (every `max(W, duration / 1000)`) evicts idle keys, as a real
//!   deployment would, and samples `peak_keys` and per-key state size.
//!
//! ## Where each concept lives
//! - `threads`: dealing algorithms into groups, one worker thread per group, and the
//!   channels that share the stream and the reference between them.
//! - `stream`: the stream a chunk at a time, fanned out to several workers (a run's
//!   groups, a sweep's workers), and the history a second pass replays.
//! - `group`: one group in lockstep over the chunked stream, and the second pass.
//! - `reference`: the exact reference and where a group gets its decisions.
//! - `compare`: one algorithm's decisions counted against the reference's.
//! - `dispatch`: algorithm names to monomorphised drivers (the one place).
//! - `driver`: one algorithm's run on one server, the per-arrival step.
//! - `steps`: how every driver is run (chunks, retries first, drain) and the state
//!   every driver keeps.
//! - `attempt`: one request attempt and the limiter's answer, passed between these.
//! - `queue` and `retry`: the event queue and the retry clients.
//! - `probe`: the earliest passing instant of each denial, and the advice judged.
//! - `states`: where one algorithm's key states live (the library's `DenseLimiter` in
//!   memory, or Redis) and what a run asks of them.
//! - `janitor`: the periodic idle-key sweep and memory samples.
//! - `record`: counters, window counts, timeline and decision rows.
//! - `progress`: progress units, shared across threads.
//! - `deployment`: a scenario's `[deployment]`: several servers, a balancer and a
//!   store, in true time (its own driver; a scenario without one never reaches it).
//! - `sweep`: one stream fanned out to many configurations of the limit.

mod attempt;
mod chart_key;
mod compare;
mod deployment;
mod dispatch;
mod driver;
mod group;
mod janitor;
mod probe;
mod progress;
mod queue;
mod record;
mod reference;
mod retry;
mod server;
mod states;
mod stream;
mod sweep;
mod threads;

pub use dispatch::check_store;
pub use progress::PROGRESS_STEPS;
pub use sweep::{check_sweepable, sweep};

use progress::Progress;

use super::{
    AlgorithmReport, DecisionSink, DeploymentReport, RuleReport, RunReport, Scenario, SimError,
};
use crate::registry::Registry;

/// How to run. [`RunOptions::default()`] is the one source of the defaults; the CLI
/// reads its own from here.
#[derive(Clone, Copy)]
pub struct RunOptions<'a> {
    /// Worker threads; algorithms are spread over them. 0 or 1 runs sequentially.
    /// Results do not depend on this. Default: the machine's available parallelism
    /// ([`std::thread::available_parallelism`]), or 1 when it cannot be known.
    pub threads: usize,
    /// Called now and then with `(done, total)` progress units: each algorithm
    /// contributes [`PROGRESS_STEPS`] units as its simulated time advances. Called from
    /// worker threads; `done` only grows and reaches `total` when the run ends.
    pub progress: Option<&'a (dyn Fn(u64, u64) + Sync)>,
    /// Where the scenario's algorithm names are found and built: the registry the
    /// scenario was parsed with ([`Scenario::parse_with`]). Default: the built-ins.
    pub registry: &'a Registry,
    /// Where the algorithms' key states live. Default: [`StateStore::Memory`].
    pub store: &'a StateStore,
}

/// Where a run keeps its algorithms' key states. The decisions, and so every report,
/// are the same on every store; only what the run measures of memory differs.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum StateStore {
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
static MEMORY: StateStore = StateStore::Memory;

impl Default for RunOptions<'_> {
    /// One thread per available core, no progress reports, the built-in algorithms.
    fn default() -> Self {
        RunOptions {
            threads: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            progress: None,
            registry: Registry::standard(),
            store: &MEMORY,
        }
    }
}

impl std::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("threads", &self.threads)
            .field("progress", &self.progress.is_some())
            .field("registry", &self.registry)
            .field("store", &self.store)
            .finish()
    }
}

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
    let registry = scenario.registry(options.registry);
    dispatch::check_store(scenario, &registry, options.store)?;
    let threads = options.threads.clamp(1, scenario.algorithms.len());
    let groups = threads::deal(scenario, &registry, threads, sinks)?;
    let progress = Progress::new(scenario.algorithms.len(), options.progress);
    let algorithms = threads::run_groups(scenario, groups, &progress, options.store)?;
    Ok(report_of(scenario, algorithms))
}

/// The report of `scenario`'s run, from its algorithms' results.
fn report_of(scenario: &Scenario, algorithms: Vec<AlgorithmReport>) -> RunReport {
    RunReport {
        scenario: scenario.name.clone(),
        description: scenario.description.clone(),
        seed: scenario.seed,
        duration: scenario.duration,
        rule: RuleReport::from(&scenario.rule),
        extra_limits: scenario.extra_limits.iter().map(RuleReport::from).collect(),
        client: scenario.client.name().to_string(),
        deployment: scenario.deployment.as_ref().map(DeploymentReport::from),
        algorithms,
    }
}
