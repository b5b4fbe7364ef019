//! The terminal summary table (comfy-table), one row per algorithm, and the other
//! tables the CLI prints.
//!
//! Layout rules, for every table here: a cell is never wrapped (a number or an
//! `a/b/c` group is never split across lines), headers wrap at spaces only, and a
//! table too wide for the terminal becomes several stacked tables that each repeat
//! the label column.
//!
//! Rendering is a pure function of the rows and [`TableOptions`]; terminal detection is
//! done once in [`TableOptions::for_stdout`] so tests and pipes get byte-identical
//! output. This module must not print: the caller decides where the string goes.

use std::ffi::OsStr;
use std::io::IsTerminal;

use comfy_table::{
    Attribute, Cell, CellAlignment, Color, ColumnConstraint, ContentArrangement, Table, Width,
    presets,
};

use super::summary::{RetryOutcome, SummaryRow};
use crate::time::Nanos;

/// Width used when a terminal reports fewer than [`MIN_TERMINAL_WIDTH`] columns
/// (a pty reporting 0 would squeeze every column to one character).
pub const FALLBACK_WIDTH: u16 = 120;
/// Narrower reported terminal widths are treated as bogus.
pub const MIN_TERMINAL_WIDTH: u16 = 40;

/// How to render the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TableOptions {
    /// Emit ANSI colour (over-admission in bold red). Default: off.
    pub color: bool,
    /// Fit to this many columns (below [`MIN_TERMINAL_WIDTH`], [`FALLBACK_WIDTH`]):
    /// headers wrap at spaces, cells never wrap, and a table that still does not fit
    /// is split into several, each repeating the first column. `None` (the default)
    /// never wraps or splits.
    pub width: Option<u16>,
}

impl TableOptions {
    /// No colour, no wrapping: deterministic output for files, pipes and tests.
    pub fn plain() -> TableOptions {
        TableOptions::default()
    }

    /// Options for printing to this process's stdout: colour only on a terminal with
    /// `NO_COLOR` unset and `TERM` not `dumb`; wrap to the terminal width.
    pub fn for_stdout() -> TableOptions {
        let tty = std::io::stdout().is_terminal();
        let color = color_enabled(
            std::env::var_os("NO_COLOR").as_deref(),
            std::env::var_os("TERM").as_deref(),
            tty,
        );
        // comfy-table asks the terminal for its size only when stdout is a tty.
        let width = if tty {
            let detected = Table::new().width();
            Some(match detected {
                Some(w) if w >= MIN_TERMINAL_WIDTH => w,
                _ => FALLBACK_WIDTH,
            })
        } else {
            None
        };
        TableOptions { color, width }
    }
}

/// The colour decision, pure: <https://no-color.org> (any non-empty `NO_COLOR`
/// disables colour), `TERM=dumb` disables it, and only terminals get colour.
pub fn color_enabled(no_color: Option<&OsStr>, term: Option<&OsStr>, is_tty: bool) -> bool {
    let no_color = no_color.is_some_and(|v| !v.is_empty());
    let dumb = term.is_some_and(|t| t == "dumb");
    is_tty && !no_color && !dumb
}

/// Column headers of the summary table, broken where a narrow table breaks them best
/// (a terminal narrower still wraps them further, at spaces only).
///
/// The last two columns are left out when they would say nothing per algorithm: the
/// sliding-log comparison when no row has one (retry clients), and `retry_after`
/// honesty when it was exact everywhere (then a note under the table says so).
pub const HEADERS: [&str; 10] = [
    "algorithm",
    "allowed",
    "denied",
    "clients\ndenied",
    "allowed\n%",
    "max in\nwindow\n/ limit",
    "over-\nadmission",
    "excess",
    "false allow\n/ deny vs\nsliding log",
    "retry_after\nexact /\nearly /\nlate",
];

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "–".to_string(), |n| n.to_string())
}

fn percent(rate: f64) -> String {
    if rate.is_finite() {
        format!("{:.1}%", rate * 100.0)
    } else {
        "n/a".to_string()
    }
}

fn triple(a: Option<u64>, b: Option<u64>, c: Option<u64>) -> String {
    if a.is_none() && b.is_none() && c.is_none() {
        "–".to_string()
    } else {
        format!("{}/{}/{}", opt(a), opt(b), opt(c))
    }
}

/// One cell before layout: its text, and whether it is highlighted (bold red).
pub(super) struct Entry {
    pub(super) text: String,
    pub(super) alert: bool,
}

impl Entry {
    pub(super) fn plain(text: impl Into<String>) -> Entry {
        Entry {
            text: text.into(),
            alert: false,
        }
    }
}

/// A table before layout: headers and rows of cells, the first column the row labels.
pub(super) struct Grid {
    pub(super) headers: Vec<String>,
    pub(super) rows: Vec<Vec<Entry>>,
}

/// Display width of `text`, one column per `char` (our cells are ASCII plus `×`, `–`,
/// `÷` and `%`, all one column wide).
fn text_width(text: &str) -> usize {
    text.chars().count()
}

impl Grid {
    /// The narrowest each column may get: headers break only at spaces (so the longest
    /// word), cells never break (so the longest cell). A number or an `a/b/c` group is
    /// never split across lines, whatever the terminal width.
    fn min_widths(&self) -> Vec<usize> {
        (0..self.headers.len())
            .map(|c| {
                let header = self.headers[c]
                    .split_whitespace()
                    .map(text_width)
                    .max()
                    .unwrap_or(0);
                let cells = self
                    .rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .flat_map(|e| e.text.lines())
                    .map(text_width)
                    .max()
                    .unwrap_or(0);
                header.max(cells)
            })
            .collect()
    }

    /// Renders the table; when it cannot fit `options.width` even with every header
    /// wrapped, as several tables stacked, each repeating the label column (a column
    /// too wide to fit even beside the labels alone overflows rather than breaks).
    pub(super) fn render(&self, options: TableOptions) -> String {
        let min = self.min_widths();
        let pages = match fit_width(options) {
            Some(width) => pages(&min, usize::from(width)),
            None => vec![(0..min.len()).collect()],
        };
        pages
            .iter()
            .map(|columns| self.render_columns(columns, &min, options))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// One comfy table of the given columns (the first is the label column).
    fn render_columns(&self, columns: &[usize], min: &[usize], options: TableOptions) -> String {
        let mut table = new_table(options);
        table.set_header(
            columns
                .iter()
                .map(|&c| Cell::new(&self.headers[c]).add_attribute(Attribute::Bold)),
        );
        for row in &self.rows {
            table.add_row(
                columns
                    .iter()
                    .filter_map(|&c| row.get(c))
                    .map(|e| entry_cell(e, options))
                    .collect::<Vec<_>>(),
            );
        }
        for (index, &c) in columns.iter().enumerate() {
            if let Some(column) = table.column_mut(index) {
                // The constraint counts the cell padding (one space each side) too.
                let width = u16::try_from(min[c] + 2).unwrap_or(u16::MAX);
                column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(width)));
                if index > 0 {
                    column.set_cell_alignment(CellAlignment::Right);
                }
            }
        }
        table.to_string()
    }
}

/// The width tables are fitted to, if any (bogus narrow widths replaced).
pub(super) fn fit_width(options: TableOptions) -> Option<u16> {
    options.width.map(|width| {
        if width < MIN_TERMINAL_WIDTH {
            FALLBACK_WIDTH
        } else {
            width
        }
    })
}

/// Outer width of a table of `columns` at their narrowest: each column its content,
/// one space of padding either side and one border, plus the closing border.
fn table_width(columns: &[usize], min: &[usize]) -> usize {
    columns.iter().map(|&c| min[c] + 3).sum::<usize>() + 1
}

/// Splits the columns into groups that fit `width`, in order, each led by column 0:
/// as few groups as fit, as even as possible (no lone column on a last table).
fn pages(min: &[usize], width: usize) -> Vec<Vec<usize>> {
    let fewest = pack(min, width);
    if fewest.len() == 1 {
        return fewest;
    }
    // The narrowest cap that needs no more tables than `width` does: first-fit never
    // needs more groups for a larger cap, so this minimises the widest table.
    (0..width)
        .map(|cap| pack(min, cap))
        .find(|p| p.len() == fewest.len())
        .unwrap_or(fewest)
}

/// First-fit: each group takes columns while its table stays within `width` (and
/// always at least one besides column 0).
fn pack(min: &[usize], width: usize) -> Vec<Vec<usize>> {
    let mut pages = Vec::new();
    let mut page = vec![0];
    for c in 1..min.len() {
        page.push(c);
        if page.len() > 2 && table_width(&page, min) > width {
            page.pop();
            pages.push(std::mem::replace(&mut page, vec![0, c]));
        }
    }
    pages.push(page);
    pages
}

/// A cell, bold red when it is an alert and colour is on.
fn entry_cell(entry: &Entry, options: TableOptions) -> Cell {
    let cell = Cell::new(&entry.text);
    if options.color && entry.alert {
        cell.fg(Color::Red).add_attribute(Attribute::Bold)
    } else {
        cell
    }
}

/// Renders the summary table as a string (no trailing newline), with any notes that
/// stand in for columns on the lines under it.
///
/// Over-admission above 1.0 is bold red when `options.color` is set; without colour
/// the output contains no escape codes at all.
pub fn render_summary_table(rows: &[SummaryRow], options: TableOptions) -> String {
    let compared = rows
        .iter()
        .any(|r| r.false_allow.is_some() || r.false_deny.is_some());
    let inexact = rows
        .iter()
        .any(|r| r.retry_early.unwrap_or(0) > 0 || r.retry_late.unwrap_or(0) > 0);
    let counted = rows.iter().any(|r| r.clients_denied.is_some());
    let shown = |column: usize| match column {
        3 => counted,
        8 => compared,
        9 => inexact,
        _ => true,
    };
    let grid = Grid {
        headers: (0..HEADERS.len())
            .filter(|&c| shown(c))
            .map(|c| HEADERS[c].to_string())
            .collect(),
        rows: rows
            .iter()
            .map(|row| {
                let cells = [
                    Entry::plain(&row.algorithm),
                    Entry::plain(row.allowed.to_string()),
                    Entry::plain(row.denied.to_string()),
                    Entry::plain(opt(row.clients_denied)),
                    Entry::plain(percent(row.allow_rate)),
                    Entry::plain(format!("{} / {}", row.max_in_window, row.limit)),
                    ratio_entry(row.over_admission),
                    Entry::plain(row.excess.to_string()),
                    Entry::plain(if row.false_allow.is_none() && row.false_deny.is_none() {
                        "–".to_string()
                    } else {
                        format!("{}/{}", opt(row.false_allow), opt(row.false_deny))
                    }),
                    Entry::plain(triple(row.retry_exact, row.retry_early, row.retry_late)),
                ];
                cells
                    .into_iter()
                    .enumerate()
                    .filter(|&(c, _)| shown(c))
                    .map(|(_, e)| e)
                    .collect()
            })
            .collect(),
    };
    let mut text = grid.render(options);
    let exact: u64 = rows.iter().filter_map(|r| r.retry_exact).sum();
    let mut notes = Vec::new();
    if !inexact && exact > 0 {
        notes.push(format!(
            "retry_after was exact on all {exact} denials checked (none early, none late)."
        ));
    }
    notes.extend(never_fits_note(rows));
    for note in notes {
        text.push('\n');
        text.push_str(&wrap(&note, fit_width(options)));
    }
    text
}

/// Why some requests were denied whatever happened: their cost is above what the
/// algorithm can ever hold (`None` when every request could fit).
fn never_fits_note(rows: &[SummaryRow]) -> Option<String> {
    let first = rows.first()?;
    if rows.iter().all(|r| r.never_fits == 0) {
        return None;
    }
    let capacity = format!(
        "the capacity (the limit, {}, or the burst for the buckets and GCRA)",
        first.limit
    );
    Some(if rows.iter().all(|r| r.never_fits == first.never_fits) {
        let n = first.never_fits;
        let (requests, them) = if n == 1 {
            ("request", "it")
        } else {
            ("requests", "them")
        };
        format!("{n} {requests} cost more than {capacity}: no algorithm could ever admit {them}.")
    } else {
        let each: Vec<String> = rows
            .iter()
            .filter(|r| r.never_fits > 0)
            .map(|r| format!("{} {}", r.algorithm, r.never_fits))
            .collect();
        format!(
            "Requests that cost more than {capacity} can never pass: {}.",
            each.join(", ")
        )
    })
}

/// Headers of the retry-outcome table.
pub const RETRY_HEADERS: [&str; 4] = [
    "algorithm",
    "succeeded /\ngave up /\nunfinished",
    "wasted\nretries",
    "latency\np50 / p99 / max",
];

/// Renders what became of each request under retry clients, one row per algorithm
/// whose [`SummaryRow::retry`] is set, under a one-line caption; `None` when no row
/// has retry outcomes (open clients).
pub fn render_retry_outcomes(rows: &[SummaryRow], options: TableOptions) -> Option<String> {
    let retried: Vec<(&SummaryRow, RetryOutcome)> = rows
        .iter()
        .filter_map(|r| r.retry.map(|o| (r, o)))
        .collect();
    if retried.is_empty() {
        return None;
    }
    let requests: Vec<u64> = retried
        .iter()
        .map(|(r, o)| {
            o.succeeded
                .saturating_add(o.gave_up)
                .saturating_add(o.unfinished)
                .saturating_add(r.never_fits)
        })
        .collect();
    let never: Vec<u64> = retried.iter().map(|(r, _)| r.never_fits).collect();
    let same = |v: &[u64]| v.iter().all(|&x| x == v[0]).then_some(v[0]);
    let whose = match (same(&requests), same(&never)) {
        (Some(n), Some(0)) => format!("the {n} requests"),
        (Some(n), Some(k)) => format!("the {n} requests ({k} never fit)"),
        _ => "each algorithm's requests".to_string(),
    };
    let caption = format!("Retry clients: what became of {whose} (latency: arrival to admission)");
    let grid = Grid {
        headers: RETRY_HEADERS.iter().map(|h| h.to_string()).collect(),
        rows: retried
            .iter()
            .map(|(r, o)| {
                let latency = match o.latency {
                    Some(latency) => latency.map(short_duration).join("/"),
                    None => "–".to_string(),
                };
                vec![
                    Entry::plain(&r.algorithm),
                    Entry::plain(format!("{}/{}/{}", o.succeeded, o.gave_up, o.unfinished)),
                    Entry::plain(o.wasted_retries.to_string()),
                    Entry::plain(latency),
                ]
            })
            .collect(),
    };
    Some(format!(
        "{}\n{}",
        wrap(&caption, fit_width(options)),
        grid.render(options)
    ))
}

/// A duration to three significant digits in the largest unit that keeps it at or
/// above 1: `850ns`, `12.3ms`, `1.14s`, `118s` (display only: a float is fine here).
pub(super) fn short_duration(n: Nanos) -> String {
    let ns = n.as_u64();
    // Thresholds at x999.5 so that rounding never prints `1000ms` for `1.00s`.
    let (value, unit) = match ns {
        0..1_000 => return format!("{ns}ns"),
        1_000..999_500 => (ns as f64 / 1e3, "µs"),
        999_500..999_500_000 => (ns as f64 / 1e6, "ms"),
        _ => (ns as f64 / 1e9, "s"),
    };
    let decimals = if value >= 99.95 {
        0
    } else if value >= 9.995 {
        1
    } else {
        2
    };
    format!("{value:.decimals$}{unit}")
}

/// `text` wrapped at spaces to `width` columns (unwrapped when `None`).
pub(super) fn wrap(text: &str, width: Option<u16>) -> String {
    let Some(width) = width.map(usize::from) else {
        return text.to_string();
    };
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        let w = text_width(word);
        if line > 0 && line + 1 + w > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += w;
    }
    out
}

/// Renders a matrix of over-admission ratios: one row per algorithm, one column per
/// scenario (what `ratesim compare` prints). Cells above 1.0 are highlighted like the
/// summary's over-admission column; `NaN` (the algorithm did not run there) is `n/a`.
pub fn render_ratio_matrix(
    corner: &str,
    columns: &[String],
    rows: &[(String, Vec<f64>)],
    options: TableOptions,
) -> String {
    let grid = Grid {
        headers: std::iter::once(corner.to_string())
            .chain(columns.iter().cloned())
            .collect(),
        rows: rows
            .iter()
            .map(|(label, ratios)| {
                std::iter::once(Entry::plain(label))
                    .chain(ratios.iter().map(|&r| ratio_entry(r)))
                    .collect()
            })
            .collect(),
    };
    grid.render(options)
}

/// Renders plain text rows under `headers` (first column left-aligned, the rest right):
/// for tables whose cells the caller has already formatted (`worst-case`, `calibrate`).
/// Cells are never wrapped; headers wrap at spaces only.
pub fn render_rows(headers: &[&str], rows: &[Vec<String>], options: TableOptions) -> String {
    let grid = Grid {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows: rows
            .iter()
            .map(|row| row.iter().map(Entry::plain).collect())
            .collect(),
    };
    grid.render(options)
}

/// A table styled and sized per `options`, with no rows yet.
fn new_table(options: TableOptions) -> Table {
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL_CONDENSED);
    // Never consult the real terminal here: options carry the decision.
    table.force_no_tty();
    if options.color {
        table.enforce_styling();
    }
    match fit_width(options) {
        Some(width) => {
            table
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(width);
        }
        None => {
            table.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    table
}

/// An over-admission ratio (`1.60×`), an alert above 1.0.
pub(super) fn ratio_entry(ratio: f64) -> Entry {
    Entry {
        text: super::summary::format_ratio(ratio),
        alert: ratio > 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_durations_keep_three_significant_digits_and_carry_into_the_next_unit() {
        let cases = [
            (0, "0ns"),
            (999, "999ns"),
            (1_000, "1.00µs"),
            (999_499, "999µs"),
            (999_500, "1.00ms"),
            (12_345_678, "12.3ms"),
            (999_500_000, "1.00s"),
            (1_140_850_687, "1.14s"),
            (29_527_900_159, "29.5s"),
            (118_000_000_000, "118s"),
        ];
        for (ns, text) in cases {
            assert_eq!(short_duration(Nanos::new(ns)), text, "{ns} ns");
        }
    }

    #[test]
    fn no_color_wins_and_empty_no_color_is_ignored() {
        assert!(color_enabled(None, Some(OsStr::new("xterm")), true));
        assert!(!color_enabled(Some(OsStr::new("1")), None, true));
        assert!(color_enabled(Some(OsStr::new("")), None, true));
        assert!(!color_enabled(None, Some(OsStr::new("dumb")), true));
        assert!(!color_enabled(None, None, false));
    }
}
