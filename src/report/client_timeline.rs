//! The timeline of one client per algorithm (the client its window-count panel
//! follows), read back from `decisions.csv`: with many clients the all-clients
//! timeline is a wall of colour, and the client that went over the limit is the story.
//!
//! Counted into the same buckets as the simulator's own [`Timeline`] (exact integer
//! ns), so it is drawn by the same rule. Reads a finished file; runs nothing.

use std::path::Path;

use super::charts::TimelineChart;
use super::output::OutputError;
use super::readback::scan_decisions;
use super::views::{limit_text, timeline_chart, timeline_lane};
use crate::sim::{RunReport, Timeline};

/// True when the run is worth a one-client timeline: some algorithm held more than
/// one client at once.
pub fn has_many_clients(report: &RunReport) -> bool {
    report.algorithms.iter().any(|a| a.metrics.peak_keys > 1)
}

/// Per algorithm, the timeline of the client its window counts follow (`None` where
/// it follows none), from `decisions.csv` at `path`.
pub fn client_timelines(
    report: &RunReport,
    path: &Path,
) -> Result<Vec<(String, Option<Timeline>)>, OutputError> {
    let wanted: Vec<(&str, &str)> = report
        .algorithms
        .iter()
        .filter_map(|a| Some((a.name.as_str(), a.window_key.as_deref()?)))
        .collect();
    let mut timelines: Vec<Timeline> = wanted
        .iter()
        .map(|_| Timeline::new(report.duration))
        .collect();
    scan_decisions(path, &wanted, |i, d| {
        let timeline = &mut timelines[i];
        let bucket = d.time.as_u64() / timeline.bucket.as_u64().max(1);
        timeline.record_in(bucket as usize, d.allowed);
    })?;
    let mut found = wanted.iter().zip(timelines);
    let mut out = Vec::new();
    for a in &report.algorithms {
        let key = a.window_key.clone();
        let timeline = match key {
            Some(_) => found.next().map(|(_, t)| t),
            None => None,
        };
        out.push((label(&a.name, key.as_deref()), timeline));
    }
    Ok(out)
}

/// A lane's label: the algorithm and the client it shows.
fn label(algorithm: &str, key: Option<&str>) -> String {
    match key {
        Some(key) => format!("{algorithm} · {key}"),
        None => algorithm.to_string(),
    }
}

/// The timeline of the client each algorithm's window counts follow, read back from
/// this run's `decisions.csv`: what a run with many clients draws instead of every
/// client's decisions at once.
pub fn client_timeline_chart(
    report: &RunReport,
    decisions: &Path,
) -> Result<TimelineChart, OutputError> {
    let lanes = client_timelines(report, decisions)?
        .into_iter()
        .map(|(label, timeline)| {
            let empty = || Timeline::new(report.duration);
            timeline_lane(&label, &timeline.unwrap_or_else(empty), report.duration)
        })
        .collect();
    Ok(TimelineChart {
        title: format!(
            "{}: one client's decisions over time (limit {})",
            report.scenario,
            limit_text(report)
        ),
        lanes,
        ..timeline_chart(report)
    })
}
