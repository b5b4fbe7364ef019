//! The parts of a run's summary that only some runs have, for the terminal and for
//! `report.html`: a shaper's delays (`nginx`, `tower`), every rule of a composite limit
//! measured on its own (several `[[limit]]`s), and what each server of a deployment
//! decided (the numbers of `nodes.csv`).
//!
//! Glue like [`runs`](super::runs): it reads a finished [`RunReport`] and returns text;
//! it computes no metric (the worst rule is [`Metrics::worst_rule`]'s) and writes no file.

use std::fmt::Write as _;

use super::summary::format_ratio;
use super::table::{Entry, Grid, TableOptions, fit_width, ratio_entry, short_duration, wrap};
use super::views::escape;
use crate::sim::{Metrics, RunReport};
use crate::time::Nanos;

/// Headers of the delay table.
pub const DELAY_HEADERS: [&str; 3] = ["algorithm", "delayed", "delay\np50 / p99 / max"];

/// Headers of the per-rule table.
pub const RULE_HEADERS: [&str; 6] = [
    "algorithm",
    "rule",
    "max in\nwindow\n/ limit",
    "over-\nadmission",
    "excess",
    "worst\nrule",
];

/// The delays of `m` (p50, p99, max), when it delayed anything.
fn delays(m: &Metrics) -> Option<[Nanos; 3]> {
    match (m.delay_p50_ns, m.delay_p99_ns, m.delay_max_ns) {
        (Some(p50), Some(p99), Some(max)) => Some([p50, p99, max].map(Nanos::new)),
        _ => None,
    }
}

/// The delay table under a caption, one row per algorithm (0 and `–` for those that
/// delay nothing); `None` when no algorithm of the run delayed a request.
pub fn render_delays(report: &RunReport, options: TableOptions) -> Option<String> {
    if report.algorithms.iter().all(|a| a.metrics.delayed == 0) {
        return None;
    }
    let caption = "Shapers hold requests back rather than refuse them: a delayed request is \
                   admitted and reaches the service that much later.";
    let grid = Grid {
        headers: DELAY_HEADERS.iter().map(|h| h.to_string()).collect(),
        rows: report
            .algorithms
            .iter()
            .map(|a| {
                let m = &a.metrics;
                let spread = delays(m)
                    .map_or_else(|| "–".to_string(), |d| d.map(short_duration).join(" / "));
                vec![
                    Entry::plain(&a.name),
                    Entry::plain(m.delayed.to_string()),
                    Entry::plain(spread),
                ]
            })
            .collect(),
    };
    Some(format!(
        "{}\n{}",
        wrap(caption, fit_width(options)),
        grid.render(options)
    ))
}

/// The per-rule table under a caption, one row per algorithm and rule with the worst
/// rule marked; `None` with a single rule.
pub fn render_rules(report: &RunReport, options: TableOptions) -> Option<String> {
    if report.extra_limits.is_empty() {
        return None;
    }
    let caption = format!(
        "Every rule measured on its own (the table above measures the first, {}):",
        report.rule.label()
    );
    let mut rows = Vec::new();
    for a in &report.algorithms {
        let worst = a.metrics.worst_rule().map(|w| w.rule.as_str());
        for r in &a.metrics.rules {
            rows.push(vec![
                Entry::plain(&a.name),
                Entry::plain(&r.rule),
                Entry::plain(format!("{} / {}", r.max_in_window, r.limit_max_requests)),
                ratio_entry(r.over_admission),
                Entry::plain(r.excess.to_string()),
                Entry::plain(if worst == Some(r.rule.as_str()) {
                    "worst"
                } else {
                    ""
                }),
            ]);
        }
    }
    let grid = Grid {
        headers: RULE_HEADERS.iter().map(|h| h.to_string()).collect(),
        rows,
    };
    Some(format!(
        "{}\n{}",
        wrap(&caption, fit_width(options)),
        grid.render(options)
    ))
}

/// The `report.html` sections this module knows: per-rule, delays, per-server. Empty
/// when the run has none of them.
pub fn html_sections(report: &RunReport) -> String {
    let mut page = String::new();
    page.push_str(&html_rules(report));
    page.push_str(&html_delays(report));
    page.push_str(&html_servers(report));
    page
}

fn html_rules(report: &RunReport) -> String {
    if report.extra_limits.is_empty() {
        return String::new();
    }
    let mut t = String::from(
        "<h2>Every rule</h2>\n<p>Each <code>[[limit]]</code> measured on its own: the most \
         admitted for one client in any window of that rule, against its limit. The summary \
         above and the charts measure the first rule.</p>\n<table>\n<tr><th>algorithm</th>\
         <th>rule</th><th>max in window / limit</th><th>over-admission</th><th>excess</th>\
         </tr>\n",
    );
    let mut worst_words = Vec::new();
    for a in &report.algorithms {
        let worst = a.metrics.worst_rule();
        for r in &a.metrics.rules {
            let over = if r.over_admission > 1.0 {
                " class=\"over\""
            } else {
                ""
            };
            let mark = if worst.is_some_and(|w| w.rule == r.rule) {
                " (worst)"
            } else {
                ""
            };
            let _ = writeln!(
                t,
                "<tr><td>{}</td><td>{}{mark}</td><td>{} / {}</td><td{over}>{}</td><td>{}</td></tr>",
                escape(&a.name),
                escape(&r.rule),
                r.max_in_window,
                r.limit_max_requests,
                escape(&format_ratio(r.over_admission)),
                r.excess
            );
        }
        if let Some(w) = worst {
            worst_words.push(format!(
                "{}: {} ({})",
                a.name,
                w.rule,
                format_ratio(w.over_admission)
            ));
        }
    }
    t.push_str("</table>\n");
    let _ = writeln!(
        t,
        "<p>Worst rule per algorithm (its largest over-admission; 1.00× or less means \
         every rule held) — {}.</p>",
        escape(&worst_words.join("; "))
    );
    t
}

fn html_delays(report: &RunReport) -> String {
    if report.algorithms.iter().all(|a| a.metrics.delayed == 0) {
        return String::new();
    }
    let mut t = String::from(
        "<h2>Delayed requests</h2>\n<p>A shaper holds a request back instead of refusing \
         it: the request is admitted and reaches the service later (the window counts take \
         it when it passes). Exact delays are in summary.csv (ns) and decisions.csv \
         (<code>delay_s</code>).</p>\n<table>\n<tr><th>algorithm</th><th>delayed</th>\
         <th>of admitted</th><th>delay p50</th><th>p99</th><th>max</th></tr>\n",
    );
    for a in &report.algorithms {
        let m = &a.metrics;
        let cells = match delays(m) {
            Some(d) => d
                .map(|n| format!("<td>{}</td>", escape(&short_duration(n))))
                .join(""),
            None => "<td>–</td><td>–</td><td>–</td>".to_string(),
        };
        let _ = writeln!(
            t,
            "<tr><td>{}</td><td>{}</td><td>{}</td>{cells}</tr>",
            escape(&a.name),
            m.delayed,
            m.allowed
        );
    }
    t.push_str("</table>\n");
    t
}

fn html_servers(report: &RunReport) -> String {
    let Some(d) = &report.deployment else {
        return String::new();
    };
    if report.algorithms.iter().all(|a| a.nodes.is_empty()) {
        return String::new();
    }
    let mut t = format!(
        "<h2>Each server</h2>\n<p>What each of the {} servers decided (balancer {}, store \
         {}): admitted / attempts the balancer sent it, as in nodes.csv. Which server \
         decided each request is the <code>node</code> column of decisions.csv.</p>\n\
         <table>\n<tr><th>algorithm</th>",
        d.nodes,
        escape(&d.balancer),
        escape(&d.store)
    );
    let first = report.algorithms.iter().find(|a| !a.nodes.is_empty());
    for n in first.map(|a| a.nodes.as_slice()).unwrap_or_default() {
        let clock = match n.clock_offset_ns {
            0 => String::new(),
            ns => format!(
                " (clock {}{})",
                if ns < 0 { "−" } else { "+" },
                short_duration(Nanos::new(ns.unsigned_abs()))
            ),
        };
        let _ = write!(t, "<th>server {}{}</th>", n.node, escape(&clock));
    }
    t.push_str("</tr>\n");
    for a in &report.algorithms {
        let _ = write!(t, "<tr><td>{}</td>", escape(&a.name));
        for n in &a.nodes {
            let _ = write!(t, "<td>{} / {}</td>", n.allowed, n.attempts);
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</table>\n");
    t
}
