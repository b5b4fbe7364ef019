//! A run, top-down: the algorithms dealt into groups (one per worker thread, each with
//! its own sinks), the stream fed to each group in lockstep, and the reports put back
//! in the scenario's order.
//!
//! Each group is independent and its results are keyed by algorithm index, so the
//! grouping (and the thread count) cannot affect the report. With several groups, the
//! calling thread generates the arrival stream once and sends it to all of them
//! (`stream`). Threads share only that stream, the progress counter and the reference's
//! decisions, whose channels are laid here; nothing here decides or measures a request.
//!
//! One group's share of a run: its algorithms fed in lockstep, each chunk after the
//! reference has decided it, then, for an algorithm whose worst key is not the one the
//! first pass drew, a silent second pass that redraws it. A group's results depend only
//! on its own algorithms, never on which thread runs it or on the other groups.

use std::sync::Arc;
use std::sync::mpsc::sync_channel;

use super::dispatch::{self, driver};
use super::driver::{Drive, Job, Mode, Progress};
use super::record::Outcome;
use super::server::{MEMORY, StateBackend};
use super::stream::{
    self, CHUNK, GroupCount, History, Received, ReferenceFeed, Share, Stopped, next_chunk,
};
use crate::registry::{Builtin, Entry, Registry};
use crate::sim::traffic::Arrival;
use crate::sim::{
    AlgorithmReport, ArrivalStream, ClientModel, DecisionSink, DeploymentReport, KeyTable,
    RuleReport, RunReport, Scenario, ScenarioError, SimError, TrafficKind,
};

/// How to run. [`RunOptions::default()`] is the one source of the defaults; the CLI
/// reads its own from here.
#[derive(Clone, Copy)]
pub struct RunOptions<'a> {
    /// Worker threads; algorithms are spread over them. 0 or 1 runs sequentially.
    /// Results do not depend on this. Default: the machine's available parallelism
    /// ([`std::thread::available_parallelism`]), or 1 when it cannot be known.
    pub threads: usize,
    /// Called now and then with `(done, total)` progress units: each algorithm
    /// contributes [`PROGRESS_STEPS`](crate::sim::PROGRESS_STEPS) units as its simulated
    /// time advances. Called from worker threads; `done` only grows and reaches `total`
    /// when the run ends.
    pub progress: Option<&'a (dyn Fn(u64, u64) + Sync)>,
    /// Where the scenario's algorithm names are found and built: the registry the
    /// scenario was parsed with ([`Scenario::parse_with`]). Default: the built-ins.
    pub registry: &'a Registry,
    /// Where the algorithms' key states live. Default: [`StateBackend::Memory`].
    pub store: &'a StateBackend,
}

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
    run_in_chunks(scenario, options, sinks, CHUNK)
}

/// [`run`], with the stream fed in chunks of `chunk` arrivals: [`CHUNK`], but for the
/// tests that prove no result depends on where a chunk ends.
fn run_in_chunks(
    scenario: &Scenario,
    options: &RunOptions<'_>,
    sinks: &mut dyn FnMut(&str) -> std::io::Result<Box<dyn DecisionSink>>,
    chunk: usize,
) -> Result<RunReport, SimError> {
    if scenario.algorithms.is_empty() {
        return Err(SimError::NoAlgorithms);
    }
    let registry = scenario.registry(options.registry)?;
    dispatch::check_store(scenario, &registry, options.store)?;
    let threads = options.threads.clamp(1, scenario.algorithms.len());
    let groups = deal(scenario, &registry, threads, sinks)?;
    let progress = Progress::new(scenario.algorithms.len(), options.progress);
    let algorithms = run_groups(scenario, groups, &progress, options.store, chunk)?;
    Ok(report_of(scenario, algorithms))
}

/// The report of `scenario`'s run, from its algorithms' results.
pub(super) fn report_of(scenario: &Scenario, algorithms: Vec<AlgorithmReport>) -> RunReport {
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

/// Deals the scenario's algorithms (found in `registry`) round-robin into `threads`
/// groups, opening each one's sink, in order, before any simulation starts (so a bad
/// output path or an unknown name fails early).
pub(super) fn deal<'a>(
    scenario: &'a Scenario,
    registry: &'a Registry,
    threads: usize,
    sinks: &mut dyn FnMut(&str) -> std::io::Result<Box<dyn DecisionSink>>,
) -> Result<Vec<Vec<Assigned<'a>>>, SimError> {
    let mut groups: Vec<Vec<Assigned<'_>>> = (0..threads).map(|_| Vec::new()).collect();
    for (index, name) in scenario.algorithms.iter().enumerate() {
        let entry = registry.entry(name)?;
        let sink = sinks(name).map_err(|source| SimError::Sink {
            algorithm: name.clone(),
            source,
        })?;
        groups[index % threads].push(Assigned { index, entry, sink });
    }
    Ok(groups)
}

/// Runs every group, on the calling thread when there is one group and on a scoped
/// thread each otherwise; the reports come back in the scenario's order, or the first
/// algorithm's (in that order) error.
pub(super) fn run_groups<'a>(
    scenario: &'a Scenario,
    groups: Vec<Vec<Assigned<'a>>>,
    progress: &'a Progress<'a>,
    store: &'a StateBackend,
    chunk: usize,
) -> Result<Vec<AlgorithmReport>, SimError> {
    let shared = share_reference(scenario, &groups);
    let keep_history = keeps_history(scenario);
    let finished: Vec<Vec<Finished>> = if groups.len() == 1 {
        groups
            .into_iter()
            .zip(shared)
            .map(|(g, share)| {
                let source = Source::Generate { keep_history };
                run_group(scenario, g, progress, share, store, source, chunk)
            })
            .collect()
    } else {
        std::thread::scope(|s| {
            let mut senders = Vec::new();
            let mut handles = Vec::new();
            for (g, share) in groups.into_iter().zip(shared) {
                let (tx, rx) = sync_channel(stream::SLACK);
                senders.push(tx);
                let source = Source::Receive(Received::new(rx));
                let group = move || run_group(scenario, g, progress, share, store, source, chunk);
                handles.push(s.spawn(group));
            }
            // This thread generates the stream once for every group.
            let produced = stream::produce(scenario, senders, keep_history, chunk);
            let finished = handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect();
            produced.map(|()| finished)
        })?
    };
    in_scenario_order(scenario, finished)
}

/// With open clients and several groups, the sliding log's decisions are computed once,
/// by the group that runs the log as an algorithm, and sent to the others chunk by
/// chunk, instead of every other group running its own copy of the log. The stream and
/// the log are deterministic, so this changes no result.
fn share_reference(scenario: &Scenario, groups: &[Vec<Assigned<'_>>]) -> Vec<Share> {
    let mut shares: Vec<Share> = groups.iter().map(|_| Share::Alone).collect();
    let owner = groups.iter().position(|g| {
        g.iter()
            .any(|a| a.entry.builtin() == Some(Builtin::SlidingWindowLog))
    });
    let (Some(owner), ClientModel::Open, None) = (owner, scenario.client, scenario.deployment)
    else {
        // Under a deployment no run is the reference (the deployed log is compared
        // with the one global log), so every group keeps its own copy of the log.
        return shares;
    };
    let mut senders = Vec::new();
    for (i, share) in shares.iter_mut().enumerate() {
        if i != owner {
            // A few chunks of slack so the two threads rarely wait for each other.
            let (tx, rx) = sync_channel(stream::SLACK);
            senders.push(tx);
            *share = Share::Receive(rx);
        }
    }
    shares[owner] = Share::Send(senders);
    shares
}

fn in_scenario_order(
    scenario: &Scenario,
    finished: Vec<Vec<Finished>>,
) -> Result<Vec<AlgorithmReport>, SimError> {
    let mut results: Vec<Option<Result<AlgorithmReport, SimError>>> =
        scenario.algorithms.iter().map(|_| None).collect();
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
    Ok(algorithms)
}

/// One algorithm handed to a worker: its index in the scenario and its sink.
pub(super) struct Assigned<'a> {
    pub(super) index: usize,
    pub(super) entry: &'a Entry,
    pub(super) sink: Box<dyn DecisionSink>,
}

/// One algorithm's result, with its index in the scenario.
pub(super) type Finished = (usize, Result<AlgorithmReport, SimError>);

/// Where a pass gets the arrival stream.
pub(super) enum Source {
    /// Generates it itself (the only group of a run), keeping its [`History`] when
    /// `keep_history` (see [`keeps_history`]).
    Generate { keep_history: bool },
    /// Receives it from the run's producer (one of several groups, see `stream`).
    Receive(Received),
    /// Generates the arrivals of these keys only (ids in this table, the first pass's):
    /// a silent second pass whose drivers each look at one key.
    Only(KeyTable, Vec<u32>),
    /// Replays the arrivals of these keys from the first pass's history (ids in this
    /// table, the first pass's): the same arrivals as `Only`, without generating the
    /// stream again.
    Replay(KeyTable, Arc<History>, Vec<u32>),
}

/// Whether the first pass of `scenario` keeps the stream's [`History`] for a second
/// pass to replay. Only with open clients on one server, where a key's decisions depend
/// on its own arrivals alone (eviction forgets only states indistinguishable from fresh
/// ones): retrying clients share their jitter draws, and a deployment's routing and
/// nodes are moved by every key, so those need the whole stream again. And only when
/// the stream replays a trace, whose parsing is most of a run's cost: a generated
/// stream is drawn again instead (for only the wanted keys' sources), at the cost of
/// its random draws, which is less than its history's memory is worth (46 MB for 10 M
/// Poisson arrivals over 100,000 clients).
pub(super) fn keeps_history(scenario: &Scenario) -> bool {
    scenario.client == ClientModel::Open
        && scenario.deployment.is_none()
        && (scenario.traffic.iter()).any(|t| matches!(t.kind, TrafficKind::Trace { .. }))
}

/// Runs a group of algorithms in lockstep on one thread. If the key whose window count
/// was drawn is not an algorithm's worst key, a second, silent pass draws the worst key
/// instead (the series cannot be known to be needed until the run is over, and keeping
/// it for every key would not fit in bounded memory).
///
/// If the producer of a received stream stops early, the group stops too and returns
/// no results: the producer's error is the run's.
pub(super) fn run_group<'a>(
    scenario: &'a Scenario,
    group: Vec<Assigned<'a>>,
    progress: &'a Progress<'a>,
    share: Share,
    store: &'a StateBackend,
    source: Source,
    chunk: usize,
) -> Vec<Finished> {
    let mut results = Vec::new();
    let mut drivers = Vec::new();
    let mut owners = Vec::new();
    let entries: Vec<&Entry> = group.iter().map(|a| a.entry).collect();
    let count = GroupCount::new(scenario, &entries, true);
    for (i, a) in group.into_iter().enumerate() {
        let job = Job {
            scenario,
            entry: a.entry,
            mode: Mode::Report(a.sink),
            progress: Some(progress),
            by_group: count.counts(i),
        };
        drivers.push(driver(job, store));
        owners.push((a.index, a.entry));
    }
    let Ok((first, keys, history)) = run_pass(scenario, drivers, count, share, source, chunk)
    else {
        return Vec::new();
    };
    let mut again = Vec::new();
    let mut again_slots = Vec::new();
    for ((index, entry), outcome) in owners.into_iter().zip(first) {
        let outcome = outcome.and_then(known_key).map(|o| {
            if let Some(d) = second_pass(scenario, entry, &o, store) {
                again.push(d);
                again_slots.push(results.len());
            }
            o.report
        });
        results.push((index, outcome));
    }
    // When every silent driver looks at one key only (open clients on one server), the
    // arrivals of those keys are all they need, replayed from the first pass's history
    // when it was kept (see `keeps_history`); otherwise they get the whole stream.
    let only: Option<Vec<u32>> = again.iter().map(|d| d.only_key()).collect();
    let source = match (only, keys, history) {
        (Some(wanted), Some(keys), Some(history)) => Source::Replay(keys, history, wanted),
        (Some(wanted), Some(keys), None) => Source::Only(keys, wanted),
        _ => Source::Generate {
            keep_history: false,
        },
    };
    // A stream the group generates itself never stops early: errors are in the results.
    let silent = GroupCount::default();
    let second = run_pass(scenario, again, silent, Share::Alone, source, chunk)
        .map(|(outcomes, _, _)| outcomes)
        .unwrap_or_default();
    for (slot, outcome) in again_slots.into_iter().zip(second) {
        let result = &mut results[slot].1;
        match (outcome, result.as_mut()) {
            (Ok(o), Ok(report)) => {
                report.window_counts = o.report.window_counts;
                report.window_key = o.report.window_key;
            }
            (Err(e), _) => *result = Err(e),
            (Ok(_), Err(_)) => {}
        }
    }
    results
}

/// Fails the run when `--key` named a client that never sent a request.
fn known_key(outcome: Outcome) -> Result<Outcome, SimError> {
    match &outcome.wanted {
        Some(Err((key, hint))) => Err(SimError::UnknownKey {
            key: key.clone(),
            hint: hint.clone(),
        }),
        _ => Ok(outcome),
    }
}

/// The silent driver that redraws the window count of the key `--key` chose, or else
/// of the worst key, if the first pass drew another key's.
fn second_pass<'a>(
    scenario: &'a Scenario,
    entry: &'a Entry,
    first: &Outcome,
    store: &'a StateBackend,
) -> Option<Box<dyn Drive + 'a>> {
    let worst = match first.wanted {
        Some(Ok(wanted)) if first.tracked != Some(wanted) => wanted,
        Some(_) => return None,
        None if first.tracked_max >= first.report.metrics.max_in_window => return None,
        None => first.worst?,
    };
    let job = Job {
        scenario,
        entry,
        mode: Mode::Redraw(worst),
        progress: None,
        by_group: false,
    };
    Some(driver(job, store))
}

/// A pass's outcomes, one per driver, the stream's keys (`None` if the stream failed
/// or there was no driver to feed), and its history when one was kept.
type Pass = (
    Vec<Result<Outcome, SimError>>,
    Option<KeyTable>,
    Option<Arc<History>>,
);

/// Feeds the stream from `source`, `chunk` arrivals at a time, to every driver (and to
/// `count`), and finishes them; with the stream's keys, unless it failed.
fn run_pass<'a>(
    scenario: &'a Scenario,
    mut drivers: Vec<Box<dyn Drive + 'a>>,
    mut count: GroupCount,
    share: Share,
    source: Source,
    chunk: usize,
) -> Result<Pass, Stopped> {
    if drivers.is_empty() {
        return Ok((Vec::new(), None, None));
    }
    let mut reference = ReferenceFeed::new(scenario, &drivers, share, chunk);
    let fed = match source {
        Source::Generate { keep_history } => generate_all(
            ArrivalStream::new(scenario),
            chunk,
            keep_history,
            &mut reference,
            &mut count,
            &mut drivers,
        ),
        Source::Only(keys, wanted) => generate_all(
            ArrivalStream::only(scenario, keys, &wanted),
            chunk,
            false,
            &mut reference,
            &mut count,
            &mut drivers,
        ),
        Source::Replay(keys, history, wanted) => {
            let arrivals = history.replay(&wanted);
            replay_all(
                arrivals,
                chunk,
                &mut reference,
                &mut count,
                &mut drivers,
                &keys,
            );
            Ok((keys, None))
        }
        Source::Receive(received) => Ok(receive_all(
            received,
            &mut reference,
            &mut count,
            &mut drivers,
        )?),
    };
    Ok(match fed {
        Ok((keys, history)) => {
            let mut counted = count.finish(scenario.duration).into_iter();
            let outcomes = (drivers.into_iter())
                .map(|d| d.finish(&keys, counted.next().flatten()))
                .collect();
            (outcomes, Some(keys), history)
        }
        Err(e) => {
            let outcomes = drivers
                .iter()
                .map(|_| Err(SimError::Scenario(e.clone())))
                .collect();
            (outcomes, None, None)
        }
    })
}

/// A stream's keys at its end, and its history when one was kept.
type Fed = (KeyTable, Option<Arc<History>>);

/// Feeds `stream` to the drivers, `size` arrivals at a time, keeping its history when
/// `keep_history`.
fn generate_all(
    stream: Result<ArrivalStream, ScenarioError>,
    size: usize,
    keep_history: bool,
    reference: &mut ReferenceFeed,
    count: &mut GroupCount,
    drivers: &mut [Box<dyn Drive + '_>],
) -> Result<Fed, ScenarioError> {
    let mut stream = stream?;
    let mut history = keep_history.then(History::default);
    let mut chunk = Vec::with_capacity(size);
    loop {
        next_chunk(&mut stream, &mut chunk, size)?;
        History::keep(&mut history, &chunk);
        if chunk.is_empty() {
            return Ok((stream.into_keys(), history.map(Arc::new)));
        }
        feed_chunk(reference, count, drivers, &chunk, stream.keys());
    }
}

/// Feeds the drivers the `arrivals` replayed from a history, `size` at a time.
fn replay_all(
    mut arrivals: impl Iterator<Item = (u64, Arrival)>,
    size: usize,
    reference: &mut ReferenceFeed,
    count: &mut GroupCount,
    drivers: &mut [Box<dyn Drive + '_>],
    keys: &KeyTable,
) {
    let mut chunk = Vec::with_capacity(size);
    loop {
        chunk.clear();
        chunk.extend(arrivals.by_ref().take(size));
        if chunk.is_empty() {
            return;
        }
        feed_chunk(reference, count, drivers, &chunk, keys);
    }
}

/// Feeds the drivers every chunk the producer sends; the stream's keys at its end.
fn receive_all(
    mut received: Received,
    reference: &mut ReferenceFeed,
    count: &mut GroupCount,
    drivers: &mut [Box<dyn Drive + '_>],
) -> Result<Fed, Stopped> {
    while let Some(chunk) = received.next()? {
        feed_chunk(reference, count, drivers, &chunk, received.keys());
    }
    Ok(received.finish())
}

/// Feeds one chunk to every driver of a group that shares one rule: the reference
/// decides it first (running the log driver, if the group has one), then every other
/// driver is compared with it; then `count` counts the admissions of the drivers it
/// counts.
pub(super) fn feed_chunk(
    reference: &mut ReferenceFeed,
    count: &mut GroupCount,
    drivers: &mut [Box<dyn Drive + '_>],
    chunk: &[(u64, Arrival)],
    keys: &KeyTable,
) {
    let log_driver = reference.log_driver;
    let log = reference.decide(chunk, drivers, keys);
    for (i, d) in drivers.iter_mut().enumerate() {
        if Some(i) != log_driver {
            d.feed(chunk, log, keys, count.decisions(i));
        }
    }
    count.count(chunk, log_driver.zip(log));
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Mutex;

    use super::*;
    use crate::sim::metrics::MAX_LANES;
    use crate::sim::{DecisionRow, NoopSink};
    use crate::time::Nanos;

    /// The shares `share_reference` lays for `extra` (a `[client]` or `[deployment]`
    /// table) under three algorithms dealt into two groups: the sliding log is the
    /// second, so the second group owns it.
    fn shares(extra: &str) -> Vec<Share> {
        let text = format!(
            "name = \"s\"\nduration = \"1s\"\n\
             algorithms = [\"token_bucket\", \"sliding_window_log\", \"gcra\"]\n\
             [limit]\nmax_requests = 5\nwindow = \"1s\"\n\
             [[traffic]]\nkind = \"uniform\"\nrate = 4\n{extra}"
        );
        let scenario = Scenario::parse(&text, Path::new("s.toml")).unwrap();
        let groups = deal(&scenario, Registry::builtin(), 2, &mut |_| {
            Ok(Box::new(NoopSink))
        })
        .unwrap();
        share_reference(&scenario, &groups)
    }

    /// Which runs of a group are counted together, a lane each: built-ins, with open
    /// clients on one server under one rule, at most [`MAX_LANES`] of them. Any other
    /// run keeps a tracker of its own; the counts are the same either way, so only this
    /// test notices which way a run is counted.
    #[test]
    fn a_group_counts_built_ins_of_open_clients_under_one_rule_a_lane_each() {
        let base = "name = \"s\"\nduration = \"1s\"\nalgorithms = [\"gcra\"]\n\
                    [[traffic]]\nkind = \"uniform\"\nrate = 4\n";
        let scenario =
            |extra: &str| Scenario::parse(&format!("{base}{extra}"), Path::new("s.toml")).unwrap();
        let one = "[limit]\nmax_requests = 5\nwindow = \"1s\"\n";
        let registry = Registry::builtin();
        let gcra = registry.entry("gcra").unwrap();
        let log = registry.entry("sliding_window_log").unwrap();
        let preset = crate::presets::tower_entry();
        let preset = &preset;
        assert!(preset.builtin().is_none(), "a preset is not a built-in");

        let open = scenario(one);
        let count = GroupCount::new(&open, &[gcra, preset, log], true);
        let counted: Vec<bool> = (0..3).map(|i| count.counts(i)).collect();
        assert_eq!(counted, [true, false, true]);
        let nine = vec![gcra; MAX_LANES + 1];
        let count = GroupCount::new(&open, &nine, false);
        let counted: Vec<bool> = (0..nine.len()).map(|i| count.counts(i)).collect();
        let mut expected = vec![true; MAX_LANES];
        expected.push(false);
        assert_eq!(counted, expected, "the lanes after the {MAX_LANES}th");

        for extra in [
            format!("{one}[client]\nkind = \"retry\"\n"),
            format!("{one}[deployment]\nnodes = 2\nstore = \"local\"\n"),
            "[[limit]]\nmax_requests = 5\nwindow = \"1s\"\n\
             [[limit]]\nmax_requests = 9\nwindow = \"10s\"\n"
                .to_string(),
        ] {
            let count = GroupCount::new(&scenario(&extra), &[gcra, log], true);
            assert!(!count.counts(0) && !count.counts(1), "{extra}");
        }
        assert!(!GroupCount::default().counts(0));
    }

    #[test]
    fn the_group_running_the_sliding_log_sends_its_decisions_to_the_others() {
        let open = shares("");
        assert!(matches!(&open[0], Share::Receive(_)));
        assert!(matches!(&open[1], Share::Send(senders) if senders.len() == 1));
        // Retry clients see different streams per algorithm, and a deployment's log is
        // not the reference: every group keeps its own copy.
        for extra in [
            "[client]\nkind = \"retry\"\n",
            "[deployment]\nnodes = 2\nstore = \"local\"\n",
        ] {
            let alone = shares(extra);
            assert!(alone.iter().all(|s| matches!(s, Share::Alone)), "{extra}");
        }
    }

    /// A sink that keeps each decision as its `Debug` text.
    impl DecisionSink for Arc<Mutex<Vec<String>>> {
        fn record(&mut self, row: &DecisionRow<'_>) -> std::io::Result<()> {
            self.lock().unwrap().push(format!("{row:?}"));
            Ok(())
        }
    }

    /// The report of `scenario` and each algorithm's decisions, fed `chunk` arrivals at
    /// a time on `threads` threads.
    fn in_chunks(scenario: &Scenario, threads: usize, chunk: usize) -> (RunReport, Vec<String>) {
        let mut rows = Vec::new();
        let options = RunOptions {
            threads,
            ..RunOptions::default()
        };
        let mut sinks = |_: &str| -> std::io::Result<Box<dyn DecisionSink>> {
            rows.push(Arc::new(Mutex::new(Vec::new())));
            Ok(Box::new(Arc::clone(rows.last().unwrap())))
        };
        let report = run_in_chunks(scenario, &options, &mut sinks, chunk).unwrap();
        (
            report,
            rows.iter()
                .flat_map(|r| r.lock().unwrap().clone())
                .collect(),
        )
    }

    /// Where a chunk ends is no result's business: every bundled scenario (its first
    /// 10 s) and the presets (nginx and tower delaying) give the same report and
    /// decisions in chunks of 1 and 7 arrivals as in [`CHUNK`]s, on one thread and on
    /// two. A rule that holds only inside a chunk, or only at a chunk's start, fails
    /// here whatever [`CHUNK`] is.
    #[test]
    fn no_result_depends_on_where_a_chunk_ends() {
        let bundled = crate::bundled::SCENARIOS.iter();
        let mut scenarios: Vec<_> = bundled
            .map(|(file, text)| Scenario::parse(text, &Path::new("scenarios").join(file)))
            .collect::<Result<_, _>>()
            .unwrap();
        let presets = "name = \"presets\"\nduration = \"10s\"\nalgorithms = [\"presets\"]\n\
                       [limit]\nmax_requests = 5\nwindow = \"1s\"\n\
                       [[traffic]]\nkind = \"poisson\"\nrate = \"2x\"\nkeys = 3\n\
                       [preset.nginx]\nburst = 4\n";
        scenarios.push(Scenario::parse(presets, Path::new("presets.toml")).unwrap());
        let cut = Nanos::from_secs(10);
        for mut scenario in scenarios {
            scenario.duration = scenario.duration.min(cut);
            for t in &mut scenario.traffic {
                t.end = t.end.min(cut).max(t.start);
            }
            for threads in [1, 2] {
                let whole = in_chunks(&scenario, threads, CHUNK);
                assert!(!whole.1.is_empty(), "{}: no decision", scenario.name);
                for chunk in [1, 7] {
                    let (report, rows) = in_chunks(&scenario, threads, chunk);
                    let at = format!("{} in chunks of {chunk}, {threads}", scenario.name);
                    assert!(report == whole.0, "{at}: the reports differ");
                    assert!(rows == whole.1, "{at}: the decisions differ");
                }
            }
        }
    }
}
