//! `report.html`: one self-contained page per run — the scenario and its description,
//! the summary table, one plain sentence per algorithm saying what its numbers mean,
//! and every chart, embedded as a `data:` URI.
//!
//! Self-contained on purpose: the page is mailed and attached to tickets, so it fetches
//! nothing (no script, no stylesheet or font from elsewhere) and reads the same with
//! JavaScript off. Every piece of text from the run (names, descriptions, keys) is
//! escaped. A pure writer over a finished run and the chart files beside it; it
//! computes no metric of its own beyond phrasing the ones it is given.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::charts::ZoomLane;
use super::output::{OutputError, write_text};
use super::summary::format_ratio;
use crate::sim::{AlgorithmReport, RunReport};

/// A chart to embed: its file (PNG or SVG) and what it shows.
#[derive(Debug, Clone)]
pub struct Figure {
    /// The chart file, already written.
    pub path: PathBuf,
    /// One sentence under the image (also its `alt` text).
    pub caption: String,
}

pub use super::views::escape;

/// Standard base64 (RFC 4648, with padding), for `data:` URIs.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1240px;margin:2em auto;padding:0 1em;\
color:#222;line-height:1.45}table{border-collapse:collapse;margin:1em 0}\
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}\
th:first-child,td:first-child{text-align:left}th{background:#f3f3f3}\
td.over{background:#fde3d6;font-weight:bold}img{max-width:100%;height:auto;border:1px solid #ddd}\
figure{margin:2em 0}figcaption{color:#555;margin-top:.4em}dt{font-weight:bold}";

/// The page for `report`, with `sentences` (one per algorithm, in order) and `figures`
/// embedded from their files.
pub fn render_html(
    report: &RunReport,
    sentences: &[String],
    figures: &[Figure],
) -> Result<String, OutputError> {
    let mut page = String::new();
    let title = format!("ratesim: {}", report.scenario);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&report.scenario)
    );
    if !report.description.trim().is_empty() {
        let _ = writeln!(page, "<p>{}</p>", escape(report.description.trim()));
    }
    let _ = writeln!(
        page,
        "<p>Limit: <b>{} requests per {} s</b> (burst {}){}; {} s simulated, seed {}, {} clients.</p>",
        report.rule.max_requests,
        escape(&report.rule.window.to_decimal_secs()),
        report.rule.burst,
        escape(&super::runs::servers_phrase(report)),
        escape(&report.duration.to_decimal_secs()),
        report.seed,
        escape(&report.client)
    );
    page.push_str("<h2>Summary</h2>\n");
    page.push_str(&summary_table(report));
    page.push_str(&super::details::html_sections(report));
    page.push_str("<h2>What the numbers mean</h2>\n<ul>\n");
    for sentence in sentences {
        // The algorithm's name, before the first colon, in bold.
        let (name, rest) = sentence.split_once(": ").unwrap_or(("", sentence));
        let _ = writeln!(page, "<li><b>{}</b>: {}</li>", escape(name), escape(rest));
    }
    page.push_str("</ul>\n");
    if let Some(cause) = fixed_window_cause(report) {
        let _ = writeln!(page, "<p class=\"cause\">{}</p>", escape(&cause));
    }
    page.push_str("<h2>Charts</h2>\n");
    if figures.is_empty() {
        page.push_str("<p>No charts: this run was made with --no-charts.</p>\n");
    }
    for figure in figures {
        page.push_str(&figure_html(figure)?);
    }
    page.push_str("<p>Made by ratesim; every number above is in summary.csv beside this file.</p>\n</body>\n</html>\n");
    Ok(page)
}

/// Writes `report.html` into `dir`.
pub fn write_html(
    dir: &Path,
    report: &RunReport,
    sentences: &[String],
    figures: &[Figure],
) -> Result<PathBuf, OutputError> {
    let page = render_html(report, sentences, figures)?;
    write_text(&dir.join(super::REPORT_HTML), &page)
}

fn summary_table(report: &RunReport) -> String {
    let reference = if report.deployment.is_some() {
        "global sliding log (one server seeing every request)"
    } else {
        "sliding log"
    };
    let mut t = format!(
        "<table>\n<tr><th>algorithm</th><th>allowed</th><th>denied</th>\
         <th>clients denied</th><th>allowed %</th>\
         <th>max in window / limit</th><th>over-admission</th><th>excess</th>\
         <th>false allow / deny vs {reference}</th></tr>\n",
    );
    for a in &report.algorithms {
        let m = &a.metrics;
        let rate = m
            .allow_rate
            .map_or_else(|| "n/a".to_string(), |r| format!("{:.1}%", r * 100.0));
        let versus = match (m.false_allow, m.false_deny) {
            (Some(fa), Some(fd)) => format!("{fa}/{fd}"),
            _ => "n/a".to_string(),
        };
        let over = if m.over_admission > 1.0 {
            " class=\"over\""
        } else {
            ""
        };
        let _ = writeln!(
            t,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{rate}</td><td>{} / {}</td>\
             <td{over}>{}</td><td>{}</td><td>{versus}</td></tr>",
            escape(&a.name),
            m.allowed,
            m.denied,
            m.clients_denied,
            m.max_in_window,
            report.rule.max_requests,
            escape(&format_ratio(m.over_admission)),
            m.excess
        );
    }
    t.push_str("</table>\n");
    t
}

fn figure_html(figure: &Figure) -> Result<String, OutputError> {
    let bytes = std::fs::read(&figure.path).map_err(|source| OutputError::Write {
        path: figure.path.clone(),
        source,
    })?;
    let mime = match figure.path.extension().and_then(|e| e.to_str()) {
        Some("svg") => "image/svg+xml",
        _ => "image/png",
    };
    let name = figure
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(format!(
        "<figure>\n<img src=\"data:{mime};base64,{}\" alt=\"{}\">\n<figcaption>{} ({})</figcaption>\n</figure>\n",
        base64(&bytes),
        escape(&figure.caption),
        escape(&figure.caption),
        escape(&name)
    ))
}

/// One sentence per algorithm saying what its numbers mean, using the boundary zoom
/// (`zoom`, by algorithm name) for how tightly a peak was packed.
pub fn sentences(report: &RunReport, zoom: &[ZoomLane]) -> Vec<String> {
    let window = report.rule.window.to_decimal_secs();
    let limit = report.rule.max_requests;
    report
        .algorithms
        .iter()
        .map(|a| {
            let lane = zoom.iter().find(|l| l.algorithm == a.name);
            sentence(a, limit, &window, lane, report.deployment.is_some())
        })
        .collect()
}

fn sentence(
    a: &AlgorithmReport,
    limit: u64,
    window: &str,
    zoom: Option<&ZoomLane>,
    deployed: bool,
) -> String {
    let m = &a.metrics;
    let key = m.worst_key.as_deref().unwrap_or("any client");
    let denied = format!(
        "it denied {} of {} requests{}",
        m.denied,
        m.allowed + m.denied,
        versus_log(a, deployed)
    );
    if m.max_in_window == 0 {
        return format!("{}: admitted nothing; {denied}.", a.name);
    }
    if m.max_in_window <= limit {
        return format!(
            "{}: never let one client exceed the limit — at most {} in any {window} s window \
             (limit {limit}); {denied}.",
            a.name, m.max_in_window
        );
    }
    let packed = zoom.and_then(|l| peak_span(l, m.max_in_window));
    let how = match packed {
        Some(span) => format!(
            "admitted {} requests from {key} within {} across a window boundary",
            m.max_in_window,
            span_text(span)
        ),
        None => format!(
            "admitted {} requests from {key} inside one {window} s window",
            m.max_in_window
        ),
    };
    format!(
        "{}: {how} — {} the limit of {limit}; {} admissions left a window over the limit, and {denied}.",
        a.name,
        format_ratio(m.over_admission),
        m.excess
    )
}

/// One sentence of why, when the fixed window let more than the limit into one
/// window: its counter belongs to a calendar window and restarts at 0 on each boundary.
fn fixed_window_cause(report: &RunReport) -> Option<String> {
    let fixed = report
        .algorithms
        .iter()
        .find(|a| a.name == "fixed_window")?;
    let limit = report.rule.max_requests;
    (fixed.metrics.max_in_window > limit).then(|| {
        let window = report.rule.window.to_decimal_secs();
        let servers = match &report.deployment {
            Some(d) if d.nodes > 1 => format!(
                " Here each of the {} servers does this with the count it knows, so the \
                 total can go higher still.",
                d.nodes
            ),
            _ => String::new(),
        };
        format!(
            "Why the fixed window exceeds its limit: it counts only inside its own \
             {window} s window and resets that count to 0 at each boundary, so a client can \
             spend the limit of {limit} just before a boundary and {limit} again just after \
             it — up to twice the limit in one {window} s span.{servers}"
        )
    })
}

/// How the algorithm's decisions compare with the exact sliding log's on the same
/// stream (open clients only). In a deployment (`deployed`) the exact reference is the
/// global sliding log, one server seeing every request, not the per-server
/// `sliding_window_log` row.
fn versus_log(a: &AlgorithmReport, deployed: bool) -> String {
    let log = if deployed {
        "the global sliding log (one server seeing every request)"
    } else {
        "the exact sliding log"
    };
    if a.name == "sliding_window_log" && !deployed {
        return " (the exact reference the others are compared with)".to_string();
    }
    match (a.metrics.false_allow, a.metrics.false_deny) {
        (Some(0), Some(0)) => format!(", exactly the ones {log} denies"),
        (Some(fa), Some(fd)) => {
            format!(" ({fa} admitted that {log} denies, {fd} denied that it admits)")
        }
        _ => String::new(),
    }
}

/// In a zoom lane whose count reaches `max`, the exact time from the admission that
/// started the climb (count 1) to the one that reached `max`, when the zoom shows the
/// whole climb with no expiry in between.
fn peak_span(lane: &ZoomLane, max: u64) -> Option<u128> {
    let marks = &lane.marks;
    let at = marks.iter().position(|m| m.allowed && m.count == max)?;
    let start = marks[..=at]
        .iter()
        .rposition(|m| m.allowed && m.count == 1)?;
    let counts: Vec<u64> = marks[start..=at]
        .iter()
        .filter(|m| m.allowed)
        .map(|m| m.count)
        .collect();
    let climbing = counts.windows(2).all(|w| w[0] < w[1]);
    climbing.then(|| (marks[at].offset_ns - marks[start].offset_ns).unsigned_abs())
}

/// "1 ns", "250 ms", "1.5 s": exact, in the largest unit it reaches.
fn span_text(ns: u128) -> String {
    let text = super::charts::format_offset(ns as i128);
    text.trim_start_matches('+').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_content_and_attributes() {
        assert_eq!(
            escape(r#"<b>"A" & 'B'</b>"#),
            "&lt;b&gt;&quot;A&quot; &amp; &#39;B&#39;&lt;/b&gt;"
        );
    }

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain}");
        }
    }

    #[test]
    fn a_peak_packed_into_one_nanosecond_is_measured_from_the_zoom() {
        use super::super::charts::ZoomMark;
        let marks = (1..=10)
            .map(|count| ZoomMark {
                offset_ns: if count <= 5 { -1 } else { 0 },
                allowed: true,
                count,
                node: None,
            })
            .collect();
        let lane = ZoomLane {
            algorithm: "fixed_window".into(),
            marks,
            counter: None,
            peak: None,
        };
        assert_eq!(peak_span(&lane, 10), Some(1));
        assert_eq!(span_text(1), "1 ns");
    }
}
