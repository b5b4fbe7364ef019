//! The sweep's frontier: one point per (configuration, algorithm), clients denied
//! across, over-admission up, coloured by algorithm, with the Pareto front (nothing
//! else denies fewer clients *and* admits less) drawn as a staircase and labelled.
//!
//! It draws the points and the front it is given; the front is decided by the sweep's
//! report code, not here.

use std::iter;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::DrawResult;
use super::frame::{
    AXIS_TITLE_SIZE, LegendMark, TICK_SIZE, display_name, draw_caption, draw_legend_row,
    draw_nothing_to_show, font,
};
use super::palette::algorithm_color;

/// Input of [`render_frontier`](super::render_frontier).
#[derive(Clone, Debug, PartialEq)]
pub struct FrontierChart {
    /// Caption.
    pub title: String,
    /// One point per row of the sweep.
    pub points: Vec<FrontierPoint>,
    /// The goals, as the legend names them (`None`: no goal).
    pub goal: Option<String>,
}

/// One row of a sweep, as the frontier draws it.
#[derive(Clone, Debug, PartialEq)]
pub struct FrontierPoint {
    /// The algorithm's name.
    pub algorithm: String,
    /// Its place in the registry's display order (its colour).
    pub slot: usize,
    /// The configuration, as labels show it (`100/10s burst 150`).
    pub config: String,
    /// x: clients that saw at least one denial.
    pub clients_denied: u64,
    /// y: the most admitted in one window ÷ the limit (NaN: not drawn).
    pub over_admission: f64,
    /// On the Pareto front.
    pub on_front: bool,
    /// Meets the sweep's goals (`None`: there were none); a miss is drawn hollow.
    pub meets_goal: Option<bool>,
}

type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws the frontier on any plotters backend.
pub fn draw_frontier<DB: DrawingBackend>(
    input: &FrontierChart,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (header, body) = root.split_vertically(150);
    draw_header(input, &header)?;
    let points: Vec<&FrontierPoint> = input
        .points
        .iter()
        .filter(|p| p.over_admission.is_finite())
        .collect();
    if points.is_empty() {
        return draw_nothing_to_show(&body);
    }
    let x_max = points.iter().map(|p| p.clients_denied).max().unwrap_or(0) as f64;
    let y_max = points.iter().map(|p| p.over_admission).fold(1.0, f64::max);
    let x_end = x_max.max(1.0) * 1.1 + 0.6;
    let mut chart = draw_axes(&body, x_end, y_max * 1.15)?;
    draw_limit_line(&mut chart, x_end)?;
    let dodge = Dodge::new(&points);
    draw_front_line(&mut chart, &points, &dodge)?;
    // The front last, so its points sit on top.
    for on_front in [false, true] {
        for p in points.iter().filter(|p| p.on_front == on_front) {
            draw_point(&mut chart, p, dodge.at(p))?;
        }
    }
    draw_front_labels(&mut chart, &points, &dodge, y_max * 1.15)
}

/// Counts are whole numbers, so many rows share an x: each algorithm's points are
/// moved sideways by a fixed step (at most ±0.3), in the legend's order, so that one
/// algorithm cannot hide another.
struct Dodge {
    slots: Vec<usize>,
}

impl Dodge {
    fn new(points: &[&FrontierPoint]) -> Dodge {
        let mut slots: Vec<usize> = points.iter().map(|p| p.slot).collect();
        slots.sort_unstable();
        slots.dedup();
        Dodge { slots }
    }

    /// Where `p` is drawn.
    fn at(&self, p: &FrontierPoint) -> (f64, f64) {
        let n = self.slots.len();
        let k = self.slots.iter().position(|&s| s == p.slot).unwrap_or(0);
        let step = if n > 1 { 0.6 / (n - 1) as f64 } else { 0.0 };
        let offset = (k as f64 - (n - 1) as f64 / 2.0) * step;
        (p.clients_denied as f64 + offset, p.over_admission)
    }
}

/// Caption, then a legend row of algorithms and one of the marks.
fn draw_header<DB: DrawingBackend>(
    input: &FrontierChart,
    header: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    draw_caption(header, &input.title, 30)?;
    let mut algorithms: Vec<(usize, String)> = Vec::new();
    for p in &input.points {
        if !algorithms.iter().any(|(slot, _)| *slot == p.slot) {
            algorithms.push((p.slot, display_name(&p.algorithm)));
        }
    }
    algorithms.sort_by_key(|a| a.0);
    let algorithms: Vec<(String, LegendMark)> = algorithms
        .into_iter()
        .map(|(slot, name)| (name, LegendMark::Dot(algorithm_color(slot))))
        .collect();
    draw_legend_row(header, (40, 78), &algorithms)?;
    let mut marks = vec![
        ("Pareto front".to_string(), LegendMark::Ring(BLACK, 3)),
        ("exact limit".to_string(), LegendMark::Dashed(BLACK)),
    ];
    if let Some(goal) = &input.goal {
        marks.push((
            format!("misses the goal {goal}"),
            LegendMark::Ring(RGBColor(120, 120, 120), 2),
        ));
    }
    draw_legend_row(header, (40, 118), &marks)
}

fn draw_axes<'a, DB: DrawingBackend>(
    body: &'a DrawingArea<DB, Shift>,
    x_end: f64,
    y_end: f64,
) -> Result<Plot<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut chart = ChartBuilder::on(body)
        .margin_right(40)
        .margin_top(10)
        .margin_bottom(10)
        .x_label_area_size(70)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5..x_end, 0.0..y_end)?;
    // Whole clients only: ticks between them stay unlabelled.
    let x_fmt = |v: &f64| {
        let whole = v.round();
        if (v - whole).abs() < 1e-9 && whole >= 0.0 {
            format!("{whole:.0}")
        } else {
            String::new()
        }
    };
    let y_fmt = |v: &f64| format!("{v:.1}");
    chart
        .configure_mesh()
        .light_line_style(RGBColor(245, 245, 245))
        .bold_line_style(RGBColor(225, 225, 225))
        .x_desc(
            "clients denied: clients that got at least one denial (each algorithm a little aside)",
        )
        .y_desc("over-admission (most admitted in a window ÷ limit)")
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        // Few enough ticks that a short axis steps by whole clients.
        .x_labels(((x_end + 1.5) as usize).clamp(2, 12))
        .y_labels(8)
        .axis_desc_style(font(AXIS_TITLE_SIZE))
        .label_style(font(TICK_SIZE))
        .draw()?;
    Ok(chart)
}

/// The dashed line at exactly 1.0: at or under it the limit held in every window.
fn draw_limit_line<DB: DrawingBackend>(chart: &mut Plot<'_, DB>, x_end: f64) -> DrawResult<DB> {
    chart.draw_series(iter::once(DashedPathElement::new(
        vec![(-0.5, 1.0), (x_end, 1.0)],
        10,
        6,
        BLACK.stroke_width(1),
    )))?;
    Ok(())
}

/// The front as a staircase: from each front point right to the next one's x, then
/// down to it (moving right never raises over-admission on the front).
fn draw_front_line<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    points: &[&FrontierPoint],
    dodge: &Dodge,
) -> DrawResult<DB> {
    let mut front: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.on_front)
        .map(|p| dodge.at(p))
        .collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut path = Vec::new();
    for (x, y) in front {
        if let Some(&(_, last_y)) = path.last() {
            path.push((x, last_y));
        }
        path.push((x, y));
    }
    chart.draw_series(iter::once(PathElement::new(path, BLACK.stroke_width(2))))?;
    Ok(())
}

/// One row's point in its algorithm's colour: hollow when it misses the goals, ringed
/// in black when it is on the front.
fn draw_point<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    p: &FrontierPoint,
    at: (f64, f64),
) -> DrawResult<DB> {
    let color = algorithm_color(p.slot);
    let style = if p.meets_goal == Some(false) {
        color.stroke_width(2)
    } else {
        color.filled()
    };
    chart.draw_series(iter::once(Circle::new(at, 7, style)))?;
    if p.on_front {
        chart.draw_series(iter::once(Circle::new(at, 11, BLACK.stroke_width(3))))?;
    }
    Ok(())
}

/// Labels each distinct front point with its first row (`gcra 100/10s`) and how many
/// other rows share its numbers, stepping down left to right so labels stack rather
/// than overlap.
fn draw_front_labels<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    points: &[&FrontierPoint],
    dodge: &Dodge,
    y_end: f64,
) -> DrawResult<DB> {
    let mut spots: Vec<(&FrontierPoint, usize)> = Vec::new();
    for p in points.iter().filter(|p| p.on_front) {
        match spots.iter_mut().find(|(s, _)| {
            s.clients_denied == p.clients_denied && s.over_admission == p.over_admission
        }) {
            Some(spot) => spot.1 += 1,
            None => spots.push((p, 0)),
        }
    }
    spots.sort_by_key(|(p, _)| p.clients_denied);
    for (i, (p, more)) in spots.into_iter().enumerate() {
        let mut text = format!("{} {}", display_name(&p.algorithm), p.config);
        if more > 0 {
            text.push_str(&format!(" (and {more} more with these numbers)"));
        }
        let step = 12 + 24 * (i as i32 % 3);
        // Below and to the right: few rows admit less than the limit, so that corner
        // is usually empty; above when the point sits on the floor of the plot.
        let (v, dy) = if p.over_admission < y_end * 0.12 {
            (VPos::Bottom, -step)
        } else {
            (VPos::Top, step)
        };
        let style = font(TICK_SIZE).pos(Pos::new(HPos::Left, v));
        chart.draw_series(iter::once(
            EmptyElement::at(dodge.at(p)) + Text::new(text, (14, dy), style),
        ))?;
    }
    Ok(())
}
