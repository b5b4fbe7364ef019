//! The summaries of one or more finished runs, as printed on stdout by `run` and
//! `compare`: one table per run plus the over-admission matrix across runs, or the
//! rows of `summary.csv` / `summary.json` for all runs at once.
//!
//! Glue like [`run`](super::run): it reads finished [`RunReport`]s and returns text.
//! It must not drive the engine, write files or print.

use std::borrow::Cow;

use serde::Serialize;

use super::csvout::json_string;
use super::table::{
    TableOptions, render_ratio_matrix, render_retry_outcomes, render_summary_table,
};
use super::views::summary_rows;
use crate::sim::{Metrics, RunReport};

/// One table per run, each under a heading naming the scenario and its limits, and
/// after them, when there are several runs, the over-admission matrix.
pub fn render_runs(reports: &[RunReport], options: TableOptions) -> String {
    let mut text = String::new();
    for r in reports {
        text.push_str(&run_heading(r));
        let rows = summary_rows(r);
        text.push_str(&render_summary_table(&rows, options));
        if r.deployment.is_some() && r.algorithms.iter().any(|a| a.metrics.false_allow.is_some()) {
            text.push_str(
                "\nfalse allow / deny are against the global sliding log (one server seeing \
                 every request), not the per-server sliding_window_log row.",
            );
        }
        if let Some(retry) = render_retry_outcomes(&rows, options) {
            text.push_str("\n\n");
            text.push_str(&retry);
        }
        let details = [
            super::details::render_rules(r, options),
            super::details::render_delays(r, options),
        ];
        for detail in details.into_iter().flatten() {
            text.push_str("\n\n");
            text.push_str(&detail);
        }
        text.push_str("\n\n");
    }
    if reports.len() > 1 {
        text.push_str(if reports.iter().any(|r| r.deployment.is_some()) {
            "Over-admission (most admitted in any window ÷ limit; the exact reference is the \
             global sliding log, one server seeing every request; a sliding_window_log row \
             on several servers is one log per server):\n"
        } else {
            "Over-admission (most admitted in any window ÷ limit; the sliding log is exact):\n"
        });
        text.push_str(&render_comparison(reports, options));
        text.push('\n');
    }
    text
}

/// ` on 4 servers (store = local, balancer = round_robin)` under a `[deployment]`, else
/// nothing: how a heading or a sentence names where the limit ran.
pub(crate) fn servers_phrase(r: &RunReport) -> String {
    match &r.deployment {
        Some(d) => format!(
            " on {} server{} (store = {}, balancer = {})",
            d.nodes,
            if d.nodes == 1 { "" } else { "s" },
            d.store,
            d.balancer
        ),
        None => String::new(),
    }
}

/// `burst — limit 5 per 10s`, plus any further limits, and a newline.
fn run_heading(r: &RunReport) -> String {
    let also: String = r
        .extra_limits
        .iter()
        .map(|l| format!(" and {} per {}", l.max_requests, l.window))
        .collect();
    let measured = if also.is_empty() {
        ""
    } else {
        " (metrics against the first)"
    };
    let servers = servers_phrase(r);
    format!(
        "{} — limit {} per {}{also}{measured}{servers}\n",
        r.scenario, r.rule.max_requests, r.rule.window
    )
}

/// The over-admission matrix: one row per algorithm (in order of first appearance),
/// one column per run; `n/a` where an algorithm did not run.
pub fn render_comparison(reports: &[RunReport], options: TableOptions) -> String {
    let (columns, rows) = over_admission_matrix(reports);
    render_ratio_matrix("algorithm", &columns, &rows, options)
}

/// `over_admission_matrix.csv`'s text, in long (tidy) form: one row per scenario and
/// algorithm, `scenario,nodes,algorithm,over_admission`, in run order then registry
/// order. `nodes` is the number of servers under a `[deployment]` and empty without
/// one; `over_admission` is written as `summary.csv` writes it (`2.0`, empty when it
/// cannot be computed).
pub fn comparison_csv(reports: &[RunReport]) -> Result<String, csv::Error> {
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(["scenario", "nodes", "algorithm", "over_admission"])?;
    for r in reports {
        let nodes = r
            .deployment
            .as_ref()
            .map_or_else(String::new, |d| d.nodes.to_string());
        for a in &r.algorithms {
            let ratio = a.metrics.over_admission;
            let ratio = if ratio.is_finite() {
                format!("{ratio:?}")
            } else {
                String::new()
            };
            out.write_record([r.scenario.as_str(), &nodes, &a.name, &ratio])?;
        }
    }
    let bytes = out
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    String::from_utf8(bytes).map_err(|e| csv::Error::from(std::io::Error::other(e)))
}

/// The over-admission matrix as a chart input (the numbers of [`comparison_csv`]).
pub fn comparison_chart(reports: &[RunReport]) -> super::charts::MatrixChart {
    let (columns, rows) = over_admission_matrix(reports);
    super::charts::MatrixChart {
        title: "over-admission by algorithm and scenario".to_string(),
        columns,
        rows,
    }
}

/// The runs' scenario names, and per algorithm (in order of first appearance) its
/// over-admission in each run (NaN where it did not run).
fn over_admission_matrix(reports: &[RunReport]) -> (Vec<String>, Vec<(String, Vec<f64>)>) {
    let columns: Vec<String> = reports.iter().map(|r| r.scenario.clone()).collect();
    let mut algorithms: Vec<&str> = Vec::new();
    for r in reports {
        for a in &r.algorithms {
            if !algorithms.contains(&a.name.as_str()) {
                algorithms.push(&a.name);
            }
        }
    }
    let rows = algorithms
        .iter()
        .map(|&name| {
            let ratios = reports
                .iter()
                .map(|r| {
                    r.algorithms
                        .iter()
                        .find(|a| a.name == name)
                        .map_or(f64::NAN, |a| a.metrics.over_admission)
                })
                .collect();
            (name.to_string(), ratios)
        })
        .collect();
    (columns, rows)
}

/// The first column of a row when several runs share one table.
#[derive(Serialize)]
struct ScenarioLabel<'a> {
    scenario: &'a str,
}

/// A `summary.json` row that also names its run's scenario (first field).
#[derive(Serialize)]
struct LabelledMetrics<'a> {
    scenario: &'a str,
    #[serde(flatten)]
    metrics: Cow<'a, Metrics>,
}

/// `summary.csv`'s rows for every run, under one header; with several runs a first
/// `scenario` column says which run each row belongs to, so the output stays one tidy
/// table. With one run it is exactly that run's `summary.csv`.
pub fn summary_csv(reports: &[RunReport]) -> Result<String, csv::Error> {
    let mut out = csv::Writer::from_writer(Vec::new());
    for r in reports {
        for metrics in r.algorithms.iter().flat_map(|a| a.metrics.rule_rows()) {
            if reports.len() > 1 {
                let label = ScenarioLabel {
                    scenario: &r.scenario,
                };
                out.serialize((label, &*metrics))?;
            } else {
                out.serialize(&*metrics)?;
            }
        }
    }
    let bytes = out
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    String::from_utf8(bytes).map_err(|e| csv::Error::from(std::io::Error::other(e)))
}

/// `summary.json`'s rows for every run, as one pretty JSON array (with a final
/// newline); with several runs each row also names its scenario (first field). With
/// one run it is exactly that run's `summary.json`.
pub fn summary_json(reports: &[RunReport]) -> Result<String, serde_json::Error> {
    if let [one] = reports {
        let metrics: Vec<Cow<'_, Metrics>> = one
            .algorithms
            .iter()
            .flat_map(|a| a.metrics.rule_rows())
            .collect();
        return json_string(&metrics);
    }
    let rows: Vec<LabelledMetrics<'_>> = reports
        .iter()
        .flat_map(|r| {
            r.algorithms
                .iter()
                .flat_map(|a| a.metrics.rule_rows())
                .map(|metrics| LabelledMetrics {
                    scenario: &r.scenario,
                    metrics,
                })
        })
        .collect();
    json_string(&rows)
}
