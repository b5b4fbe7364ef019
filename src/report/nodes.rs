//! `compare --nodes`: one scenario run at several node counts, as a long CSV (one row
//! per node count and algorithm) and the over-admission-versus-nodes chart.
//!
//! Glue like [`run`](super::run): it reads finished [`RunReport`]s, each paired with its
//! node count; it never drives the engine or computes a metric.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::ReportError;
use super::charts::{NodesChart, NodesSeries, render_nodes};
use super::csvout::write_csv_rows;
use crate::registry::Registry;
use crate::sim::RunReport;

/// File name of the long table `compare --nodes` writes.
pub const OVER_ADMISSION_VS_NODES_CSV: &str = "over_admission_vs_nodes.csv";
/// File name of its chart.
pub const OVER_ADMISSION_VS_NODES_PNG: &str = "over_admission_vs_nodes.png";

/// One row of [`OVER_ADMISSION_VS_NODES_CSV`].
#[derive(Debug, Serialize)]
struct NodesRow<'a> {
    nodes: u32,
    algorithm: &'a str,
    allowed: u64,
    denied: u64,
    max_in_window: u64,
    over_admission: f64,
    false_allow: Option<u64>,
    false_deny: Option<u64>,
}

/// One scenario's runs at several node counts.
#[derive(Debug, Clone, Copy)]
pub struct NodesComparison<'a> {
    /// The scenario's own name (its runs' folders add the node count).
    pub scenario: &'a str,
    /// The store every run used (`local`, `shared`, …).
    pub store: &'a str,
    /// `(nodes, report)`, in increasing node count.
    pub runs: &'a [(u32, RunReport)],
}

/// Writes the CSV (and, with `charts`, the chart) of `cmp` into `dir`; returns the
/// paths written.
pub fn write_nodes_comparison(
    cmp: &NodesComparison<'_>,
    dir: &Path,
    charts: bool,
    registry: &Registry,
) -> Result<Vec<PathBuf>, ReportError> {
    let rows: Vec<NodesRow<'_>> = cmp
        .runs
        .iter()
        .flat_map(|(nodes, r)| {
            r.algorithms.iter().map(move |a| NodesRow {
                nodes: *nodes,
                algorithm: &a.name,
                allowed: a.metrics.allowed,
                denied: a.metrics.denied,
                max_in_window: a.metrics.max_in_window,
                over_admission: a.metrics.over_admission,
                false_allow: a.metrics.false_allow,
                false_deny: a.metrics.false_deny,
            })
        })
        .collect();
    let mut written = vec![write_csv_rows(
        &dir.join(OVER_ADMISSION_VS_NODES_CSV),
        &rows,
    )?];
    if charts {
        let chart = nodes_chart(cmp, registry);
        written.push(render_nodes(
            &chart,
            &dir.join(OVER_ADMISSION_VS_NODES_PNG),
        )?);
    }
    Ok(written)
}

/// The chart: one line per algorithm (in the first run's order), coloured by its place
/// in `registry`.
pub fn nodes_chart(cmp: &NodesComparison<'_>, registry: &Registry) -> NodesChart {
    let runs = cmp.runs;
    let Some((_, first)) = runs.first() else {
        return NodesChart {
            title: format!("{}: over-admission by number of servers", cmp.scenario),
            series: Vec::new(),
        };
    };
    let series = first
        .algorithms
        .iter()
        .enumerate()
        .map(|(i, a)| NodesSeries {
            algorithm: a.name.clone(),
            color_slot: registry
                .position(&a.name)
                .unwrap_or(registry.names().count() + i),
            points: runs
                .iter()
                .filter_map(|(n, r)| {
                    let m = r.algorithms.iter().find(|b| b.name == a.name)?;
                    Some((*n, m.metrics.over_admission))
                })
                .collect(),
        })
        .collect();
    NodesChart {
        title: format!(
            "{}: over-admission by servers (store = {}, limit {} per {})",
            cmp.scenario, cmp.store, first.rule.max_requests, first.rule.window
        ),
        series,
    }
}
