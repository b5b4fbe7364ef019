//! The boundary zoom: one client's decisions on either side of one window edge, one
//! panel per algorithm, every request its own mark (green dot admitted, red cross
//! denied) at the height of the client's trailing-window count after it.
//!
//! The x axis is the order of the requests, not time: a boundary burst puts ten
//! requests within a nanosecond, which no time axis can pull apart, so each request
//! gets its own column and the time axis becomes labels (exact offsets from the edge,
//! one per distinct instant). It draws the marks it is given and computes no metric.

use std::iter;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{
    AXIS_TITLE_SIZE, LegendMark, TICK_SIZE, display_name, draw_caption, draw_legend_row,
    draw_nothing_to_show, fitted_font, font,
};
use super::palette::{
    ALLOWED_GREEN, BOUNDARY_GREY, COUNTER_BLUE, DENIED_RED, OVER_LIMIT_TINT, PANEL_GRID,
};
use super::{CHART_HEIGHT, CHART_WIDTH, DrawResult};
use crate::report::summary::format_ratio;

/// One decision near the edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoomMark {
    /// Its instant minus the edge's, in exact nanoseconds (negative: before the edge).
    pub offset_ns: i128,
    /// Admitted (green dot) or denied (red cross).
    pub allowed: bool,
    /// The client's admitted count in the trailing window just after this decision.
    pub count: u64,
    /// Under a `[deployment]`, the server that decided it (drawn as a small number
    /// under the mark); `None` without one.
    pub node: Option<u32>,
}

/// One algorithm's decisions, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoomLane {
    /// The panel's label (the algorithm name).
    pub algorithm: String,
    /// The marks, left to right.
    pub marks: Vec<ZoomMark>,
    /// What the algorithm itself counts after each mark, when it keeps a calendar
    /// counter (the fixed window: restarting at 0 at each boundary); drawn as a step
    /// line beside the true trailing count. `None`: not drawn.
    pub counter: Option<Vec<u64>>,
    /// The run's figure for this algorithm (summary.csv's `max_in_window`), which the
    /// panel's caption prints; `None`: the caption speaks only of the marks shown.
    pub peak: Option<LanePeak>,
}

/// An algorithm's most admitted in one window over the whole run, as the summary has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LanePeak {
    /// `max_in_window`.
    pub count: u64,
    /// The client that reached it (summary.csv's `worst_key`), if known.
    pub key: Option<String>,
    /// When the followed client's trailing count first reached it (window_counts.csv),
    /// in nanoseconds of simulated time; `None` if that series never does.
    pub at_ns: Option<u64>,
}

/// Input of [`render_zoom`](super::render_zoom).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoomChart {
    /// Caption.
    pub title: String,
    /// The x axis's description (which client, which edge).
    pub x_desc: String,
    /// The rule's `max_requests`: the dashed line and the verdicts.
    pub limit: u64,
    /// The legend entry of the lanes' [`ZoomLane::counter`] lines (`None`: none drawn).
    pub counter_legend: Option<String>,
    /// One panel per algorithm, top to bottom.
    pub lanes: Vec<ZoomLane>,
}

type PanelChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

const HEADER: u32 = 110;
const PANEL: u32 = 130;
const FOOTER: u32 = 90;
const MARK_SIZE: i32 = 6;

/// Extra height of a panel that carries its own time labels.
const PANEL_LABELS: u32 = 40;

/// Pixel size of the zoom chart for `input`: one panel per lane, taller when each
/// panel needs its own time labels.
pub fn zoom_chart_size(input: &ZoomChart) -> (u32, u32) {
    let panel = PANEL
        + if shared_times(&input.lanes) {
            0
        } else {
            PANEL_LABELS
        };
    let height = HEADER + panel * input.lanes.len().max(1) as u32 + FOOTER;
    (CHART_WIDTH, height.max(CHART_HEIGHT / 2))
}

/// True when every lane shows the same instants (open clients: every algorithm sees
/// the same requests), so one row of time labels under the last panel serves all.
/// With retry clients the streams differ and each panel labels its own.
fn shared_times(lanes: &[ZoomLane]) -> bool {
    let offsets = |l: &ZoomLane| l.marks.iter().map(|m| m.offset_ns).collect::<Vec<_>>();
    lanes.windows(2).all(|w| offsets(&w[0]) == offsets(&w[1]))
}

/// Draws the boundary zoom on any plotters backend.
pub fn draw_zoom<DB: DrawingBackend>(
    input: &ZoomChart,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (header, rest) = root.split_vertically(HEADER);
    draw_caption(&header, &input.title, 30)?;
    let mut legend = vec![
        ("admitted".to_string(), LegendMark::Dot(ALLOWED_GREEN)),
        ("denied".to_string(), LegendMark::Cross(DENIED_RED)),
        ("limit".to_string(), LegendMark::Dashed(BLACK)),
        (
            "window boundary".to_string(),
            LegendMark::Line(BOUNDARY_GREY, 2),
        ),
    ];
    if let Some(text) = &input.counter_legend {
        legend.push((text.clone(), LegendMark::Line(COUNTER_BLUE, 2)));
    }
    let legend_x = if legend.len() > 4 { 40 } else { 230 };
    draw_legend_row(&header, (legend_x, 82), &legend)?;
    let columns = input.lanes.iter().map(|l| l.marks.len()).max().unwrap_or(0);
    if input.lanes.is_empty() || columns == 0 {
        return draw_nothing_to_show(&rest);
    }
    let (_, rest_height) = rest.dim_in_pixel();
    let (body, footer) = rest.split_vertically(rest_height.saturating_sub(FOOTER));
    let y_end = y_axis_end(&input.lanes, input.limit);
    let n = input.lanes.len();
    let shared = shared_times(&input.lanes);
    let height = PANEL + if shared { 0 } else { PANEL_LABELS };
    let breaks: Vec<i32> = (1..n).map(|i| (height * i as u32) as i32).collect();
    let panels = body.split_by_breakpoints([] as [i32; 0], breaks);
    for (i, (lane, panel)) in input.lanes.iter().zip(&panels).enumerate() {
        let below = if shared { 8 } else { 8 + PANEL_LABELS };
        let mut chart = draw_panel_axes(panel, columns, y_end, below)?;
        draw_panel_background(&mut chart, lane, columns, y_end, input.limit)?;
        if let Some(counter) = &lane.counter {
            draw_counter(&mut chart, &lane.marks, counter)?;
        }
        draw_marks(root, &mut chart, &lane.marks)?;
        let caption = zoom_panel_label(lane, input.limit);
        let style = fitted_font(panel, &caption, TICK_SIZE, CHART_WIDTH - 90)?;
        panel.draw(&Text::new(
            caption,
            (80, 2),
            style.pos(Pos::new(HPos::Left, VPos::Top)),
        ))?;
        if !shared || i == n - 1 {
            draw_time_labels(root, &chart, &lane.marks)?;
        }
    }
    footer.draw(&Text::new(
        input.x_desc.clone(),
        ((CHART_WIDTH / 2) as i32, 62),
        font(AXIS_TITLE_SIZE).pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    Ok(())
}

/// One shared count axis, tall enough for every count and the limit, with headroom
/// for the count labels above the marks.
fn y_axis_end(lanes: &[ZoomLane], limit: u64) -> f64 {
    let highest = lanes.iter().flat_map(|l| l.marks.iter().map(|m| m.count));
    let top = highest.max().unwrap_or(0).max(limit).max(1) as f64;
    (top * 1.3).ceil().max(top + 2.0)
}

fn draw_panel_axes<'a, DB: DrawingBackend>(
    panel: &'a DrawingArea<DB, Shift>,
    columns: usize,
    y_end: f64,
    below: u32,
) -> Result<PanelChart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut chart = ChartBuilder::on(panel)
        .margin_right(30)
        .margin_top(34)
        .margin_bottom(below)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.6..columns as f64 - 0.4, 0.0..y_end)?;
    let y_fmt = |v: &f64| format!("{v:.0}");
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_max_light_lines(0)
        .bold_line_style(PANEL_GRID)
        .y_label_formatter(&y_fmt)
        .x_labels(0)
        .y_labels(3)
        // The count each mark stands at: the client's admitted count in the trailing
        // window just after that request.
        .y_desc("in window")
        .axis_desc_style(font(AXIS_TITLE_SIZE))
        .label_style(font(TICK_SIZE))
        .draw()?;
    Ok(chart)
}

/// The tint above the limit, the dashed limit and the edge between the last request
/// before it and the first at or after it.
fn draw_panel_background<DB: DrawingBackend>(
    chart: &mut PanelChart<'_, DB>,
    lane: &ZoomLane,
    columns: usize,
    y_end: f64,
    limit: u64,
) -> DrawResult<DB> {
    let (x0, x1, limit) = (-0.6, columns as f64 - 0.4, limit as f64);
    chart.draw_series(iter::once(Rectangle::new(
        [(x0, limit), (x1, y_end)],
        OVER_LIMIT_TINT.filled(),
    )))?;
    chart.draw_series(iter::once(DashedPathElement::new(
        vec![(x0, limit), (x1, limit)],
        8,
        5,
        BLACK.stroke_width(1),
    )))?;
    let edge = lane.marks.iter().position(|m| m.offset_ns >= 0);
    let edge = edge.unwrap_or(lane.marks.len()) as f64 - 0.5;
    chart.draw_series(iter::once(PathElement::new(
        vec![(edge, 0.0), (edge, y_end)],
        BOUNDARY_GREY.stroke_width(2),
    )))?;
    Ok(())
}

/// Each decision at its column and count; admitted ones carry the count as a label
/// (every k-th when the columns are too narrow for all, and always the highest).
fn draw_marks<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &mut PanelChart<'_, DB>,
    marks: &[ZoomMark],
) -> DrawResult<DB> {
    let label = font(TICK_SIZE - 4).pos(Pos::new(HPos::Center, VPos::Bottom));
    let widest = marks.iter().map(|m| m.count).max().unwrap_or(0);
    let (text_w, _) = root.estimate_text_size(&widest.to_string(), &label)?;
    let column = (chart.backend_coord(&(1.0, 0.0)).0 - chart.backend_coord(&(0.0, 0.0)).0).max(1);
    let every = ((text_w as i32 + 4 + column - 1) / column).max(1) as usize;
    // The highest count is always labelled: on its last admission, or on the first
    // denial standing at it when no admission reaches it here.
    let top = marks
        .iter()
        .rposition(|m| m.allowed && m.count == widest)
        .or_else(|| marks.iter().position(|m| m.count == widest));
    for (i, m) in marks.iter().enumerate() {
        let at = (i as f64, m.count as f64);
        if !m.allowed && Some(i) == top {
            let text = Text::new(m.count.to_string(), (0, -MARK_SIZE - 2), label.clone());
            chart.draw_series(iter::once(EmptyElement::at(at) + text))?;
        }
        if m.allowed {
            let labelled =
                Some(i) == top || (i % every == 0 && top.is_none_or(|t| t < i || t - i >= every));
            let text = if labelled {
                m.count.to_string()
            } else {
                String::new()
            };
            chart.draw_series(iter::once(
                EmptyElement::at(at)
                    + Circle::new((0, 0), MARK_SIZE, ALLOWED_GREEN.filled())
                    + Text::new(text, (0, -MARK_SIZE - 2), label.clone()),
            ))?;
        } else {
            let s = MARK_SIZE;
            let style = DENIED_RED.stroke_width(3);
            chart.draw_series(iter::once(
                EmptyElement::at(at)
                    + PathElement::new(vec![(-s, -s), (s, s)], style)
                    + PathElement::new(vec![(-s, s), (s, -s)], style),
            ))?;
        }
        if let Some(node) = m.node {
            let server = font(TICK_SIZE - 6)
                .color(&NODE_GREY)
                .pos(Pos::new(HPos::Center, VPos::Top));
            let text = Text::new(node.to_string(), (0, MARK_SIZE + 2), server);
            chart.draw_series(iter::once(EmptyElement::at(at) + text))?;
        }
    }
    Ok(())
}

/// The server numbers under a deployment's marks.
const NODE_GREY: RGBColor = RGBColor(90, 90, 90);

/// The algorithm's own counter as a step line: each value holds until the next
/// decision, and it drops to 0 at the boundary, where the fixed window starts a new
/// window (drawn under the marks, so where it equals the true count the marks cover it).
fn draw_counter<DB: DrawingBackend>(
    chart: &mut PanelChart<'_, DB>,
    marks: &[ZoomMark],
    counter: &[u64],
) -> DrawResult<DB> {
    let mut path: Vec<(f64, f64)> = Vec::with_capacity(marks.len() * 2 + 2);
    let mut current: Option<f64> = None;
    for (i, (m, &c)) in marks.iter().zip(counter).enumerate() {
        let x = i as f64;
        let first_after = m.offset_ns >= 0 && i > 0 && marks[i - 1].offset_ns < 0;
        if first_after && let Some(before) = current {
            path.push((x - 0.5, before));
            path.push((x - 0.5, 0.0));
            current = Some(0.0);
        }
        if let Some(previous) = current {
            path.push((x, previous));
        }
        path.push((x, c as f64));
        current = Some(c as f64);
    }
    let last = path.last().copied();
    chart.draw_series(iter::once(PathElement::new(
        path,
        COUNTER_BLUE.stroke_width(2),
    )))?;
    // Its last value, named under the line's end.
    if let Some((x, y)) = last {
        let style = font(TICK_SIZE - 4)
            .color(&COUNTER_BLUE)
            .pos(Pos::new(HPos::Right, VPos::Top));
        chart.draw_series(iter::once(
            EmptyElement::at((x, y)) + Text::new(format!("counter {}", y as u64), (4, 6), style),
        ))?;
    }
    Ok(())
}

/// Under the bottom panel, the time of each distinct instant, centred under its run of
/// requests with a bracket across them, skipping labels that would overlap.
fn draw_time_labels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &PanelChart<'_, DB>,
    marks: &[ZoomMark],
) -> DrawResult<DB> {
    let style = font(TICK_SIZE).pos(Pos::new(HPos::Center, VPos::Top));
    let mut last_right = i32::MIN;
    let mut start = 0;
    while start < marks.len() {
        let offset = marks[start].offset_ns;
        let end = start
            + marks[start..]
                .iter()
                .take_while(|m| m.offset_ns == offset)
                .count();
        let (x0, y) = chart.backend_coord(&(start as f64, 0.0));
        let (x1, _) = chart.backend_coord(&((end - 1) as f64, 0.0));
        start = end;
        let text = format_offset_short(offset);
        let (w, _) = root.estimate_text_size(&text, &style)?;
        // Kept inside the image: a label at either end is moved in, not cut.
        let half = w as i32 / 2;
        let centre = ((x0 + x1) / 2).clamp(half + 2, CHART_WIDTH as i32 - half - 2);
        if centre - (w as i32) / 2 < last_right + 12 {
            continue;
        }
        let bracket = vec![
            (x0 - 4, y + 4),
            (x0 - 4, y + 9),
            (x1 + 4, y + 9),
            (x1 + 4, y + 4),
        ];
        root.draw(&PathElement::new(bracket, BLACK))?;
        root.draw(&Text::new(text, (centre, y + 14), style.clone()))?;
        last_right = centre + w as i32 / 2;
    }
    Ok(())
}

/// The panel's caption: what it shows (admitted and denied here) and the run's figure
/// for the algorithm, the summary's `max_in_window` (with its ratio to the limit), and
/// whether the panel reaches it or, if not, when it was reached.
pub fn zoom_panel_label(lane: &ZoomLane, limit: u64) -> String {
    let marks = &lane.marks;
    let high = marks.iter().map(|m| m.count).max().unwrap_or(0);
    let admitted = marks.iter().filter(|m| m.allowed).count();
    let denied = marks.len() - admitted;
    let name = display_name(&lane.algorithm);
    let here = format!("here {admitted} admitted, {denied} denied");
    let Some(peak) = &lane.peak else {
        return format!("{name}: {here}; {}", verdict(high, limit));
    };
    let most = verdict(peak.count, limit);
    if high == peak.count {
        return format!("{name}: {here}; its most: {most}, reached here");
    }
    let who = peak
        .key
        .as_deref()
        .map(|k| format!(", by {}", display_name(k)))
        .unwrap_or_default();
    let when = peak.at_ns.map_or_else(String::new, |ns| {
        // To the millisecond: window_counts.csv has the exact instant.
        let ms = (u128::from(ns) + 500_000) / 1_000_000;
        format!(" at {}.{:03} s", ms / 1_000, ms % 1_000)
    });
    format!("{name}: {here}, at most {high}; its most: {most}{who}{when}")
}

/// `N in one window = R× the limit`, or that it stayed within.
fn verdict(high: u64, limit: u64) -> String {
    if high > limit && limit > 0 {
        format!(
            "{high} in one window = {} the limit",
            format_ratio(high as f64 / limit as f64)
        )
    } else {
        format!("{high} in one window, within the limit")
    }
}

/// An exact offset from the edge in the largest unit it reaches, every digit kept:
/// `−1 ns`, `0`, `+250 ms`, `−9.999999999 s`.
pub fn format_offset(ns: i128) -> String {
    if ns == 0 {
        return "0".to_string();
    }
    let sign = if ns < 0 { "−" } else { "+" };
    let abs = ns.unsigned_abs();
    let (scale, unit, digits) = match abs {
        a if a < 1_000 => (1, "ns", 0),
        a if a < 1_000_000 => (1_000, "µs", 3),
        a if a < 1_000_000_000 => (1_000_000, "ms", 6),
        _ => (1_000_000_000, "s", 9),
    };
    let (whole, rest) = (abs / scale, abs % scale);
    if rest == 0 {
        return format!("{sign}{whole} {unit}");
    }
    let frac = format!("{rest:0digits$}");
    format!("{sign}{whole}.{} {unit}", frac.trim_end_matches('0'))
}

/// An offset from the edge as a tick label: exact below a microsecond (`−1 ns`), else
/// four significant figures in the largest unit it reaches (`−243.6 ms`, `+25.64 ms`,
/// `+1.5 µs`), rounded half up with integers. The exact times are in `decisions.csv`.
pub fn format_offset_short(ns: i128) -> String {
    if ns == 0 {
        return "0".to_string();
    }
    let sign = if ns < 0 { "−" } else { "+" };
    let abs = ns.unsigned_abs();
    if abs < 1_000 {
        return format!("{sign}{abs} ns");
    }
    const UNITS: [(u128, &str); 3] = [(1_000, "µs"), (1_000_000, "ms"), (1_000_000_000, "s")];
    let first = UNITS
        .iter()
        .rposition(|&(scale, _)| abs >= scale)
        .unwrap_or(0);
    for &(scale, unit) in &UNITS[first..] {
        let whole_digits = (abs / scale).max(1).ilog10() + 1;
        let decimals = 4u32.saturating_sub(whole_digits);
        let step = (scale / 10u128.pow(decimals)).max(1);
        let rounded = (abs + step / 2) / step;
        let (whole, frac) = (
            rounded / 10u128.pow(decimals),
            rounded % 10u128.pow(decimals),
        );
        // 999.96 ms rounds to 1000.0 ms: say 1 s instead (the next unit's pass).
        if whole >= 1_000 && unit != "s" {
            continue;
        }
        if decimals == 0 || frac == 0 {
            return format!("{sign}{whole} {unit}");
        }
        let frac = format!("{frac:0width$}", width = decimals as usize);
        return format!("{sign}{whole}.{} {unit}", frac.trim_end_matches('0'));
    }
    format!("{sign}{abs} ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_offsets_keep_four_significant_figures() {
        let cases = [
            (0, "0"),
            (-1, "−1 ns"),
            (999, "+999 ns"),
            (1_500, "+1.5 µs"),
            (-243_589_745, "−243.6 ms"),
            (25_641_025, "+25.64 ms"),
            (217_948_717, "+217.9 ms"),
            (-250_000_000, "−250 ms"),
            (999_960_000, "+1 s"),
            (999_940_000, "+999.9 ms"),
            (-9_999_999_999, "−10 s"),
            (-4_380_768_413, "−4.381 s"),
            (75_550_554, "+75.55 ms"),
            (12_345_678_901_234, "+12346 s"),
            (1_000, "+1 µs"),
        ];
        for (ns, text) in cases {
            assert_eq!(format_offset_short(ns), text, "{ns}");
        }
    }

    #[test]
    fn offsets_are_exact_in_a_short_unit() {
        let cases = [
            (0, "0"),
            (-1, "−1 ns"),
            (999, "+999 ns"),
            (1_500, "+1.5 µs"),
            (-250_000_000, "−250 ms"),
            (-9_999_999_999, "−9.999999999 s"),
            (1_234_000_000, "+1.234 s"),
        ];
        for (ns, text) in cases {
            assert_eq!(format_offset(ns), text, "{ns}");
        }
    }

    #[test]
    fn a_panel_says_how_far_over_the_limit_it_went() {
        let marks: Vec<ZoomMark> = (1..=10)
            .map(|c| ZoomMark {
                offset_ns: if c <= 5 { -1 } else { 0 },
                allowed: true,
                count: c,
                node: None,
            })
            .collect();
        let mut lane = ZoomLane {
            algorithm: "fixed_window".into(),
            marks,
            counter: None,
            peak: None,
        };
        assert_eq!(
            zoom_panel_label(&lane, 5),
            "fixed_window: here 10 admitted, 0 denied; 10 in one window = 2.00× the limit"
        );
        lane.peak = Some(LanePeak {
            count: 10,
            key: Some("client-0".into()),
            at_ns: Some(10_000_000_000),
        });
        assert_eq!(
            zoom_panel_label(&lane, 5),
            "fixed_window: here 10 admitted, 0 denied; its most: 10 in one window = 2.00× \
             the limit, reached here"
        );
        lane.peak = Some(LanePeak {
            count: 11,
            key: Some("client-2".into()),
            at_ns: Some(20_500_000_001),
        });
        assert_eq!(
            zoom_panel_label(&lane, 5),
            "fixed_window: here 10 admitted, 0 denied, at most 10; its most: 11 in one window \
             = 2.20× the limit, by client-2 at 20.500 s"
        );
    }
}
