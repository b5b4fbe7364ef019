//! No chart contradicts its table: for every bundled scenario, each number a chart
//! prints in a caption or an annotation, and each number in `report.html`'s summary
//! table and sentences, is the one in `summary.csv` (or, for the instant a peak was
//! reached, in `window_counts.csv`).
//!
//! The charts are written as SVG (`--chart-format svg`), whose `<text>` elements are
//! exactly the strings the PNGs draw (one drawing function serves both backends).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// One row of `summary.csv`, by column name.
type Row = HashMap<String, String>;

fn bundled_scenarios() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    found.sort();
    assert!(found.len() >= 10, "bundled scenarios in {}", dir.display());
    found
}

/// Runs `scenario` with SVG charts into `out`.
fn run(scenario: &Path, out: &Path) {
    let output = Command::cargo_bin("ratesim")
        .unwrap()
        .args(["run", "--chart-format", "svg", "--out"])
        .arg(out)
        .arg(scenario)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ratesim run {} failed:\n{}",
        scenario.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The first summary row of each algorithm (with per-rule rows, the first rule's).
fn summary(dir: &Path) -> HashMap<String, Row> {
    let mut reader = csv::Reader::from_path(dir.join("summary.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let mut rows = HashMap::new();
    for record in reader.records() {
        let record = record.unwrap();
        let row: Row = headers
            .iter()
            .zip(record.iter())
            .map(|(h, v)| (h.to_string(), v.to_string()))
            .collect();
        rows.entry(row["algorithm"].clone()).or_insert(row);
    }
    rows
}

fn num(row: &Row, column: &str) -> u64 {
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column} = {:?}", row[column]))
}

/// `window_counts.csv` as `(algorithm, key, time_s, count)`.
fn window_counts(dir: &Path) -> Vec<(String, String, String, u64)> {
    let mut reader = csv::Reader::from_path(dir.join("window_counts.csv")).unwrap();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            (
                r[0].to_string(),
                r[1].to_string(),
                r[2].to_string(),
                r[3].parse().unwrap(),
            )
        })
        .collect()
}

fn unescape(text: &str) -> String {
    text.replace("&apos;", "'")
        .replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The text of every `<text>` element of an SVG, in drawing order.
fn svg_texts(path: &Path) -> Vec<String> {
    anchored_texts(path).into_iter().map(|(_, t)| t).collect()
}

/// Every `<text>` element's `text-anchor` and text, in drawing order.
fn anchored_texts(path: &Path) -> Vec<(String, String)> {
    let svg = std::fs::read_to_string(path).unwrap();
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>'))
        .map(|(attributes, rest)| {
            let anchor = attributes
                .split("text-anchor=\"")
                .nth(1)
                .and_then(|a| a.split('"').next())
                .unwrap_or("")
                .to_string();
            let text = unescape(rest.split("</text>").next().unwrap_or("").trim());
            (anchor, text)
        })
        .collect()
}

/// A ratio as printed (`4.10`) agrees with the summary's `over_admission` (`4.1`) to
/// the printed precision.
fn same_ratio(printed: &str, row: &Row) -> bool {
    let (Ok(p), Ok(s)) = (printed.parse::<f64>(), row["over_admission"].parse::<f64>()) else {
        return false;
    };
    let decimals = printed.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    (p - s).abs() <= 0.5 * 10f64.powi(-decimals) + 1e-12
}

/// The number just before `marker` in `text`, e.g. `("peaks at 41 = 4.10×", " = ")`
/// gives `41`.
fn number_before<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    let head = &text[..text.find(marker)?];
    let start = head
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(0, |i| i + head[i..].chars().next().unwrap().len_utf8());
    Some(&head[start..]).filter(|n| !n.is_empty())
}

/// The number just after `marker` in `text`.
fn number_after<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    let tail = &text[text.find(marker)? + marker.len()..];
    let end = tail
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(tail.len());
    Some(tail[..end].trim_end_matches('.')).filter(|n| !n.is_empty())
}

/// The algorithm a caption is about: the longest name it starts with.
fn algorithm_of<'a>(text: &str, rows: &'a HashMap<String, Row>) -> Option<&'a Row> {
    rows.iter()
        .filter(|(name, _)| {
            text.starts_with(&format!("{name}:")) || text.starts_with(&format!("{name},"))
        })
        .max_by_key(|(name, _)| name.len())
        .map(|(_, row)| row)
}

/// The over-admission bars: one `R×` label per algorithm, each the summary's ratio.
fn check_bars(dir: &Path, rows: &HashMap<String, Row>, problems: &mut Vec<String>) {
    let texts = svg_texts(&dir.join("over_admission.svg"));
    let names: Vec<&String> = texts.iter().filter(|t| rows.contains_key(*t)).collect();
    let ratios: Vec<&String> = texts
        .iter()
        .filter(|t| t.ends_with('×') && t[..t.len() - '×'.len_utf8()].parse::<f64>().is_ok())
        .collect();
    if names.len() != rows.len() || ratios.len() != names.len() {
        problems.push(format!("bars: names {names:?}, ratio labels {ratios:?}"));
        return;
    }
    for (name, ratio) in names.iter().zip(&ratios) {
        let printed = ratio.trim_end_matches('×');
        if !same_ratio(printed, &rows[*name]) {
            problems.push(format!(
                "bars: {name} labelled {ratio}, summary over_admission {}",
                rows[*name]["over_admission"]
            ));
        }
    }
}

/// A caption's `N in one window` / `peaks at N` / `at most N` and its `R×` are the
/// summary's `max_in_window` and `over_admission`; its limit is the rule's.
fn check_claim(chart: &str, text: &str, row: &Row, problems: &mut Vec<String>) {
    let max = num(row, "max_in_window");
    let limit = num(row, "limit_max_requests");
    let claimed = number_before(text, " in one window")
        .or_else(|| number_after(text, "peaks at "))
        .or_else(|| number_after(text, "at most "));
    match claimed.map(str::parse::<u64>) {
        Some(Ok(n)) if n == max => {}
        other => problems.push(format!(
            "{chart}: {text:?} claims {other:?}, summary max_in_window {max}"
        )),
    }
    if let Some(ratio) = number_before(text, "× the limit")
        && !same_ratio(ratio, row)
    {
        problems.push(format!(
            "{chart}: {text:?} says {ratio}×, summary {}",
            row["over_admission"]
        ));
    }
    if let Some(l) = number_after(text, "the limit of ")
        && l.parse() != Ok(limit)
    {
        problems.push(format!("{chart}: {text:?} limit {l}, summary {limit}"));
    }
}

/// The window-count panels: each names the summary's worst key and its figures.
fn check_window_counts(dir: &Path, rows: &HashMap<String, Row>, problems: &mut Vec<String>) {
    for text in svg_texts(&dir.join("window_counts.svg")) {
        let Some(row) = algorithm_of(&text, rows) else {
            continue;
        };
        check_claim("window_counts", &text, row, problems);
        let key = format!(", key {}:", row["worst_key"]);
        if !row["worst_key"].is_empty() && !text.contains(&key) {
            problems.push(format!(
                "window_counts: {text:?} is not the worst key {}",
                row["worst_key"]
            ));
        }
    }
}

/// The zoom's panels: each caption's figure is the summary's, and where it says the
/// figure was reached is true of the panel's marks or of `window_counts.csv`.
fn check_zoom(dir: &Path, rows: &HashMap<String, Row>, problems: &mut Vec<String>) {
    let counts = window_counts(dir);
    let texts = anchored_texts(&dir.join("timeline_zoom.svg"));
    let mut panel_start = 0;
    for (i, (_, text)) in texts.iter().enumerate() {
        let Some(row) = algorithm_of(text, rows) else {
            continue;
        };
        // Each panel's mark labels (centred; the count axis's ticks are right-aligned)
        // are drawn before its caption.
        let marks: Vec<u64> = texts[panel_start..i]
            .iter()
            .filter(|(anchor, _)| anchor == "middle")
            .filter_map(|(_, t)| t.parse().ok())
            .collect();
        panel_start = i + 1;
        check_claim("zoom", text, row, problems);
        let max = num(row, "max_in_window");
        if text.ends_with("reached here") && !marks.contains(&max) {
            problems.push(format!("zoom: {text:?} but no mark labelled {max}"));
        }
        // "…, by KEY at T s": the summary's worst key, and the instant (to the
        // millisecond) window_counts.csv first shows it at the figure.
        if let Some(by) = text.rfind(", by ") {
            let (name, key) = (&row["algorithm"], &row["worst_key"]);
            let tail = &text[by + 5..];
            if !tail.starts_with(&format!("{key} at ")) {
                problems.push(format!("zoom: {text:?} names another client than {key}"));
            }
            let printed = number_after(tail, " at ").and_then(|t| t.parse::<f64>().ok());
            let first = counts
                .iter()
                .find(|(a, k, _, c)| a == name && k == key && *c == max)
                .and_then(|f| f.2.parse::<f64>().ok());
            match (printed, first) {
                (Some(p), Some(f)) if (p - f).abs() <= 0.000_5 + 1e-9 => {}
                _ => problems.push(format!(
                    "zoom: {text:?}, window_counts.csv first reaches {max} at {first:?}"
                )),
            }
        }
        // No mark stands higher than the run's most.
        if let Some(n) = marks.iter().find(|&&n| n > max) {
            let name = &row["algorithm"];
            problems.push(format!("zoom: {name} panel has a mark at {n} > {max}"));
        }
    }
}

fn check_charts(dir: &Path, rows: &HashMap<String, Row>, problems: &mut Vec<String>) {
    check_bars(dir, rows, problems);
    check_window_counts(dir, rows, problems);
    if dir.join("timeline_zoom.svg").exists() {
        check_zoom(dir, rows, problems);
    }
    let limit = rows.values().next().map(|r| num(r, "limit_max_requests"));
    for chart in ["timeline.svg", "timeline_zoom.svg"] {
        let Some(caption) = svg_texts(&dir.join(chart)).into_iter().next() else {
            continue;
        };
        if let Some(l) = number_after(&caption, "(limit ")
            && l.parse().ok() != limit
        {
            problems.push(format!("{chart}: {caption:?}, summary limit {limit:?}"));
        }
    }
}

/// The numbers of a report.html sentence about `row`: each is one of the row's
/// figures (or the rule's), a ratio is its over-admission, and a span is within a window.
fn check_sentence(sentence: &str, row: &Row, problems: &mut Vec<String>) {
    let n = |c: &str| num(row, c);
    let window_s = n("limit_window_ns") as f64 / 1e9;
    let mut allowed: Vec<String> = [
        n("allowed"),
        n("denied"),
        n("allowed") + n("denied"),
        n("max_in_window"),
        n("excess"),
        n("limit_max_requests"),
    ]
    .iter()
    .map(u64::to_string)
    .collect();
    for optional in ["false_allow", "false_deny"] {
        allowed.push(row[optional].clone());
    }
    allowed.push(format!("{window_s}"));
    // The client's name may hold digits; take it out first.
    let mut text = sentence.replace(&row["worst_key"], "KEY");
    // "within 1 ns across a window boundary": a span, at most one window long.
    if let Some(span) = number_after(&text, "within ") {
        let unit = text[text.find("within ").unwrap() + 7 + span.len()..]
            .split_whitespace()
            .next()
            .unwrap_or("");
        let scale = match unit {
            "ns" => 1e-9,
            "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            _ => f64::NAN,
        };
        let secs = span.parse::<f64>().unwrap_or(f64::NAN) * scale;
        if secs.is_nan() || secs > window_s {
            problems.push(format!(
                "html: {sentence:?}: span {span} {unit} vs window {window_s} s"
            ));
        }
        text = text.replacen(&format!("within {span} {unit}"), "within SPAN", 1);
    }
    let mut rest = text.as_str();
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(tail.len());
        let number = tail[..end].trim_end_matches('.');
        let after = &tail[end..];
        let fine = if after.starts_with('×') {
            same_ratio(number, row)
        } else {
            allowed.iter().any(|a| a == number)
        };
        if !fine {
            problems.push(format!(
                "html: {number} in {sentence:?} is not in summary.csv's row"
            ));
        }
        rest = after;
    }
}

/// report.html: the summary table's cells and every sentence's numbers.
fn check_html(dir: &Path, rows: &HashMap<String, Row>, problems: &mut Vec<String>) {
    let html = unescape(&std::fs::read_to_string(dir.join("report.html")).unwrap());
    for item in html.split("<li><b>").skip(1) {
        let (name, rest) = item.split_once("</b>: ").unwrap();
        let sentence = rest.split("</li>").next().unwrap();
        match rows.get(name) {
            Some(row) => check_sentence(sentence, row, problems),
            None => problems.push(format!("html: a sentence about {name}, not in summary.csv")),
        }
    }
    // The summary table only: the sections after it (delays, each rule, each server)
    // have their own columns.
    let summary_table = html
        .split_once("<h2>Summary</h2>")
        .and_then(|(_, rest)| rest.split_once("</table>"))
        .map_or("", |(table, _)| table);
    assert!(!summary_table.is_empty(), "report.html has a summary table");
    for tr in summary_table.split("<tr><td>").skip(1) {
        let cells: Vec<String> = tr
            .split("</tr>")
            .next()
            .unwrap()
            .split("</td>")
            .map(|c| c.rsplit('>').next().unwrap_or("").to_string())
            .filter(|c| !c.is_empty())
            .collect();
        let Some(row) = rows.get(&cells[0]) else {
            problems.push(format!("html table: row {:?} not in summary.csv", cells[0]));
            continue;
        };
        let expected = [
            row["allowed"].clone(),
            row["denied"].clone(),
            row["clients_denied"].clone(),
        ];
        if cells[1..4] != expected {
            problems.push(format!("html table: {cells:?} vs summary {expected:?}"));
        }
        let max = format!("{} / {}", row["max_in_window"], row["limit_max_requests"]);
        if cells[5] != max {
            problems.push(format!("html table: {} vs summary {max}", cells[5]));
        }
        if !same_ratio(cells[6].trim_end_matches('×'), row) {
            problems.push(format!(
                "html table: {} vs {}",
                cells[6], row["over_admission"]
            ));
        }
    }
}

#[test]
fn every_chart_and_report_sentence_of_every_bundled_scenario_agrees_with_summary_csv() {
    let temp = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    for scenario in bundled_scenarios() {
        let name = scenario.file_stem().unwrap().to_string_lossy().to_string();
        let out = temp.path().join(&name);
        run(&scenario, &out);
        let rows = summary(&out);
        let mut found = Vec::new();
        check_charts(&out, &rows, &mut found);
        check_html(&out, &rows, &mut found);
        problems.extend(found.into_iter().map(|p| format!("{name}: {p}")));
    }
    assert!(
        problems.is_empty(),
        "{} disagreements:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
