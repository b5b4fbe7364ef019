//! The sweep's terminal table: rows in the stated order (goal met first, then least
//! restrictive), the first `top` of them, and what the goals concluded.
//!
//! Presentation only: the order and the verdicts come from the parent module.

use super::{Goal, SweepRow, describe_goals, least_restrictive, table_order};
use crate::report::summary::format_ratio;
use crate::report::table::{TableOptions, render_rows};

const HEADERS: [&str; 9] = [
    "algorithm",
    "max",
    "window",
    "burst",
    "clients denied",
    "requests denied",
    "over-admission",
    "false allow / deny vs log",
    "goal",
];

/// What [`render_sweep`] prints above and below the table.
#[derive(Debug, Clone, Copy)]
pub struct SweepHeading<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// How many configurations were tried.
    pub configs: usize,
    /// The goals, as the user gave them (`None`: no goal).
    pub goals: Option<&'a [super::Goal]>,
    /// Show at most this many rows (0: all).
    pub top: usize,
}

/// The table, its heading, and the goals' verdict with the least restrictive row.
pub fn render_sweep(rows: &[SweepRow], heading: SweepHeading<'_>, options: TableOptions) -> String {
    let algorithms = rows.len() / heading.configs.max(1);
    let mut out = format!(
        "{} — {} configurations × {} algorithms on one stream ({} requests)\n",
        heading.scenario,
        heading.configs,
        algorithms,
        rows.first().map_or(0, |r| r.metrics.requests),
    );
    let goals = heading.goals.filter(|g| !g.is_empty());
    out.push_str(&format!(
        "sorted {}least restrictive first: fewest clients denied, then fewest requests \
         denied, then the highest rate (max ÷ window), then the largest burst\n",
        if goals.is_some() {
            "by goal met, then "
        } else {
            ""
        }
    ));
    let order = table_order(rows);
    let listed = order.len();
    let shown = if heading.top == 0 {
        order.len()
    } else {
        heading.top.min(order.len())
    };
    let cells: Vec<Vec<String>> = order[..shown].iter().map(|&i| cells(&rows[i])).collect();
    let headers = if goals.is_some() {
        &HEADERS[..]
    } else {
        &HEADERS[..HEADERS.len() - 1]
    };
    out.push_str(&render_rows(headers, &cells, options));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if shown < listed {
        out.push_str(&format!(
            "(the first {shown} of {listed} rows; --top 0 shows all; every row is in sweep.csv)\n"
        ));
    }
    if listed < rows.len() {
        out.push_str(&format!(
            "({} rows of algorithms that ignore the burst are not listed: each repeats the \
             row of another burst)\n",
            rows.len() - listed
        ));
    }
    if let Some(goals) = goals {
        out.push_str(&verdict(rows, goals));
    }
    out
}

/// One row's cells, in [`HEADERS`] order (the goal cell is dropped without goals).
fn cells(r: &SweepRow) -> Vec<String> {
    let m = &r.metrics;
    let pair = match (m.false_allow, m.false_deny) {
        (Some(a), Some(d)) => format!("{a}/{d}"),
        _ => "n/a".to_string(),
    };
    let mut cells = vec![
        m.algorithm.clone(),
        r.config.max_requests.to_string(),
        r.config.window.to_string(),
        if r.uses_burst {
            r.config.burst.to_string()
        } else {
            "-".to_string()
        },
        m.clients_denied.to_string(),
        share_text(m.requests_denied_share),
        format_ratio(m.over_admission),
        pair,
    ];
    if let Some(met) = r.meets_goal {
        cells.push(if met { "met" } else { "-" }.to_string());
    }
    cells
}

/// How many rows meet the goals, and which is least restrictive.
fn verdict(rows: &[SweepRow], goals: &[Goal]) -> String {
    let listed: Vec<&SweepRow> = rows.iter().filter(|r| !r.repeats).collect();
    let met = listed.iter().filter(|r| r.meets_goal == Some(true)).count();
    let mut out = format!(
        "goal {}: {met} of {} rows meet it",
        describe_goals(goals),
        listed.len()
    );
    for goal in goals {
        if listed.iter().all(|r| goal.is_met_by(&r.metrics).is_none()) {
            out.push_str(&format!(
                " ({} applies to no row: it is empty in sweep.csv)",
                goal.metric()
            ));
        }
    }
    match least_restrictive(rows) {
        Some(best) => {
            let m = &best.metrics;
            out.push_str(&format!(
                "; the least restrictive is {} at {} (clients denied {}, requests denied \
                 {}, over-admission {})\n",
                m.algorithm,
                best.limit_text(),
                m.clients_denied,
                share_text(m.requests_denied_share),
                format_ratio(m.over_admission),
            ));
        }
        None => out.push_str("; none does, so there is no least restrictive row\n"),
    }
    out
}

/// A share as a percentage with two decimals (`0.40%`), `n/a` when undefined.
fn share_text(share: Option<f64>) -> String {
    share.map_or("n/a".to_string(), |s| format!("{:.2}%", s * 100.0))
}
