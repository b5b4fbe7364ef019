//! A finished [`RunReport`] as what the tables and charts show: the summary rows, the
//! timeline's lanes and the words chart titles share ("5 per 10 s"). Pure functions, no
//! I/O; the glue in [`run`](super::run) and its siblings (`zoom`, `client_timeline`,
//! `runs`) all build on them, so this file imports none of those.

use super::charts::{TimelineBucket, TimelineChart, TimelineLane, TimelineMarks, TimelinePoint};
use super::summary::{RetryOutcome, SummaryRow};
use crate::sim::{RunReport, Timeline};
use crate::time::Nanos;

/// One table row per algorithm.
pub fn summary_rows(report: &RunReport) -> Vec<SummaryRow> {
    report
        .algorithms
        .iter()
        .map(|a| {
            let m = &a.metrics;
            let mut row = SummaryRow::new(
                &a.name,
                m.allowed,
                m.denied,
                m.max_in_window,
                report.rule.max_requests,
            );
            row.excess = m.excess;
            row.clients_denied = Some(m.clients_denied);
            row.false_allow = m.false_allow;
            row.false_deny = m.false_deny;
            let judged = m.retry_after_exact + m.retry_after_too_early + m.retry_after_too_late;
            if judged > 0 {
                row.retry_exact = Some(m.retry_after_exact);
                row.retry_early = Some(m.retry_after_too_early);
                row.retry_late = Some(m.retry_after_too_late);
            }
            row.never_fits = m.never_fits;
            let latency = match (m.latency_p50_ns, m.latency_p99_ns, m.latency_max_ns) {
                (Some(p50), Some(p99), Some(max)) => Some([p50, p99, max].map(Nanos::new)),
                _ => None,
            };
            row.retry = m.succeeded.map(|succeeded| RetryOutcome {
                succeeded,
                gave_up: m.gave_up.unwrap_or(0),
                unfinished: m.unfinished.unwrap_or(0),
                wasted_retries: m.wasted_retries.unwrap_or(0),
                latency,
            });
            row
        })
        .collect()
}

/// Seconds as chart coordinates (display only).
pub(super) fn secs(n: Nanos) -> f64 {
    n.as_secs_f64()
}

/// "5 per 10 s", for chart titles.
pub(super) fn limit_text(report: &RunReport) -> String {
    format!(
        "{} per {}",
        report.rule.max_requests,
        human_duration(report.rule.window)
    )
}

/// A duration as people write it: `10 s`, `250 ms`, `1.5 s`.
pub(super) fn human_duration(n: Nanos) -> String {
    let ns = n.as_u64();
    if ns >= 1_000_000_000 || ns == 0 {
        format!("{} s", n.to_decimal_secs())
    } else if ns.is_multiple_of(1_000_000) {
        format!("{} ms", ns / 1_000_000)
    } else {
        format!("{} s", n.to_decimal_secs())
    }
}

/// Small runs show every decision as a tick; above this many decisions per lane the
/// timeline shows bars whose height is the count per bucket.
const TICKS_UP_TO: u64 = 5_000;

/// One algorithm's lane of the timeline: every decision as a tick on small runs, else
/// allowed and denied counts per bucket.
pub(super) fn timeline_lane(name: &str, t: &Timeline, duration: Nanos) -> TimelineLane {
    let bucket = t.bucket.as_u64();
    let decisions: u64 = t.allowed.iter().chain(&t.denied).sum();
    let start = |i: usize| secs(Nanos::new(bucket.saturating_mul(i as u64)));
    let marks = if decisions <= TICKS_UP_TO {
        let mut points = Vec::new();
        for (i, (&allowed, &denied)) in t.allowed.iter().zip(&t.denied).enumerate() {
            for (count, kind) in [(allowed, true), (denied, false)] {
                if count > 0 {
                    points.push(TimelinePoint {
                        time_s: start(i),
                        allowed: kind,
                    });
                }
            }
        }
        TimelineMarks::Points(points)
    } else {
        let end = |i: usize| secs(Nanos::new(bucket.saturating_mul(i as u64 + 1)).min(duration));
        let buckets = t
            .allowed
            .iter()
            .zip(&t.denied)
            .enumerate()
            .map(|(i, (&allowed, &denied))| TimelineBucket {
                start_s: start(i),
                end_s: end(i),
                allowed,
                denied,
            })
            .collect();
        TimelineMarks::Buckets(buckets)
    };
    TimelineLane {
        algorithm: name.to_string(),
        marks,
    }
}

/// The allowed/denied timeline, one lane per algorithm.
pub fn timeline_chart(report: &RunReport) -> TimelineChart {
    TimelineChart {
        title: format!(
            "{}: decisions over time (limit {})",
            report.scenario,
            limit_text(report)
        ),
        duration_s: secs(report.duration),
        window_s: Some(secs(report.rule.window)),
        lanes: report
            .algorithms
            .iter()
            .map(|a| timeline_lane(&a.name, &a.timeline, report.duration))
            .collect(),
    }
}

/// Escapes `text` for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}
