//! One worker's share of a run: a group of algorithms fed in lockstep. The arrival
//! stream is generated once, a chunk at a time, and each chunk goes to every algorithm
//! of the group, after the reference has decided it.
//!
//! A group's results depend only on its own algorithms, never on which thread runs it
//! or on the other groups; it does not spawn threads itself.

use super::dispatch::driver;
use super::driver::{Drive, Job};
use super::fanout::{Received, Stopped};
use super::progress::Progress;
use super::record::Outcome;
use super::reference::{ReferenceFeed, Share};
use crate::registry::Entry;
use crate::sim::traffic::Arrival;
use crate::sim::{
    AlgorithmReport, ArrivalStream, DecisionSink, KeyTable, Scenario, ScenarioError, SimError,
    StateStore,
};

/// Arrivals generated and fed to the algorithms at a time: small enough to stay in
/// cache, large enough that the per-chunk dynamic dispatch is noise.
pub(super) const CHUNK: usize = 1024;

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
    /// Generates it itself (the only group of a run).
    Generate,
    /// Receives it from the run's producer (one of several groups, see `fanout`).
    Receive(Received),
    /// Generates the arrivals of these keys only (ids in this table, the first pass's):
    /// a silent second pass whose drivers each look at one key.
    Only(KeyTable, Vec<u32>),
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
    store: &'a StateStore,
    source: Source,
) -> Vec<Finished> {
    let mut results = Vec::new();
    let mut drivers = Vec::new();
    let mut owners = Vec::new();
    for a in group {
        let job = Job {
            scenario,
            entry: a.entry,
            sink: Some(a.sink),
            progress: Some(progress),
            track: None,
            series: true,
            store,
        };
        drivers.push(driver(job));
        owners.push((a.index, a.entry));
    }
    let Ok((first, keys)) = run_pass(scenario, drivers, share, source) else {
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
    // arrivals of those keys are all they need; otherwise (retrying clients, whose
    // jitter draws are shared; a deployment, whose routing and nodes every key moves)
    // they get the whole stream.
    let only: Option<Vec<u32>> = again.iter().map(|d| d.only_key()).collect();
    let source = match (only, keys) {
        (Some(wanted), Some(keys)) => Source::Only(keys, wanted),
        _ => Source::Generate,
    };
    // A stream the group generates itself never stops early: errors are in the results.
    let second = run_pass(scenario, again, Share::Alone, source)
        .map(|(outcomes, _)| outcomes)
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
    store: &'a StateStore,
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
        sink: None,
        progress: None,
        track: Some(worst),
        series: true,
        store,
    };
    Some(driver(job))
}

/// A pass's outcomes, one per driver, and the stream's keys (`None` if the stream
/// failed or there was no driver to feed).
type Pass = (Vec<Result<Outcome, SimError>>, Option<KeyTable>);

/// Feeds the stream from `source`, chunk by chunk, to every driver, and finishes them;
/// with the stream's keys, unless it failed.
fn run_pass<'a>(
    scenario: &'a Scenario,
    mut drivers: Vec<Box<dyn Drive + 'a>>,
    share: Share,
    source: Source,
) -> Result<Pass, Stopped> {
    if drivers.is_empty() {
        return Ok((Vec::new(), None));
    }
    let mut reference = ReferenceFeed::new(scenario, &drivers, share, CHUNK);
    let fed = match source {
        Source::Generate => {
            generate_all(ArrivalStream::new(scenario), &mut reference, &mut drivers)
        }
        Source::Only(keys, wanted) => generate_all(
            ArrivalStream::only(scenario, keys, &wanted),
            &mut reference,
            &mut drivers,
        ),
        Source::Receive(received) => Ok(receive_all(received, &mut reference, &mut drivers)?),
    };
    Ok(match fed {
        Ok(keys) => {
            let outcomes = drivers.into_iter().map(|d| d.finish(&keys)).collect();
            (outcomes, Some(keys))
        }
        Err(e) => {
            let outcomes = drivers
                .iter()
                .map(|_| Err(SimError::Scenario(e.clone())))
                .collect();
            (outcomes, None)
        }
    })
}

/// Feeds `stream` to the drivers; the stream's keys at its end.
fn generate_all(
    stream: Result<ArrivalStream, ScenarioError>,
    reference: &mut ReferenceFeed,
    drivers: &mut [Box<dyn Drive + '_>],
) -> Result<KeyTable, ScenarioError> {
    let mut stream = stream?;
    let mut chunk = Vec::with_capacity(CHUNK);
    loop {
        next_chunk(&mut stream, &mut chunk)?;
        if chunk.is_empty() {
            return Ok(stream.into_keys());
        }
        feed_chunk(reference, drivers, &chunk, stream.keys());
    }
}

/// Feeds the drivers every chunk the producer sends; the stream's keys at its end.
fn receive_all(
    mut received: Received,
    reference: &mut ReferenceFeed,
    drivers: &mut [Box<dyn Drive + '_>],
) -> Result<KeyTable, Stopped> {
    while let Some(chunk) = received.next()? {
        feed_chunk(reference, drivers, &chunk, received.keys());
    }
    Ok(received.into_keys())
}

/// Feeds one chunk to every driver of a group that shares one rule: the reference
/// decides it first (running the log driver, if the group has one), then every other
/// driver is compared with it.
pub(super) fn feed_chunk(
    reference: &mut ReferenceFeed,
    drivers: &mut [Box<dyn Drive + '_>],
    chunk: &[(u64, Arrival)],
    keys: &KeyTable,
) {
    let log_driver = reference.log_driver;
    let log = reference.decide(chunk, drivers, keys);
    for (i, d) in drivers.iter_mut().enumerate() {
        if Some(i) != log_driver {
            d.feed(chunk, log, keys, None);
        }
    }
}

/// Refills `chunk` with up to [`CHUNK`] arrivals; empty at the end of the stream.
pub(super) fn next_chunk(
    stream: &mut ArrivalStream,
    chunk: &mut Vec<(u64, Arrival)>,
) -> Result<(), ScenarioError> {
    chunk.clear();
    while chunk.len() < CHUNK {
        match stream.next_arrival()? {
            Some(arrival) => chunk.push(arrival),
            None => break,
        }
    }
    Ok(())
}
