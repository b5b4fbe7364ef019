//! The over-admission bar chart: one horizontal bar per algorithm, the most admitted
//! in any window divided by the limit, against the dashed exact limit at 1.0.
//!
//! It draws the ratios it is given and must not compute them.

use std::iter;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::DrawResult;
use super::frame::{
    AXIS_TITLE_SIZE, LegendMark, TICK_SIZE, display_name, draw_caption, draw_lane_labels,
    draw_legend_row, draw_nothing_to_show, font, label_area_width, lane_base,
};
use super::palette::{OVER_RED, WITHIN_BLUE};
use crate::report::summary::format_ratio;

/// Input of [`render_over_admission`](super::render_over_admission): one bar per
/// `(algorithm, max_in_window / limit)`.
#[derive(Clone, Debug, PartialEq)]
pub struct OverAdmissionChart {
    /// Caption.
    pub title: String,
    /// The bars, top to bottom; NaN or infinite values are labelled `n/a`.
    pub bars: Vec<(String, f64)>,
}

type BarChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws the over-admission bar chart on any plotters backend.
pub fn draw_over_admission<DB: DrawingBackend>(
    input: &OverAdmissionChart,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let names: Vec<String> = input.bars.iter().map(|b| display_name(&b.0)).collect();
    let n = names.len();
    let finite_max = input
        .bars
        .iter()
        .map(|b| b.1)
        .filter(|v| v.is_finite() && *v >= 0.0)
        .fold(0.0_f64, f64::max);
    let x_end = (finite_max.max(1.0) * 1.22).min(f64::MAX / 2.0);

    let (header, body) = root.split_vertically(110);
    draw_header(&input.title, &header)?;
    if n == 0 {
        return draw_nothing_to_show(&body);
    }
    let mut chart = draw_axes(root, &body, &names, x_end)?;
    for (i, (_, value)) in input.bars.iter().enumerate() {
        draw_bar(&mut chart, lane_base(i, n), *value, x_end)?;
    }
    draw_limit_line(&mut chart, n)
}

/// Caption and the legend of the bar colours and the limit line.
fn draw_header<DB: DrawingBackend>(title: &str, header: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
    draw_caption(header, title, 30)?;
    draw_legend_row(
        header,
        (260, 82),
        &[
            (
                "within the limit (≤ 1.0)".to_string(),
                LegendMark::Block(WITHIN_BLUE),
            ),
            (
                "over the limit (> 1.0)".to_string(),
                LegendMark::Block(OVER_RED),
            ),
            ("exact limit".to_string(), LegendMark::Dashed(BLACK)),
        ],
    )
}

/// The ratio axis and the algorithm names; returns the chart to draw the bars on.
fn draw_axes<'a, DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    body: &'a DrawingArea<DB, Shift>,
    names: &[String],
    x_end: f64,
) -> Result<BarChart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let label_width = label_area_width(body, names.iter().cloned())?;
    let y_top = names.len() as f64 + 0.5;
    let mut chart = ChartBuilder::on(body)
        .margin_right(40)
        .margin_bottom(10)
        .x_label_area_size(70)
        .y_label_area_size(label_width)
        .build_cartesian_2d(0.0..x_end, 0.0..y_top)?;
    let x_fmt = |v: &f64| format!("{v:.1}");
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_max_light_lines(1)
        .light_line_style(RGBColor(245, 245, 245))
        .bold_line_style(RGBColor(220, 220, 220))
        .x_desc("over-admission = max admitted in any window ÷ limit")
        .x_label_formatter(&x_fmt)
        .y_labels(0)
        .x_labels(10)
        .axis_desc_style(font(AXIS_TITLE_SIZE))
        .label_style(font(TICK_SIZE))
        .draw()?;
    draw_lane_labels(root, &chart, names)?;
    Ok(chart)
}

/// One bar in the lane starting at `y`, labelled with its ratio; `n/a` for a value
/// that is not a finite, non-negative ratio.
fn draw_bar<DB: DrawingBackend>(
    chart: &mut BarChart<'_, DB>,
    y: f64,
    value: f64,
    x_end: f64,
) -> DrawResult<DB> {
    let label_style = font(TICK_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
    if value.is_finite() && value >= 0.0 {
        let color = if value > 1.0 { OVER_RED } else { WITHIN_BLUE };
        let v = value.min(x_end);
        chart.draw_series(iter::once(Rectangle::new(
            [(0.0, y + 0.2), (v, y + 0.8)],
            color.filled(),
        )))?;
        chart.draw_series(iter::once(
            EmptyElement::at((v, y + 0.5)) + Text::new(format_ratio(value), (14, 0), label_style),
        ))?;
    } else {
        chart.draw_series(iter::once(
            EmptyElement::at((0.0, y + 0.5))
                + Text::new("n/a (no limit or no data)", (14, 0), label_style),
        ))?;
    }
    Ok(())
}

/// The dashed line at exactly 1.0 across all `n` lanes, labelled at its top.
fn draw_limit_line<DB: DrawingBackend>(chart: &mut BarChart<'_, DB>, n: usize) -> DrawResult<DB> {
    chart.draw_series(iter::once(DashedPathElement::new(
        vec![(1.0, 0.0), (1.0, n as f64)],
        10,
        6,
        BLACK.stroke_width(2),
    )))?;
    chart.draw_series(iter::once(
        EmptyElement::at((1.0, n as f64))
            + Text::new(
                "exact limit",
                (8, 2),
                font(TICK_SIZE).pos(Pos::new(HPos::Left, VPos::Top)),
            ),
    ))?;
    Ok(())
}
