//! One worker's share of a run: a group of algorithms fed in lockstep. The arrival
//! stream is generated once, a chunk at a time, and each chunk goes to every algorithm
//! of the group, after the reference has decided it.
//!
//! A group's results depend only on its own algorithms, never on which thread runs it
//! or on the other groups; it does not spawn threads itself.

use std::sync::Arc;

use super::dispatch::driver;
use super::driver::{Drive, Job, Mode};
use super::progress::Progress;
use super::record::Outcome;
use super::reference::{ReferenceFeed, Share};
use super::stream::{CHUNK, History, Received, Stopped, next_chunk};
use crate::registry::Entry;
use crate::sim::traffic::Arrival;
use crate::sim::{
    AlgorithmReport, ArrivalStream, ClientModel, DecisionSink, KeyTable, Scenario, ScenarioError,
    SimError, StateStore, TrafficKind,
};

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
            mode: Mode::Report(a.sink),
            progress: Some(progress),
            store,
        };
        drivers.push(driver(job));
        owners.push((a.index, a.entry));
    }
    let Ok((first, keys, history)) = run_pass(scenario, drivers, share, source) else {
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
    let second = run_pass(scenario, again, Share::Alone, source)
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
        mode: Mode::Redraw(worst),
        progress: None,
        store,
    };
    Some(driver(job))
}

/// A pass's outcomes, one per driver, the stream's keys (`None` if the stream failed
/// or there was no driver to feed), and its history when one was kept.
type Pass = (
    Vec<Result<Outcome, SimError>>,
    Option<KeyTable>,
    Option<Arc<History>>,
);

/// Feeds the stream from `source`, chunk by chunk, to every driver, and finishes them;
/// with the stream's keys, unless it failed.
fn run_pass<'a>(
    scenario: &'a Scenario,
    mut drivers: Vec<Box<dyn Drive + 'a>>,
    share: Share,
    source: Source,
) -> Result<Pass, Stopped> {
    if drivers.is_empty() {
        return Ok((Vec::new(), None, None));
    }
    let mut reference = ReferenceFeed::new(scenario, &drivers, share, CHUNK);
    let fed = match source {
        Source::Generate { keep_history } => generate_all(
            ArrivalStream::new(scenario),
            keep_history,
            &mut reference,
            &mut drivers,
        ),
        Source::Only(keys, wanted) => generate_all(
            ArrivalStream::only(scenario, keys, &wanted),
            false,
            &mut reference,
            &mut drivers,
        ),
        Source::Replay(keys, history, wanted) => {
            replay_all(history.replay(&wanted), &mut reference, &mut drivers, &keys);
            Ok((keys, None))
        }
        Source::Receive(received) => Ok(receive_all(received, &mut reference, &mut drivers)?),
    };
    Ok(match fed {
        Ok((keys, history)) => {
            let outcomes = drivers.into_iter().map(|d| d.finish(&keys)).collect();
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

/// Feeds `stream` to the drivers, keeping its history when `keep_history`.
fn generate_all(
    stream: Result<ArrivalStream, ScenarioError>,
    keep_history: bool,
    reference: &mut ReferenceFeed,
    drivers: &mut [Box<dyn Drive + '_>],
) -> Result<Fed, ScenarioError> {
    let mut stream = stream?;
    let mut history = keep_history.then(History::default);
    let mut chunk = Vec::with_capacity(CHUNK);
    loop {
        next_chunk(&mut stream, &mut chunk)?;
        History::keep(&mut history, &chunk);
        if chunk.is_empty() {
            return Ok((stream.into_keys(), history.map(Arc::new)));
        }
        feed_chunk(reference, drivers, &chunk, stream.keys());
    }
}

/// Feeds the drivers the `arrivals` replayed from a history, a chunk at a time.
fn replay_all(
    mut arrivals: impl Iterator<Item = (u64, Arrival)>,
    reference: &mut ReferenceFeed,
    drivers: &mut [Box<dyn Drive + '_>],
    keys: &KeyTable,
) {
    let mut chunk = Vec::with_capacity(CHUNK);
    loop {
        chunk.clear();
        chunk.extend(arrivals.by_ref().take(CHUNK));
        if chunk.is_empty() {
            return;
        }
        feed_chunk(reference, drivers, &chunk, keys);
    }
}

/// Feeds the drivers every chunk the producer sends; the stream's keys at its end.
fn receive_all(
    mut received: Received,
    reference: &mut ReferenceFeed,
    drivers: &mut [Box<dyn Drive + '_>],
) -> Result<Fed, Stopped> {
    while let Some(chunk) = received.next()? {
        feed_chunk(reference, drivers, &chunk, received.keys());
    }
    Ok(received.finish())
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
