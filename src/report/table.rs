//! The terminal summary table (comfy-table), one row per algorithm.
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

use super::summary::SummaryRow;

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
    /// Wrap to this many columns (below [`MIN_TERMINAL_WIDTH`], [`FALLBACK_WIDTH`]);
    /// `None` (the default) never wraps.
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

/// Column headers of the summary table.
pub const HEADERS: [&str; 9] = [
    "algorithm",
    "allowed",
    "denied",
    "allow\nrate",
    "max in window\n/ limit",
    "over-\nadmission",
    "excess",
    "vs sliding log\nfalse allow/deny",
    "retry_after\nexact/early/late",
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

fn times(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{ratio:.2}×")
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

/// Renders the summary table as a string (no trailing newline).
///
/// Over-admission above 1.0 is bold red when `options.color` is set; without colour
/// the output contains no escape codes at all.
pub fn render_summary_table(rows: &[SummaryRow], options: TableOptions) -> String {
    let mut table = new_table(options);
    table.set_header(
        HEADERS
            .iter()
            .map(|h| Cell::new(h).add_attribute(Attribute::Bold)),
    );
    for row in rows {
        let over = ratio_cell(row.over_admission, options);
        table.add_row(vec![
            Cell::new(&row.algorithm),
            Cell::new(row.allowed),
            Cell::new(row.denied),
            Cell::new(percent(row.allow_rate)),
            Cell::new(format!("{} / {}", row.max_in_window, row.limit)),
            over,
            Cell::new(row.excess),
            Cell::new(if row.false_allow.is_none() && row.false_deny.is_none() {
                "–".to_string()
            } else {
                format!("{}/{}", opt(row.false_allow), opt(row.false_deny))
            }),
            Cell::new(triple(row.retry_exact, row.retry_early, row.retry_late)),
        ]);
    }
    finish_table(
        table,
        rows.iter().map(|r| r.algorithm.as_str()),
        HEADERS.len(),
    )
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
    let mut table = new_table(options);
    let header = std::iter::once(corner).chain(columns.iter().map(String::as_str));
    table.set_header(header.map(|h| Cell::new(h).add_attribute(Attribute::Bold)));
    for (label, ratios) in rows {
        let cells =
            std::iter::once(Cell::new(label)).chain(ratios.iter().map(|&r| ratio_cell(r, options)));
        table.add_row(cells.collect::<Vec<_>>());
    }
    finish_table(
        table,
        rows.iter().map(|(l, _)| l.as_str()),
        columns.len() + 1,
    )
}

/// Renders plain text rows under `headers` (first column left-aligned, the rest right):
/// for tables whose cells the caller has already formatted (`worst-case`, `calibrate`).
pub fn render_rows(headers: &[&str], rows: &[Vec<String>], options: TableOptions) -> String {
    let mut table = new_table(options);
    table.set_header(
        headers
            .iter()
            .map(|h| Cell::new(h).add_attribute(Attribute::Bold)),
    );
    for row in rows {
        table.add_row(row.iter().map(Cell::new).collect::<Vec<_>>());
    }
    finish_table(
        table,
        rows.iter().filter_map(|r| r.first().map(String::as_str)),
        headers.len(),
    )
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
    match options.width {
        Some(width) => {
            table
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(if width < MIN_TERMINAL_WIDTH {
                    FALLBACK_WIDTH
                } else {
                    width
                });
        }
        None => {
            table.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    table
}

/// An over-admission ratio (`1.60×`), bold red above 1.0 when colour is on.
fn ratio_cell(ratio: f64, options: TableOptions) -> Cell {
    let cell = Cell::new(times(ratio));
    if options.color && ratio > 1.0 {
        cell.fg(Color::Red).add_attribute(Attribute::Bold)
    } else {
        cell
    }
}

/// Keeps the first column (names) from wrapping, right-aligns the rest, renders.
fn finish_table<'a>(
    mut table: Table,
    labels: impl Iterator<Item = &'a str>,
    columns: usize,
) -> String {
    // Names never wrap: they are what the reader scans for.
    let longest = labels
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(HEADERS[0].len());
    if let Some(column) = table.column_mut(0) {
        // The constraint counts the cell padding (one space each side) too.
        let width = u16::try_from(longest + 2).unwrap_or(u16::MAX).min(42);
        column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(width)));
    }
    for index in 1..columns {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_wins_and_empty_no_color_is_ignored() {
        assert!(color_enabled(None, Some(OsStr::new("xterm")), true));
        assert!(!color_enabled(Some(OsStr::new("1")), None, true));
        assert!(color_enabled(Some(OsStr::new("")), None, true));
        assert!(!color_enabled(None, Some(OsStr::new("dumb")), true));
        assert!(!color_enabled(None, None, false));
    }
}
