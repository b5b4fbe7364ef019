//! `ratesim sweep`'s reports: `sweep.csv` and `sweep.json` (one row per configuration
//! and algorithm: the configuration's fields, then exactly the columns of the run's
//! `summary.csv`), the terminal table, and `frontier.png`.
//!
//! The glue from `sim`'s reports to rows, and the two orders a sweep is read in: the
//! *least restrictive* order ([`restrictiveness`]) and the Pareto front of clients
//! denied against over-admission ([`pareto_front`]). Both compare integer counts
//! exactly; floats are only drawn and printed. Nothing here drives the engine.

mod goal;
mod table;

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

pub use goal::{GOAL_METRICS, Goal, GoalError, describe as describe_goals, meets_all};
pub use table::{SweepHeading, render_sweep};

use super::charts::{FrontierChart, FrontierPoint, render_frontier};
use super::csvout::{csv_string, json_string, write_json};
use super::metadata::RunMetadata;
use super::run::ReportError;
use crate::registry::Registry;
use crate::sim::{Metrics, RunReport};
use crate::time::Nanos;

/// File name of the sweep's rows as CSV.
pub const SWEEP_CSV: &str = "sweep.csv";
/// File name of the same rows as JSON.
pub const SWEEP_JSON: &str = "sweep.json";
/// File name of the clients-denied against over-admission chart.
pub const FRONTIER_PNG: &str = "frontier.png";

/// One configuration of the limit a sweep tried: its leading columns,
/// `max_requests,window,window_ns,burst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepConfig {
    /// Requests per window.
    pub max_requests: u64,
    /// The window, written as a duration (`10s`, `250ms`) in `window` and as whole
    /// nanoseconds in `window_ns` (a number to sort and join on).
    pub window: Nanos,
    /// The bucket capacity.
    pub burst: u64,
}

impl SweepRow {
    /// The configuration as this row's algorithm sees it: `100/10s`, with ` burst 150`
    /// when the algorithm uses a burst other than the limit.
    pub fn limit_text(&self) -> String {
        let c = self.config;
        if self.uses_burst && c.burst != c.max_requests {
            format!("{}/{} burst {}", c.max_requests, c.window, c.burst)
        } else {
            format!("{}/{}", c.max_requests, c.window)
        }
    }
}

impl SweepConfig {
    /// The configuration `report` was run under.
    fn of(report: &RunReport) -> SweepConfig {
        SweepConfig {
            max_requests: report.rule.max_requests,
            window: report.rule.window,
            burst: report.rule.burst,
        }
    }
}

impl Serialize for SweepConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut row = s.serialize_struct("SweepConfig", 4)?;
        row.serialize_field("max_requests", &self.max_requests)?;
        row.serialize_field("window", &self.window.to_string())?;
        row.serialize_field("window_ns", &self.window.as_u64())?;
        row.serialize_field("burst", &self.burst)?;
        row.end()
    }
}

/// One row of a sweep: one algorithm under one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    /// The configuration.
    pub config: SweepConfig,
    /// Exactly what `ratesim run` reports for this configuration and algorithm.
    pub metrics: Metrics,
    /// Whether the row meets every `--goal`; `None` without goals.
    pub meets_goal: Option<bool>,
    /// The algorithm's capacity is the burst (buckets, GCRA); the window family
    /// ignores it.
    pub uses_burst: bool,
    /// The algorithm ignores the burst (the window family), and an earlier row has it
    /// under the same max and window with another burst: the same numbers again. It
    /// stays in `sweep.csv`; the table and the chart show the earlier row only.
    pub repeats: bool,
}

/// A `sweep.json` row: the configuration's fields, the summary's, then `meets_goal`.
#[derive(Serialize)]
struct JsonRow<'a> {
    #[serde(flatten)]
    config: SweepConfig,
    #[serde(flatten)]
    metrics: &'a Metrics,
    #[serde(skip_serializing_if = "Option::is_none")]
    meets_goal: Option<bool>,
}

/// `sweep.csv`'s last column, present only with goals.
#[derive(Serialize)]
struct GoalColumn {
    meets_goal: bool,
}

/// The rows of a sweep, configuration by configuration, each in its algorithms' order,
/// judged against `goals` (none: `meets_goal` is `None`); `registry` says which
/// algorithms ignore the burst.
pub fn sweep_rows(reports: &[RunReport], goals: &[Goal], registry: &Registry) -> Vec<SweepRow> {
    let mut rows: Vec<SweepRow> = Vec::new();
    for report in reports {
        let config = SweepConfig::of(report);
        for a in &report.algorithms {
            let uses_burst = registry.entry(&a.name).is_ok_and(|e| e.uses_burst());
            let repeats = !uses_burst
                && rows.iter().any(|r| {
                    r.metrics.algorithm == a.name
                        && r.config.max_requests == config.max_requests
                        && r.config.window == config.window
                });
            rows.push(SweepRow {
                config,
                metrics: a.metrics.clone(),
                meets_goal: (!goals.is_empty()).then(|| meets_all(goals, &a.metrics)),
                uses_burst,
                repeats,
            });
        }
    }
    rows
}

/// `sweep.csv`'s text: the configuration's columns, then the summary's, then
/// `meets_goal` when there were goals.
pub fn sweep_csv(rows: &[SweepRow]) -> Result<String, csv::Error> {
    if rows.iter().any(|r| r.meets_goal.is_some()) {
        let rows: Vec<_> = rows
            .iter()
            .map(|r| {
                let mark = GoalColumn {
                    meets_goal: r.meets_goal == Some(true),
                };
                (r.config, &r.metrics, mark)
            })
            .collect();
        csv_string(&rows)
    } else {
        let rows: Vec<_> = rows.iter().map(|r| (r.config, &r.metrics)).collect();
        csv_string(&rows)
    }
}

fn json_rows(rows: &[SweepRow]) -> Vec<JsonRow<'_>> {
    rows.iter()
        .map(|r| JsonRow {
            config: r.config,
            metrics: &r.metrics,
            meets_goal: r.meets_goal,
        })
        .collect()
}

/// `sweep.json`'s text: the same rows as one JSON array.
pub fn sweep_json(rows: &[SweepRow]) -> Result<String, serde_json::Error> {
    json_string(&json_rows(rows))
}

/// Writes `sweep.csv`, `sweep.json` and (with `chart`) `frontier.png` into `dir`,
/// each atomically; returns the paths written.
pub fn write_sweep(
    dir: &Path,
    title: &str,
    rows: &[SweepRow],
    goals: &[Goal],
    chart: bool,
    registry: &Registry,
) -> Result<Vec<PathBuf>, ReportError> {
    let csv_path = dir.join(SWEEP_CSV);
    let text = sweep_csv(rows).map_err(|source| super::OutputError::Csv {
        path: csv_path.clone(),
        source,
    })?;
    let mut written = vec![super::write_text(&csv_path, &text)?];
    written.push(write_json(&dir.join(SWEEP_JSON), &json_rows(rows))?);
    if chart {
        let input = frontier_chart(title, rows, goals, registry);
        written.push(render_frontier(&input, &dir.join(FRONTIER_PNG))?);
    }
    Ok(written)
}

/// A sweep's `run.json`: what `run` writes (with `limits` the scenario's own, under
/// which its traffic was generated), plus every configuration swept, in row order.
#[derive(Serialize)]
struct SweepMetadata<'a> {
    #[serde(flatten)]
    run: &'a RunMetadata,
    configurations: Vec<SweepConfig>,
}

/// Writes the sweep's `run.json` into `dir`: call it last, so that its presence marks a
/// finished folder (as a run's does).
pub fn write_sweep_metadata(
    dir: &Path,
    meta: &RunMetadata,
    reports: &[RunReport],
) -> Result<PathBuf, ReportError> {
    let configurations = reports.iter().map(SweepConfig::of).collect();
    let value = SweepMetadata {
        run: meta,
        configurations,
    };
    Ok(write_json(&dir.join(super::RUN_JSON), &value)?)
}

/// Least restrictive first: fewest clients denied, then fewest requests denied, then
/// the highest rate (`max_requests / window`, compared exactly), then the largest
/// burst. Equal rows keep their order (sort stably).
pub fn restrictiveness(a: &SweepRow, b: &SweepRow) -> Ordering {
    let rate = |r: &SweepRow, other: &SweepRow| {
        u128::from(r.config.max_requests) * u128::from(other.config.window.as_u64())
    };
    a.metrics
        .clients_denied
        .cmp(&b.metrics.clients_denied)
        .then(a.metrics.requests_denied.cmp(&b.metrics.requests_denied))
        .then(rate(b, a).cmp(&rate(a, b)))
        .then(b.config.burst.cmp(&a.config.burst))
}

/// The least restrictive row ([`restrictiveness`]) among those that meet the goals.
pub fn least_restrictive(rows: &[SweepRow]) -> Option<&SweepRow> {
    rows.iter()
        .filter(|r| r.meets_goal == Some(true))
        .min_by(|a, b| restrictiveness(a, b))
}

/// The order the table shows: rows that meet the goals first, each part least
/// restrictive first; rows that only repeat another are left out.
pub fn table_order(rows: &[SweepRow]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len()).filter(|&i| !rows[i].repeats).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&rows[a], &rows[b]);
        let met = |r: &SweepRow| r.meets_goal != Some(true);
        met(a).cmp(&met(b)).then(restrictiveness(a, b))
    });
    order
}

/// `over_admission` as the exact fraction `max_in_window / max_requests`, compared
/// with another by cross products.
fn cmp_over_admission(a: &Metrics, b: &Metrics) -> Ordering {
    let left = u128::from(a.max_in_window) * u128::from(b.limit_max_requests);
    let right = u128::from(b.max_in_window) * u128::from(a.limit_max_requests);
    left.cmp(&right)
}

/// Which rows are on the Pareto front of (clients denied, over-admission), both to be
/// minimised: no other row is at most as bad on both and better on one. Rows that
/// tie exactly with a front row are on it too.
pub fn pareto_front(rows: &[SweepRow]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&rows[a].metrics, &rows[b].metrics);
        a.clients_denied
            .cmp(&b.clients_denied)
            .then(cmp_over_admission(a, b))
    });
    let mut front = vec![false; rows.len()];
    let mut best: Option<&Metrics> = None;
    for i in order {
        let m = &rows[i].metrics;
        let on = match best {
            None => true,
            Some(b) => match cmp_over_admission(m, b) {
                Ordering::Less => true,
                Ordering::Equal => m.clients_denied == b.clients_denied,
                Ordering::Greater => false,
            },
        };
        if on {
            front[i] = true;
            best = Some(m);
        }
    }
    front
}

/// The frontier chart's input: one point per row (but repeats), the front marked.
fn frontier_chart(
    title: &str,
    rows: &[SweepRow],
    goals: &[Goal],
    registry: &Registry,
) -> FrontierChart {
    let front = pareto_front(rows);
    let best = least_restrictive(rows);
    // In the table's order, so rows that share a spot are labelled by the least
    // restrictive of them; repeats are left out.
    let points = table_order(rows)
        .into_iter()
        .map(|i| (&rows[i], front[i]))
        .map(|(r, on_front)| FrontierPoint {
            algorithm: r.metrics.algorithm.clone(),
            slot: registry
                .position(&r.metrics.algorithm)
                .unwrap_or(usize::MAX),
            config: r.limit_text(),
            clients_denied: r.metrics.clients_denied,
            over_admission: r.metrics.over_admission,
            on_front,
            meets_goal: r.meets_goal,
            recommended: best.is_some_and(|b| std::ptr::eq(b, r)),
        })
        .collect();
    FrontierChart {
        title: title.to_string(),
        points,
        goal: (!goals.is_empty()).then(|| describe_goals(goals)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(max: u64, window_s: u64, clients: u64, denied: u64, in_window: u64) -> SweepRow {
        SweepRow {
            config: SweepConfig {
                max_requests: max,
                window: Nanos::from_secs(window_s),
                burst: max,
            },
            metrics: Metrics {
                clients_denied: clients,
                requests_denied: denied,
                max_in_window: in_window,
                limit_max_requests: max,
                ..Metrics::default()
            },
            meets_goal: Some(true),
            uses_burst: true,
            repeats: false,
        }
    }

    #[test]
    fn the_front_keeps_rows_nothing_beats_on_both_counts_and_exact_ties() {
        let rows = [
            row(10, 1, 0, 0, 30), // 3.0 at 0 clients: front
            row(10, 1, 2, 5, 10), // 1.0 at 2: front
            row(10, 1, 2, 9, 10), // the same numbers: front too
            row(10, 1, 3, 9, 10), // 1.0 at 3: beaten by the one at 2
            row(20, 1, 1, 1, 60), // 3.0 at 1: beaten by the first
            row(3, 1, 1, 1, 6),   // 2.0 at 1: front
        ];
        assert_eq!(pareto_front(&rows), [true, true, true, false, false, true]);
    }

    #[test]
    fn files_and_chart_are_written_for_no_rows_and_for_rows_without_a_ratio() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::builtin();
        let none = write_sweep(dir.path(), "empty", &[], &[], true, registry).unwrap();
        assert_eq!(none.len(), 3);
        let mut odd = row(5, 1, 0, 0, 0);
        odd.metrics.over_admission = f64::NAN;
        odd.metrics.algorithm = "gcra".to_string();
        let goals = [Goal::parse("over_admission<=1").unwrap()];
        let rows = [odd, row(5, 1, 2, 2, 5)];
        let written = write_sweep(dir.path(), "odd", &rows, &goals, true, registry).unwrap();
        let png = std::fs::read(&written[2]).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let csv = std::fs::read_to_string(&written[0]).unwrap();
        assert!(
            csv.starts_with("max_requests,window,window_ns,burst,algorithm,"),
            "{csv}"
        );
        assert!(
            csv.lines()
                .nth(1)
                .unwrap()
                .starts_with("5,1s,1000000000,5,gcra,"),
            "{csv}"
        );
    }

    #[test]
    fn least_restrictive_means_fewest_clients_then_requests_then_rate_then_burst() {
        let mut rows = vec![
            row(10, 1, 1, 5, 10),
            row(10, 1, 0, 9, 10),
            row(10, 1, 0, 7, 10),
            row(100, 60, 0, 7, 10), // 1.67/s: slower than 10/s
            row(20, 1, 0, 7, 10),   // 20/s
        ];
        assert_eq!(table_order(&rows), [4, 2, 3, 1, 0]);
        assert_eq!(least_restrictive(&rows), Some(&rows[4]));
        rows[4].meets_goal = Some(false);
        assert_eq!(table_order(&rows), [2, 3, 1, 0, 4]);
        assert_eq!(least_restrictive(&rows), Some(&rows[2]));
    }
}
