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
    /// The row the CLI recommends (`run it: …`): the least restrictive that meets the
    /// goals. Drawn in a black diamond and named in the legend.
    pub recommended: bool,
}

type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws the frontier on any plotters backend.
pub fn draw_frontier<DB: DrawingBackend>(
    input: &FrontierChart,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (header, body) = root.split_vertically(HEADER);
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
    let dodge = Dodge::new(&points, &chart);
    draw_front_line(&mut chart, &points, &dodge)?;
    // The front last, so its points sit on top.
    for on_front in [false, true] {
        for p in points.iter().filter(|p| p.on_front == on_front) {
            draw_point(&mut chart, p, dodge.at(p))?;
        }
    }
    for p in points.iter().filter(|p| p.recommended) {
        chart.draw_series(iter::once(
            EmptyElement::at(dodge.at(p)) + PathElement::new(diamond(15), BLACK.stroke_width(3)),
        ))?;
    }
    draw_front_labels(&mut chart, &points, &dodge, y_max * 1.15)
}

/// Pixel height of the caption and the legend rows.
const HEADER: u32 = 190;
/// A point's radius, in pixels.
const POINT: i32 = 7;

/// A diamond's closed outline around the origin, `r` pixels from centre to corner.
fn diamond(r: i32) -> Vec<(i32, i32)> {
    vec![(0, -r), (r, 0), (0, r), (-r, 0), (0, -r)]
}

/// Where each point is drawn. Clients denied are whole numbers, and a point sits at
/// its own: only points that would overlap (same count, over-admissions within a
/// point's width of the lowest of them) are set side by side, a point's width apart,
/// centred on the count (squeezed to stay within ±0.45 of it). Rows of one algorithm
/// with the very same numbers share one spot: they would draw the same point.
struct Dodge {
    at: Vec<(*const FrontierPoint, (f64, f64))>,
}

impl Dodge {
    fn new<DB: DrawingBackend>(points: &[&FrontierPoint], chart: &Plot<'_, DB>) -> Dodge {
        let origin = chart.backend_coord(&(0.0, 0.0));
        let unit_x = f64::from((chart.backend_coord(&(1.0, 0.0)).0 - origin.0).max(1));
        let unit_y = f64::from((origin.1 - chart.backend_coord(&(0.0, 1.0)).1).max(1));
        let width = f64::from(2 * POINT + 4);
        let same = |a: &FrontierPoint, b: &FrontierPoint| {
            a.slot == b.slot
                && a.clients_denied == b.clients_denied
                && a.over_admission == b.over_admission
        };
        // One spot per distinct (algorithm, numbers), lowest first within each count.
        let mut spots: Vec<&FrontierPoint> = Vec::new();
        for p in points {
            if !spots.iter().any(|q| same(q, p)) {
                spots.push(p);
            }
        }
        spots.sort_by(|a, b| {
            a.clients_denied
                .cmp(&b.clients_denied)
                .then(a.over_admission.total_cmp(&b.over_admission))
        });
        let mut placed: Vec<(&FrontierPoint, (f64, f64))> = Vec::with_capacity(spots.len());
        let mut start = 0;
        while start < spots.len() {
            let low = spots[start];
            let end = start
                + spots[start..]
                    .iter()
                    .take_while(|p| {
                        p.clients_denied == low.clients_denied
                            && (p.over_admission - low.over_admission) * unit_y < width
                    })
                    .count();
            let mut cluster = spots[start..end].to_vec();
            cluster.sort_by_key(|p| p.slot);
            let n = cluster.len() as f64;
            let step = (width / unit_x).min(0.9 / n);
            for (k, p) in cluster.into_iter().enumerate() {
                let offset = (k as f64 - (n - 1.0) / 2.0) * step;
                placed.push((p, (p.clients_denied as f64 + offset, p.over_admission)));
            }
            start = end;
        }
        let at = points
            .iter()
            .map(|p| {
                let xy = placed.iter().find(|(q, _)| same(q, p)).map(|(_, xy)| *xy);
                let xy = xy.unwrap_or((p.clients_denied as f64, p.over_admission));
                (std::ptr::from_ref(*p), xy)
            })
            .collect();
        Dodge { at }
    }

    /// Where `p` is drawn.
    fn at(&self, p: &FrontierPoint) -> (f64, f64) {
        self.at
            .iter()
            .find(|(q, _)| std::ptr::eq(*q, p))
            .map_or((p.clients_denied as f64, p.over_admission), |(_, xy)| *xy)
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
    draw_legend_row(header, (40, 118), &marks)?;
    let mut notes = Vec::new();
    if let Some(best) = input.points.iter().find(|p| p.recommended) {
        notes.push((
            format!(
                "recommended (least restrictive meeting the goal): {} {}",
                display_name(&best.algorithm),
                best.config
            ),
            LegendMark::Diamond(BLACK),
        ));
    }
    notes.push((
        "points set side by side: same whole number of clients denied".to_string(),
        LegendMark::Pair(RGBColor(120, 120, 120)),
    ));
    draw_legend_row(header, (40, 158), &notes)
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
        .x_desc("clients denied: clients that got at least one denial (whole numbers)")
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
    chart.draw_series(iter::once(Circle::new(at, POINT, style)))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn point(algorithm: &str, slot: usize, clients: u64, over: f64) -> FrontierPoint {
        FrontierPoint {
            algorithm: algorithm.to_string(),
            slot,
            config: "400/10s burst 100".to_string(),
            clients_denied: clients,
            over_admission: over,
            on_front: false,
            meets_goal: Some(true),
            recommended: false,
        }
    }

    /// Where each point lands on a real chart's axes (an SVG in memory).
    fn placed(points: &[FrontierPoint]) -> Vec<(f64, f64)> {
        let mut svg = String::new();
        let root = SVGBackend::with_string(&mut svg, (1200, 800)).into_drawing_area();
        let refs: Vec<&FrontierPoint> = points.iter().collect();
        let chart = draw_axes(&root, 6.0, 6.0).unwrap();
        let dodge = Dodge::new(&refs, &chart);
        refs.iter().map(|p| dodge.at(p)).collect()
    }

    #[test]
    fn a_point_alone_sits_on_its_whole_count_and_overlapping_ones_side_by_side() {
        let points = [
            point("token_bucket", 0, 3, 2.0),
            point("token_bucket", 0, 1, 1.25),
            point("leaky_bucket", 1, 1, 1.25),
            point("gcra", 5, 1, 1.26),
            point("token_bucket", 0, 1, 1.25), // another row, the same numbers
            point("fixed_window", 2, 1, 4.0),
        ];
        let at = placed(&points);
        assert_eq!(at[0], (3.0, 2.0), "alone: exactly on 3");
        assert_eq!(at[5], (1.0, 4.0), "far above the others: exactly on 1");
        let xs = [at[1].0, at[2].0, at[3].0];
        assert!(
            xs[0] < xs[1] && xs[1] < xs[2],
            "side by side in slot order: {xs:?}"
        );
        assert!(
            (xs[1] - 1.0).abs() < 1e-9,
            "the middle one of three on the count"
        );
        assert!(xs.iter().all(|x| (x - 1.0).abs() <= 0.45), "{xs:?}");
        assert_eq!(at[4], at[1], "same algorithm, same numbers: one spot");
    }

    fn frontier_svg(chart: &FrontierChart) -> String {
        super::super::register_fonts().unwrap();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (1200, 840)).into_drawing_area();
            draw_frontier(chart, &root).unwrap();
            root.present().unwrap();
        }
        svg
    }

    #[test]
    fn the_recommended_row_is_marked_and_named_in_the_legend() {
        let mut chart = FrontierChart {
            title: "t".to_string(),
            points: vec![point("token_bucket", 0, 1, 1.25), point("gcra", 5, 2, 1.0)],
            goal: Some("over_admission<=1.25".to_string()),
        };
        let plain = frontier_svg(&chart);
        chart.points[0].recommended = true;
        let marked = frontier_svg(&chart);
        let name =
            "recommended (least restrictive meeting the goal): token_bucket 400/10s burst 100";
        assert!(!plain.contains(name) && marked.contains(name));
        // Two more outlines: the diamond on the point and the one in the legend.
        let paths = |svg: &str| svg.matches("<polyline").count();
        assert_eq!(paths(&marked), paths(&plain) + 2);
    }
}
