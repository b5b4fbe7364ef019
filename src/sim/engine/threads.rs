//! Threading: algorithms are dealt round-robin into groups, one group per worker
//! thread, and the groups' results are put back in the scenario's order.
//!
//! Each group is independent and its results are keyed by algorithm index, so the
//! grouping (and the thread count) cannot affect the report. With several groups, the
//! calling thread generates the arrival stream once and sends it to all of them
//! (`stream`). Threads share only that stream, the progress counter and the reference's
//! decisions, whose channels are laid here; nothing here decides or measures a request.

use std::sync::mpsc::sync_channel;

use super::group::{Assigned, Finished, Source, keeps_history, run_group};
use super::progress::Progress;
use super::reference::Share;
use super::stream::{self, Received};
use crate::registry::{Builtin, Registry};
use crate::sim::{AlgorithmReport, ClientModel, DecisionSink, Scenario, SimError, StateStore};

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
    store: &'a StateStore,
) -> Result<Vec<AlgorithmReport>, SimError> {
    let shared = share_reference(scenario, &groups);
    let keep_history = keeps_history(scenario);
    let finished: Vec<Vec<Finished>> = if groups.len() == 1 {
        groups
            .into_iter()
            .zip(shared)
            .map(|(g, share)| {
                let source = Source::Generate { keep_history };
                run_group(scenario, g, progress, share, store, source)
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
                handles
                    .push(s.spawn(move || run_group(scenario, g, progress, share, store, source)));
            }
            // This thread generates the stream once for every group.
            let produced = stream::produce(scenario, senders, keep_history);
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
            let (tx, rx) = sync_channel(16);
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::sim::NoopSink;

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
}
