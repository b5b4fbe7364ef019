//! A sweep: one arrival stream, many configurations of the limit, every algorithm
//! under each.
//!
//! The calling thread generates the stream (parsing any trace) once, a chunk at a time,
//! and broadcasts each chunk, with the key names it introduced, to the worker threads.
//! A worker owns some *units* (one configuration's algorithms, or a share of them when
//! there are fewer configurations than threads) and feeds each unit exactly as `run`
//! feeds a group, with the same drivers and the same exact reference, so a unit's
//! results are what `run` reports for that configuration. A sweep writes no decision
//! rows and makes no second pass (which only redraws a window-count series): it
//! reports metrics.
//!
//! Results are stored by (configuration, algorithm), so neither the thread count nor
//! the dealing can change them.

use std::sync::mpsc::sync_channel;

use super::dispatch::driver;
use super::driver::{Drive, Job, Mode, Progress};
use super::run::{RunOptions, feed_chunk, report_of};
use super::server::StateBackend;
use super::stream::{self, CHUNK, GroupCount, Received, ReferenceFeed, Share};
use crate::registry::Entry;
use crate::rule::Rule;
use crate::sim::{AlgorithmReport, RunReport, Scenario, SimError, StoreUnsupported};

/// The algorithms (indices into the scenario's list) of one configuration that one
/// worker runs together, sharing one reference.
struct Unit {
    config: usize,
    algorithms: Vec<usize>,
}

/// One algorithm's result under one configuration.
type Finished = ((usize, usize), Result<AlgorithmReport, SimError>);

/// One unit of work between chunks: its reference, its window count and its drivers.
type Running<'a> = (ReferenceFeed, GroupCount, Vec<Box<dyn Drive + 'a>>);

/// Whether [`sweep`] can run `scenario`: not when it has a `[deployment]` (a sweep runs
/// one server, and would silently report a deployment as one).
pub fn check_sweepable(scenario: &Scenario) -> Result<(), SimError> {
    match scenario.deployment {
        Some(_) => Err(SimError::SweepDeployment {
            scenario: scenario.name.clone(),
        }),
        None => Ok(()),
    }
}

/// Runs every algorithm of `scenario` under each of `rules` on the scenario's one
/// stream ([`Scenario::with_rule_keeping_traffic`]: traffic that follows the limit
/// keeps the scenario's own). Returns one report per rule, in order, each as
/// [`run`](super::run) would report that configuration.
pub fn sweep(
    scenario: &Scenario,
    rules: &[Rule],
    options: &RunOptions<'_>,
) -> Result<Vec<RunReport>, SimError> {
    if scenario.algorithms.is_empty() {
        return Err(SimError::NoAlgorithms);
    }
    check_sweepable(scenario)?;
    if !matches!(options.store, StateBackend::Memory) {
        return Err(StoreUnsupported::Sweep.into());
    }
    let registry = scenario.registry(options.registry)?;
    let entries = scenario
        .algorithms
        .iter()
        .map(|name| registry.entry(name))
        .collect::<Result<Vec<_>, _>>()?;
    let configs: Vec<Scenario> = rules
        .iter()
        .map(|&rule| scenario.with_rule_keeping_traffic(rule))
        .collect();
    let threads = options.threads.max(1);
    let mut dealt: Vec<Vec<Unit>> = Vec::new();
    for (i, unit) in units(configs.len(), entries.len(), threads)
        .into_iter()
        .enumerate()
    {
        match dealt.get_mut(i % threads) {
            Some(worker) => worker.push(unit),
            None => dealt.push(vec![unit]),
        }
    }
    let progress = Progress::new(configs.len() * entries.len(), options.progress);
    let finished = run_workers(scenario, &configs, &entries, dealt, &progress)?;
    let mut slots: Vec<Vec<Option<Result<AlgorithmReport, SimError>>>> = configs
        .iter()
        .map(|_| entries.iter().map(|_| None).collect())
        .collect();
    for ((config, algorithm), result) in finished {
        slots[config][algorithm] = Some(result);
    }
    configs
        .iter()
        .zip(slots)
        .map(|(config, results)| {
            let algorithms = results
                .into_iter()
                .map(|r| r.expect("every (configuration, algorithm) belongs to one unit"))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(report_of(config, algorithms))
        })
        .collect()
}

/// Splits the work: each configuration is one unit, or, when there are fewer
/// configurations than threads, its algorithms are dealt into as many units as it
/// takes to give every thread work (each such unit then runs its own reference).
fn units(configs: usize, algorithms: usize, threads: usize) -> Vec<Unit> {
    let parts = threads.div_ceil(configs.max(1)).clamp(1, algorithms.max(1));
    (0..configs)
        .flat_map(|config| {
            (0..parts).map(move |part| Unit {
                config,
                algorithms: (part..algorithms).step_by(parts).collect(),
            })
        })
        .filter(|u| !u.algorithms.is_empty())
        .collect()
}

/// Starts one worker per group of units, produces the stream on this thread, and
/// collects every worker's results.
fn run_workers<'a>(
    scenario: &Scenario,
    configs: &'a [Scenario],
    entries: &'a [&'a Entry],
    dealt: Vec<Vec<Unit>>,
    progress: &'a Progress<'a>,
) -> Result<Vec<Finished>, SimError> {
    std::thread::scope(|s| {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for units in dealt {
            // A few chunks of slack so the producer rarely waits for a worker.
            let (tx, rx) = sync_channel(stream::SLACK);
            senders.push(tx);
            let received = Received::new(rx);
            handles.push(s.spawn(move || work(configs, entries, units, progress, received)));
        }
        // A sweep makes no second pass: no history.
        let produced = stream::produce(scenario, senders, false, CHUNK);
        let finished: Vec<Finished> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        produced.map_err(SimError::Scenario)?;
        Ok(finished)
    })
}

/// One worker: builds its units' drivers, feeds them every chunk it receives, and
/// finishes them when the stream ends.
fn work<'a>(
    configs: &'a [Scenario],
    entries: &'a [&'a Entry],
    units: Vec<Unit>,
    progress: &'a Progress<'a>,
    mut received: Received,
) -> Vec<Finished> {
    let mut running: Vec<Running<'a>> = units
        .iter()
        .map(|unit| {
            let scenario = &configs[unit.config];
            let unit_entries: Vec<&Entry> = unit.algorithms.iter().map(|&a| entries[a]).collect();
            let count = GroupCount::new(scenario, &unit_entries, false);
            let drivers: Vec<_> = (unit_entries.iter().enumerate())
                .map(|(i, &entry)| {
                    let job = Job {
                        scenario,
                        entry,
                        mode: Mode::Sweep,
                        progress: Some(progress),
                        by_group: count.counts(i),
                    };
                    driver(job, &StateBackend::Memory)
                })
                .collect();
            let feed = ReferenceFeed::new(scenario, &drivers, Share::Alone, CHUNK);
            (feed, count, drivers)
        })
        .collect();
    // A stream that stops early is the sweep's error, which the producer reports.
    while let Ok(Some(arrivals)) = received.next() {
        for (feed, count, drivers) in &mut running {
            feed_chunk(feed, count, drivers, &arrivals, received.keys());
        }
    }
    let (keys, _) = received.finish();
    let mut finished = Vec::new();
    for (unit, (_, count, drivers)) in units.iter().zip(running) {
        let mut counted = count.finish(configs[unit.config].duration).into_iter();
        for (&a, d) in unit.algorithms.iter().zip(drivers) {
            let outcome = d.finish(&keys, counted.next().flatten());
            finished.push(((unit.config, a), outcome.map(|o| o.report)));
        }
    }
    finished
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_cover_every_pair_once_and_split_only_when_threads_are_idle() {
        for (configs, algorithms, threads) in [(36, 6, 2), (1, 6, 4), (2, 3, 8), (3, 1, 4)] {
            let units = units(configs, algorithms, threads);
            let mut pairs: Vec<(usize, usize)> = units
                .iter()
                .flat_map(|u| u.algorithms.iter().map(move |&a| (u.config, a)))
                .collect();
            pairs.sort_unstable();
            let all: Vec<(usize, usize)> = (0..configs)
                .flat_map(|c| (0..algorithms).map(move |a| (c, a)))
                .collect();
            assert_eq!(pairs, all, "{configs} {algorithms} {threads}");
            if configs >= threads {
                assert_eq!(units.len(), configs);
            } else {
                assert!(units.len() >= threads.min(configs * algorithms));
            }
        }
    }
}
