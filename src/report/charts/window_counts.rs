//! The window-count chart: for each algorithm, a panel with the worst key's
//! trailing-window admitted count as a step line against the dashed limit.
//!
//! It draws every point it is given: the series arrives already thinned by the
//! simulator (see [`super`] for why that is the one place), and drawing it as-is keeps
//! the picture identical to `window_counts.csv`. It must not compute metrics.

use std::iter;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::DrawResult;
use super::frame::{
    AXIS_TITLE_SIZE, LegendMark, TICK_SIZE, axis_end, boundaries, display_name, draw_caption,
    draw_legend_row, draw_nothing_to_show, font, format_seconds,
};
use super::palette::{OVER_LIMIT_TINT, PANEL_BOUNDARY_GREY, PANEL_GRID, algorithm_color};
use crate::report::summary::format_ratio;

/// One algorithm's trailing-window admitted count over time.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowCountSeries {
    /// The legend label (the algorithm name).
    pub algorithm: String,
    /// The client whose count this is (a run draws each algorithm's worst client), named
    /// in the panel; `None` when the series is not one client's.
    pub key: Option<String>,
    /// The algorithm's place in the registry's display order: it picks the line's
    /// colour ([`algorithm_color`]), so an algorithm keeps its colour in every run.
    pub color_slot: usize,
    /// `(time_s, count)` at each change; the count holds until the next point and is
    /// 0 before the first. Need not be sorted; NaN times are skipped. Every point is
    /// drawn: the chart does not thin.
    pub points: Vec<(f64, u64)>,
}

/// Input of [`render_window_counts`](super::render_window_counts).
#[derive(Clone, Debug, PartialEq)]
pub struct WindowCountChart {
    /// Caption.
    pub title: String,
    /// Length of the x axis in seconds.
    pub duration_s: f64,
    /// Window length in seconds, for faint boundary lines. `None`: none.
    pub window_s: Option<f64>,
    /// The rule's `max_requests`, drawn as the dashed limit line.
    pub limit: u64,
    /// One step line per algorithm.
    pub series: Vec<WindowCountSeries>,
}

type PanelChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// What every panel shares: both axes' ends, the limit and the window.
struct Axes {
    end: f64,
    y_end: f64,
    limit: u64,
    window_s: Option<f64>,
}

/// Pixel height of the time axis under the bottom panel.
const TIME_AXIS: u32 = 60;

/// Draws the window-count chart on any plotters backend.
pub fn draw_window_counts<DB: DrawingBackend>(
    input: &WindowCountChart,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let series: Vec<Vec<(f64, u64)>> = input.series.iter().map(sorted_points).collect();
    let data_max = series
        .iter()
        .filter_map(|p| p.last().map(|p| p.0))
        .fold(0.0_f64, f64::max);
    let axes = Axes {
        end: axis_end(input.duration_s, data_max),
        y_end: y_axis_end(&series, input.limit),
        limit: input.limit,
        window_s: input.window_s,
    };

    let (header, body) = root.split_vertically(105);
    draw_caption(&header, &input.title, 35)?;
    if series.is_empty() {
        return draw_nothing_to_show(&body);
    }
    let legend = [
        (
            "peak (the most in one window)".to_string(),
            LegendMark::Ring(BLACK, 2),
        ),
        ("limit".to_string(), LegendMark::Dashed(BLACK)),
        (
            "over the limit".to_string(),
            LegendMark::Block(OVER_LIMIT_TINT),
        ),
    ];
    draw_legend_row(&header, (90, 85), &legend)?;
    // Small multiples: one panel per algorithm, all on the same axes, so each line is
    // read on its own (six overlaid step lines hide each other) and panels compare at
    // a glance. Only the bottom panel carries the time axis.
    let (_, body_height) = body.dim_in_pixel();
    let panel_height = (body_height.saturating_sub(TIME_AXIS) / series.len() as u32).max(1);
    let breaks: Vec<i32> = (1..series.len())
        .map(|i| (panel_height * i as u32) as i32)
        .collect();
    let panels = body.split_by_breakpoints([] as [i32; 0], breaks);
    let last = series.len() - 1;
    for (i, (points, panel)) in series.iter().zip(&panels).enumerate() {
        let (algorithm, slot) = (&input.series[i].algorithm, input.series[i].color_slot);
        let mut chart = draw_panel_axes(panel, &axes, i == last)?;
        draw_panel_background(&mut chart, &axes)?;
        chart.draw_series(iter::once(PathElement::new(
            step_path(points, axes.end),
            algorithm_color(slot).stroke_width(2),
        )))?;
        let verdict = draw_peak(&mut chart, points, &axes)?;
        panel.draw(&Text::new(
            panel_label(algorithm, input.series[i].key.as_deref(), &verdict),
            (80, 4),
            font(TICK_SIZE).pos(Pos::new(HPos::Left, VPos::Top)),
        ))?;
    }
    // One count-axis title for all the panels (each is too short to carry its own).
    let middle = (panel_height * series.len() as u32 / 2) as i32;
    body.draw(&Text::new(
        "admitted in the window",
        (4, middle),
        font(AXIS_TITLE_SIZE)
            .transform(FontTransform::Rotate270)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    Ok(())
}

/// The series' points with finite times, in time order.
fn sorted_points(series: &WindowCountSeries) -> Vec<(f64, u64)> {
    let mut points: Vec<(f64, u64)> = series
        .points
        .iter()
        .copied()
        .filter(|p| p.0.is_finite())
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// Every panel shares one y axis, tall enough for the highest count of any and for the
/// limit, with headroom above.
fn y_axis_end(series: &[Vec<(f64, u64)>], limit: u64) -> f64 {
    let highest = series.iter().flat_map(|p| p.iter().map(|&(_, c)| c)).max();
    let top_count = highest.unwrap_or(0).max(limit).max(1) as f64;
    (top_count * 1.25).ceil().max(top_count + 1.0)
}

/// One panel's axes and grid; only the `bottom` panel labels the time axis.
fn draw_panel_axes<'a, DB: DrawingBackend>(
    panel: &'a DrawingArea<DB, Shift>,
    axes: &Axes,
    bottom: bool,
) -> Result<PanelChart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let end = axes.end;
    let mut chart = ChartBuilder::on(panel)
        .margin_right(30)
        .margin_top(26)
        .x_label_area_size(if bottom { TIME_AXIS } else { 0 })
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..end, 0.0..axes.y_end)?;
    let x_fmt = |v: &f64| format_seconds(*v, end);
    let y_fmt = |v: &f64| format!("{v:.0}");
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_max_light_lines(0)
        .bold_line_style(PANEL_GRID)
        .x_desc(if bottom { "time (s)" } else { "" })
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .x_labels(if bottom { 12 } else { 0 })
        .y_labels(3)
        .axis_desc_style(font(AXIS_TITLE_SIZE))
        .label_style(font(TICK_SIZE))
        .draw()?;
    Ok(chart)
}

/// The tint above the limit, the window boundaries and the dashed limit line: what the
/// step line is read against.
fn draw_panel_background<DB: DrawingBackend>(
    chart: &mut PanelChart<'_, DB>,
    axes: &Axes,
) -> DrawResult<DB> {
    let (end, y_end, limit) = (axes.end, axes.y_end, axes.limit as f64);
    // Everything above the limit is over-admission: tinted, so a spike into it reads
    // as a violation at a glance.
    chart.draw_series(iter::once(Rectangle::new(
        [(0.0, limit), (end, y_end)],
        OVER_LIMIT_TINT.filled(),
    )))?;
    for x in boundaries(axes.window_s, end) {
        chart.draw_series(iter::once(PathElement::new(
            vec![(x, 0.0), (x, y_end)],
            PANEL_BOUNDARY_GREY.stroke_width(1),
        )))?;
    }
    chart.draw_series(iter::once(DashedPathElement::new(
        vec![(0.0, limit), (end, limit)],
        8,
        5,
        BLACK.stroke_width(1),
    )))?;
    Ok(())
}

/// Circles the series' first highest point (where the peak happens, over the limit or
/// not), and returns the panel's verdict: its peak against the limit.
fn draw_peak<DB: DrawingBackend>(
    chart: &mut PanelChart<'_, DB>,
    points: &[(f64, u64)],
    axes: &Axes,
) -> Result<String, DrawingAreaErrorKind<DB::ErrorType>> {
    let limit = axes.limit;
    let found = peak(points, axes.end);
    if let Some((t, count, _)) = found {
        chart.draw_series(iter::once(
            EmptyElement::at((t, count as f64)) + Circle::new((0, 0), 5, BLACK.stroke_width(2)),
        ))?;
    }
    Ok(match found {
        Some((_, count, held)) if count > limit && limit > 0 => {
            format!(
                "peaks at {count} = {} the limit of {limit}, for {}",
                format_ratio(count as f64 / limit as f64),
                span(held)
            )
        }
        Some((_, count, held)) => {
            format!(
                "at most {count} (for {}), within the limit of {limit}",
                span(held)
            )
        }
        None => "nothing admitted".to_string(),
    })
}

/// The panel's label: the algorithm, the client it plots, and what its count did.
fn panel_label(algorithm: &str, key: Option<&str>, verdict: &str) -> String {
    match key {
        Some(key) => format!(
            "{}, key {}: {verdict}",
            display_name(algorithm),
            display_name(key)
        ),
        None => format!("{}: {verdict}", display_name(algorithm)),
    }
}

/// The highest count of sorted `points` (the first time it is reached) and how long,
/// in seconds, it held before a real drop (a dip and recovery at one instant, as when
/// entries expire and new ones are admitted together, is no drop), or until `end`.
fn peak(points: &[(f64, u64)], end: f64) -> Option<(f64, u64, f64)> {
    let (i, &(t, count)) = points
        .iter()
        .enumerate()
        .max_by(|(_, a), (_, b)| a.1.cmp(&b.1).then(b.0.total_cmp(&a.0)))?;
    let lasts = |j: usize| points.get(j + 1).map_or(end, |p| p.0) > points[j].0;
    let until = (i + 1..points.len())
        .find(|&j| points[j].1 < count && lasts(j))
        .map_or(end, |j| points[j].0);
    Some((t, count, (until - t).max(0.0)))
}

/// A length of time for a caption, from float seconds: three significant figures in
/// the largest unit under it (`1 ns`, `95.3 ms`, `2.89 s`); the exact values are in
/// window_counts.csv.
fn span(secs: f64) -> String {
    let ns = (secs * 1e9).round().max(0.0);
    let (value, unit) = match ns {
        n if n < 1e3 => (n, "ns"),
        n if n < 1e6 => (n / 1e3, "µs"),
        n if n < 1e9 => (n / 1e6, "ms"),
        n => (n / 1e9, "s"),
    };
    let digits = match value {
        v if v >= 99.95 => 0,
        v if v >= 9.995 => 1,
        _ => 2,
    };
    let text = format!("{value:.digits$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {unit}")
}

/// A step path over sorted points: each count holds until the next point; 0 before the
/// first point; points past `end` are dropped.
fn step_path(points: &[(f64, u64)], end: f64) -> Vec<(f64, f64)> {
    let mut path = Vec::with_capacity(points.len() * 2 + 2);
    let mut current = 0.0;
    path.push((0.0, 0.0));
    // Points after the end of the axis are off the chart (and sorted, so all later).
    for &(t, c) in points.iter().take_while(|p| p.0 <= end) {
        let t = t.max(0.0);
        path.push((t, current));
        current = c as f64;
        path.push((t, current));
    }
    path.push((end, current));
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peak_says_how_long_it_held_even_when_it_is_one_nanosecond() {
        let points = [(0.5, 3), (9.999_999_999, 10), (10.0, 5), (15.0, 0)];
        let (t, count, held) = peak(&points, 60.0).unwrap();
        assert_eq!(
            (t, count, span(held)),
            (9.999_999_999, 10, "1 ns".to_string())
        );
        // Ties go to the first time; a drop and recovery at one instant is no drop.
        let dips = [(1.0, 4), (2.0, 0), (2.0, 4), (3.0, 2), (5.0, 4)];
        let (t, _, held) = peak(&dips, 10.0).unwrap();
        assert_eq!((t, span(held)), (1.0, "2 s".to_string()));
        // The last point holds to the end of the axis.
        assert_eq!(span(peak(&[(4.0, 1)], 10.0).unwrap().2), "6 s");
        assert_eq!(peak(&[], 10.0), None);
    }

    #[test]
    fn spans_keep_three_significant_figures_in_a_fitting_unit() {
        let cases = [
            (1e-9, "1 ns"),
            (0.095_278_198, "95.3 ms"),
            (2.890_063_939, "2.89 s"),
            (9.999_999_999, "10 s"),
            (57.621_242_034, "57.6 s"),
            (1.5e-5, "15 µs"),
            (0.0, "0 ns"),
        ];
        for (secs, text) in cases {
            assert_eq!(span(secs), text, "{secs}");
        }
    }

    #[test]
    fn a_panel_names_the_client_it_plots() {
        assert_eq!(
            panel_label("fixed_window", Some("client-3"), "peaks at 10"),
            "fixed_window, key client-3: peaks at 10"
        );
        assert_eq!(panel_label("gcra", None, "at most 5"), "gcra: at most 5");
    }

    #[test]
    fn step_path_holds_each_count_until_the_next_point() {
        let path = step_path(&[(1.0, 2), (3.0, 5)], 4.0);
        assert_eq!(
            path,
            vec![
                (0.0, 0.0),
                (1.0, 0.0),
                (1.0, 2.0),
                (3.0, 2.0),
                (3.0, 5.0),
                (4.0, 5.0)
            ]
        );
    }
}
