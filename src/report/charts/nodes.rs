//! The over-admission-versus-nodes chart: one line per algorithm, x = servers behind
//! the balancer, y = the most admitted in any window ÷ the limit, against the dashed
//! exact limit at 1.0.
//!
//! It draws the ratios it is given and must not compute them.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::DrawResult;
use super::frame::{
    AXIS_TITLE_SIZE, LegendMark, TICK_SIZE, draw_caption, draw_legend_row, draw_nothing_to_show,
    font,
};
use super::palette::algorithm_color;

/// Input of [`render_nodes`](super::render_nodes).
#[derive(Clone, Debug, PartialEq)]
pub struct NodesChart {
    /// Caption.
    pub title: String,
    /// One line per algorithm.
    pub series: Vec<NodesSeries>,
}

/// One algorithm's over-admission at each node count.
#[derive(Clone, Debug, PartialEq)]
pub struct NodesSeries {
    /// Registry name, shown in the legend.
    pub algorithm: String,
    /// Its colour: the place in the registry's display order (see `palette`).
    pub color_slot: usize,
    /// `(nodes, over-admission)`, in increasing node count; non-finite ratios are
    /// left out.
    pub points: Vec<(u32, f64)>,
}

/// Draws the chart on any plotters backend.
pub fn draw_nodes<DB: DrawingBackend>(
    input: &NodesChart,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (header, body) = root.split_vertically(150);
    draw_caption(&header, &input.title, 30)?;
    let legend: Vec<(String, LegendMark)> = input
        .series
        .iter()
        .map(|s| {
            let mark = LegendMark::Line(algorithm_color(s.color_slot), 4);
            (s.algorithm.clone(), mark)
        })
        .chain([("exact limit".to_string(), LegendMark::Dashed(BLACK))])
        .collect();
    let (first, second) = legend.split_at(legend.len().div_ceil(2));
    draw_legend_row(&header, (90, 80), first)?;
    draw_legend_row(&header, (90, 118), second)?;
    let points = || input.series.iter().flat_map(|s| s.points.iter());
    let finite = |v: &f64| v.is_finite() && *v >= 0.0;
    let x_max = points().map(|p| p.0).max().unwrap_or(1).max(1);
    let y_max = points().map(|p| p.1).filter(finite).fold(1.0, f64::max);
    if input.series.is_empty() {
        return draw_nothing_to_show(&body);
    }
    let x_end = f64::from(x_max) * 1.05 + 0.5;
    let mut chart = ChartBuilder::on(&body)
        .margin_right(50)
        .margin_bottom(10)
        .margin_left(20)
        .x_label_area_size(70)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..x_end, 0.0..y_max * 1.12)?;
    let mut ticks: Vec<u32> = points().map(|p| p.0).collect();
    ticks.sort_unstable();
    ticks.dedup();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(RGBColor(245, 245, 245))
        .bold_line_style(RGBColor(225, 225, 225))
        .x_desc("servers behind the balancer")
        .y_desc("over-admission (most admitted in any window ÷ limit)")
        .x_labels(0)
        .y_label_formatter(&|v: &f64| format!("{v:.1}"))
        .axis_desc_style(font(AXIS_TITLE_SIZE))
        .label_style(font(TICK_SIZE))
        .draw()?;
    draw_node_ticks(&mut chart, &ticks)?;
    draw_limit(&mut chart, x_end)?;
    // Equal lines would hide each other: earlier ones are drawn wider, so each stays
    // visible as a band around the next.
    let n = input.series.len() as u32;
    for (i, s) in input.series.iter().enumerate() {
        let width = 3 + 3 * (n - 1 - i as u32);
        let color = algorithm_color(s.color_slot);
        let line: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| finite(&p.1))
            .map(|&(x, y)| (f64::from(x), y))
            .collect();
        chart.draw_series(LineSeries::new(line.clone(), color.stroke_width(width)))?;
        chart.draw_series(
            line.iter()
                .map(|&p| Circle::new(p, width / 2 + 5, color.filled())),
        )?;
    }
    Ok(())
}

type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A label under each node count that was run (and nowhere else).
fn draw_node_ticks<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, ticks: &[u32]) -> DrawResult<DB> {
    let style = font(TICK_SIZE).pos(Pos::new(HPos::Center, VPos::Top));
    chart.draw_series(ticks.iter().map(|&t| {
        EmptyElement::at((f64::from(t), 0.0)) + Text::new(t.to_string(), (0, 12), style.clone())
    }))?;
    Ok(())
}

/// The dashed line at exactly 1.0, labelled at its right end.
fn draw_limit<DB: DrawingBackend>(chart: &mut Chart<'_, DB>, x_end: f64) -> DrawResult<DB> {
    chart.draw_series(std::iter::once(DashedPathElement::new(
        vec![(0.0, 1.0), (x_end, 1.0)],
        10,
        6,
        BLACK.stroke_width(2),
    )))?;
    chart.draw_series(std::iter::once(
        EmptyElement::at((x_end, 1.0))
            + Text::new(
                "exact limit",
                (-8, -6),
                font(TICK_SIZE).pos(Pos::new(HPos::Right, VPos::Bottom)),
            ),
    ))?;
    Ok(())
}
