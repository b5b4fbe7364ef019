//! The over-admission-versus-nodes chart: small multiples, one panel per algorithm
//! (its line in colour, the others faint grey behind it, so equal lines never hide
//! each other), x = servers behind the balancer, y = the most admitted in any window ÷
//! the limit, against the dashed exact limit at 1.0.
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
    if input.series.is_empty() {
        return draw_nothing_to_show(&body);
    }
    let points = || input.series.iter().flat_map(|s| s.points.iter());
    let x_max = points().map(|p| p.0).max().unwrap_or(1).max(1);
    let y_max = points().map(|p| p.1).filter(finite).fold(1.0, f64::max);
    let mut ticks: Vec<u32> = points().map(|p| p.0).collect();
    ticks.sort_unstable();
    ticks.dedup();
    let frame = Frame {
        x_end: f64::from(x_max) * 1.05 + 0.5,
        y_end: y_max * 1.12,
        ticks,
    };
    // Small multiples: equal lines would hide each other on one plot, so each
    // algorithm gets its own panel (the others faint behind it), on the same axes.
    let columns = PANEL_COLUMNS.min(input.series.len());
    let rows = input.series.len().div_ceil(columns);
    let panels = body.margin(0, 10, 10, 10).split_evenly((rows, columns));
    for (i, panel) in panels.iter().enumerate().take(input.series.len()) {
        draw_panel(panel, input, i, &frame)?;
    }
    Ok(())
}

/// Panels per row of the small multiples.
const PANEL_COLUMNS: usize = 3;

fn finite(v: &f64) -> bool {
    v.is_finite() && *v >= 0.0
}

/// The axes every panel shares.
struct Frame {
    x_end: f64,
    y_end: f64,
    ticks: Vec<u32>,
}

/// One series' finite points, as chart coordinates.
fn line_of(s: &NodesSeries) -> Vec<(f64, f64)> {
    s.points
        .iter()
        .filter(|p| finite(&p.1))
        .map(|&(x, y)| (f64::from(x), y))
        .collect()
}

/// Panel `index`: its algorithm's line and markers in its colour over the others'
/// lines in light grey, the exact limit dashed.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    input: &NodesChart,
    index: usize,
    frame: &Frame,
) -> DrawResult<DB> {
    let own = &input.series[index];
    let mut chart = ChartBuilder::on(area)
        .caption(&own.algorithm, font(AXIS_TITLE_SIZE))
        .margin_right(20)
        .margin_bottom(6)
        .x_label_area_size(62)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..frame.x_end, 0.0..frame.y_end)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(RGBColor(245, 245, 245))
        .bold_line_style(RGBColor(225, 225, 225))
        .x_desc("servers")
        .y_desc("over-admission")
        .x_labels(0)
        .y_labels(5)
        .y_label_formatter(&|v: &f64| format!("{v:.1}"))
        .axis_desc_style(font(TICK_SIZE))
        .label_style(font(TICK_SIZE))
        .draw()?;
    draw_node_ticks(&mut chart, &frame.ticks)?;
    draw_limit(&mut chart, frame.x_end)?;
    for (i, s) in input.series.iter().enumerate() {
        if i != index {
            let grey = RGBColor(200, 200, 200).stroke_width(2);
            chart.draw_series(LineSeries::new(line_of(s), grey))?;
        }
    }
    let color = algorithm_color(own.color_slot);
    let line = line_of(own);
    chart.draw_series(LineSeries::new(line.clone(), color.stroke_width(4)))?;
    chart.draw_series(line.iter().map(|&p| Circle::new(p, 7, color.filled())))?;
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
