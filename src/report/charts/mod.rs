//! PNG charts (plotters, bitmap backend, embedded Noto Sans): the per-algorithm
//! timeline, the trailing-window count against the limit, and the over-admission bars.
//!
//! Each chart is a pure function of a small input struct defined here; files are
//! written atomically (temporary name, then rename). This module must not compute
//! metrics, read system fonts, or panic on odd input: empty series, single points,
//! zero durations, NaN ratios and huge counts all render something sensible.

use std::iter;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use thiserror::Error;

use super::output::{OutputError, TempPath};
use super::summary::format_ratio;

/// Width of every chart, in pixels.
pub const CHART_WIDTH: u32 = 1200;
/// Height of the window-count chart, and the minimum height of the lane charts.
pub const CHART_HEIGHT: u32 = 700;
/// Above this many points in one timeline lane, points are binned into counts.
pub const MAX_TIMELINE_POINTS: usize = 20_000;
/// Number of bins used when a timeline lane is binned automatically.
pub const TIMELINE_BINS: usize = 400;
/// At most this many window boundaries are drawn; denser ones would be a grey smear.
pub const MAX_BOUNDARY_LINES: usize = 240;

const FONT: &str = "sans-serif";
const CAPTION_SIZE: u32 = 36;
const AXIS_TITLE_SIZE: u32 = 24;
const TICK_SIZE: u32 = 20;
const LEGEND_SIZE: u32 = 20;

const ALLOWED_GREEN: RGBColor = RGBColor(26, 150, 65);
const DENIED_RED: RGBColor = RGBColor(215, 48, 39);
const BOUNDARY_GREY: RGBColor = RGBColor(150, 150, 150);
const LANE_GREY: RGBColor = RGBColor(225, 225, 225);
const WITHIN_BLUE: RGBColor = RGBColor(0, 114, 178);
const OVER_RED: RGBColor = RGBColor(213, 94, 0);

/// A chart could not be produced.
#[derive(Debug, Error)]
pub enum ChartError {
    /// The embedded font could not be registered (a corrupt build, not user input).
    #[error("cannot load the embedded chart font (Noto Sans)")]
    Font,
    /// plotters failed while drawing or encoding.
    #[error("cannot draw chart {}: {message}", path.display())]
    Draw {
        /// The chart's final path (or `<memory>`).
        path: PathBuf,
        /// plotters' description of the failure.
        message: String,
    },
    /// Writing or renaming the file failed.
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// Registers the embedded Noto Sans as `sans-serif`, once per process. Rendering calls
/// this itself; call it early (e.g. at the top of a benchmark) if other code might
/// draw text with plotters first.
pub fn register_fonts() -> Result<(), ChartError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, ttf_noto_sans::REGULAR).is_ok()
    });
    if ok { Ok(()) } else { Err(ChartError::Font) }
}

// ---------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------

/// One decision on the timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimelinePoint {
    /// Seconds since the start of the run.
    pub time_s: f64,
    /// Admitted (green) or denied (red).
    pub allowed: bool,
}

/// Decisions counted over `[start_s, end_s)`, for runs too large to draw one by one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimelineBucket {
    /// Start of the bucket, seconds.
    pub start_s: f64,
    /// End of the bucket, seconds.
    pub end_s: f64,
    /// Admitted decisions in the bucket.
    pub allowed: u64,
    /// Denied decisions in the bucket.
    pub denied: u64,
}

/// What one timeline lane shows.
#[derive(Clone, Debug, PartialEq)]
pub enum TimelineMarks {
    /// Every decision as a tick (more than [`MAX_TIMELINE_POINTS`] are binned).
    Points(Vec<TimelinePoint>),
    /// Pre-counted buckets (bars whose height is the count); see [`TimelineBinner`].
    Buckets(Vec<TimelineBucket>),
}

/// One algorithm's lane.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineLane {
    /// The lane's label (the algorithm name).
    pub algorithm: String,
    /// The decisions.
    pub marks: TimelineMarks,
}

/// Input of [`render_timeline`]: one lane per algorithm, top to bottom in this order.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineChart {
    /// Caption, e.g. `"burst: decisions over time"`.
    pub title: String,
    /// Length of the x axis in seconds (the scenario's duration).
    pub duration_s: f64,
    /// Window length in seconds; boundaries are drawn at every multiple. `None`: none.
    pub window_s: Option<f64>,
    /// The lanes.
    pub lanes: Vec<TimelineLane>,
}

/// Counts decisions into fixed-width buckets as they stream by, so a timeline of a
/// huge run needs `O(bins)` memory instead of one entry per decision.
#[derive(Clone, Debug)]
pub struct TimelineBinner {
    duration_s: f64,
    counts: Vec<(u64, u64)>,
}

impl TimelineBinner {
    /// `bins` equal buckets over `[0, duration_s]` (at least one bucket; a
    /// non-positive or non-finite duration becomes 1 s).
    pub fn new(duration_s: f64, bins: usize) -> TimelineBinner {
        let duration_s = if duration_s.is_finite() && duration_s > 0.0 {
            duration_s
        } else {
            1.0
        };
        TimelineBinner {
            duration_s,
            counts: vec![(0, 0); bins.max(1)],
        }
    }

    /// Counts one decision; times outside the range land in the first or last bucket,
    /// NaN times are ignored.
    pub fn record(&mut self, time_s: f64, allowed: bool) {
        if time_s.is_nan() {
            return;
        }
        let n = self.counts.len();
        let index = ((time_s / self.duration_s) * n as f64).floor();
        let index = if index <= 0.0 {
            0
        } else {
            (index as usize).min(n - 1)
        };
        let slot = &mut self.counts[index];
        if allowed {
            slot.0 = slot.0.saturating_add(1);
        } else {
            slot.1 = slot.1.saturating_add(1);
        }
    }

    /// The buckets, empty ones included.
    pub fn into_buckets(self) -> Vec<TimelineBucket> {
        let n = self.counts.len() as f64;
        let width = self.duration_s / n;
        self.counts
            .into_iter()
            .enumerate()
            .map(|(i, (allowed, denied))| TimelineBucket {
                start_s: i as f64 * width,
                end_s: (i + 1) as f64 * width,
                allowed,
                denied,
            })
            .collect()
    }
}

/// One algorithm's trailing-window admitted count over time.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowCountSeries {
    /// The legend label (the algorithm name).
    pub algorithm: String,
    /// `(time_s, count)` at each change; the count holds until the next point and is
    /// 0 before the first. Need not be sorted; NaN times are skipped.
    pub points: Vec<(f64, u64)>,
}

/// Input of [`render_window_counts`].
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

/// Input of [`render_over_admission`]: one bar per `(algorithm, max_in_window / limit)`.
#[derive(Clone, Debug, PartialEq)]
pub struct OverAdmissionChart {
    /// Caption.
    pub title: String,
    /// The bars, top to bottom; NaN or infinite values are labelled `n/a`.
    pub bars: Vec<(String, f64)>,
}

// ---------------------------------------------------------------------------------
// Public renderers
// ---------------------------------------------------------------------------------

/// An RGB image rendered in memory (3 bytes per pixel, row-major).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RgbImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 3` bytes.
    pub pixels: Vec<u8>,
}

/// Pixel size of a lane chart (timeline, bars): taller when there are many lanes.
pub fn lane_chart_size(lanes: usize) -> (u32, u32) {
    let extra = lanes.saturating_sub(6).min(40) as u32;
    (CHART_WIDTH, CHART_HEIGHT + 70 * extra)
}

/// Writes the timeline PNG to `path` atomically.
pub fn render_timeline(input: &TimelineChart, path: &Path) -> Result<PathBuf, ChartError> {
    let size = lane_chart_size(input.lanes.len());
    render_png(path, size, |root| draw_timeline(input, root))
}

/// Writes the window-count PNG to `path` atomically.
pub fn render_window_counts(input: &WindowCountChart, path: &Path) -> Result<PathBuf, ChartError> {
    render_png(path, (CHART_WIDTH, CHART_HEIGHT), |root| {
        draw_window_counts(input, root)
    })
}

/// Writes the over-admission bar chart PNG to `path` atomically.
pub fn render_over_admission(
    input: &OverAdmissionChart,
    path: &Path,
) -> Result<PathBuf, ChartError> {
    let size = lane_chart_size(input.bars.len());
    render_png(path, size, |root| draw_over_admission(input, root))
}

/// Renders the timeline into memory (for tests and embedding).
pub fn render_timeline_rgb(input: &TimelineChart) -> Result<RgbImage, ChartError> {
    render_rgb(lane_chart_size(input.lanes.len()), |root| {
        draw_timeline(input, root)
    })
}

/// Renders the window-count chart into memory.
pub fn render_window_counts_rgb(input: &WindowCountChart) -> Result<RgbImage, ChartError> {
    render_rgb((CHART_WIDTH, CHART_HEIGHT), |root| {
        draw_window_counts(input, root)
    })
}

/// Renders the over-admission chart into memory.
pub fn render_over_admission_rgb(input: &OverAdmissionChart) -> Result<RgbImage, ChartError> {
    render_rgb(lane_chart_size(input.bars.len()), |root| {
        draw_over_admission(input, root)
    })
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn render_png<F>(path: &Path, size: (u32, u32), draw: F) -> Result<PathBuf, ChartError>
where
    F: FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> DrawResult<BitMapBackend<'static>>,
{
    register_fonts()?;
    let temp = TempPath::new(path)?;
    let draw_err = |e: &dyn std::fmt::Display| ChartError::Draw {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    {
        let root = BitMapBackend::new(temp.temp_path(), size).into_drawing_area();
        draw(&root).map_err(|e| draw_err(&e))?;
        root.present().map_err(|e| draw_err(&e))?;
    }
    Ok(temp.persist()?)
}

fn render_rgb<F>(size: (u32, u32), draw: F) -> Result<RgbImage, ChartError>
where
    F: FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> DrawResult<BitMapBackend<'static>>,
{
    register_fonts()?;
    let mut pixels = vec![0u8; size.0 as usize * size.1 as usize * 3];
    let draw_err = |e: &dyn std::fmt::Display| ChartError::Draw {
        path: PathBuf::from("<memory>"),
        message: e.to_string(),
    };
    {
        let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
        draw(&root).map_err(|e| draw_err(&e))?;
        root.present().map_err(|e| draw_err(&e))?;
    }
    Ok(RgbImage {
        width: size.0,
        height: size.1,
        pixels,
    })
}

// ---------------------------------------------------------------------------------
// Shared drawing helpers
// ---------------------------------------------------------------------------------

/// The colour of a known algorithm, stable across charts and runs (Okabe–Ito palette,
/// readable by colour-blind viewers); unknown names get the remaining colours in turn.
pub fn algorithm_color(name: &str, index: usize) -> RGBColor {
    const KNOWN: [(&str, RGBColor); 6] = [
        ("token_bucket", RGBColor(0, 114, 178)),
        ("leaky_bucket", RGBColor(86, 180, 233)),
        ("fixed_window", RGBColor(213, 94, 0)),
        ("sliding_window_log", RGBColor(0, 158, 115)),
        ("sliding_window_counter", RGBColor(204, 121, 167)),
        ("gcra", RGBColor(230, 159, 0)),
    ];
    const OTHERS: [RGBColor; 4] = [
        RGBColor(90, 90, 90),
        RGBColor(153, 102, 51),
        RGBColor(102, 51, 153),
        RGBColor(0, 102, 102),
    ];
    KNOWN
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, color)| *color)
        .unwrap_or(OTHERS[index % OTHERS.len()])
}

fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).color(&BLACK)
}

/// A sane x-axis length: the run's duration when it is valid (data past it is clipped),
/// else the data's extent, else 1 s.
fn axis_end(duration_s: f64, data_max: f64) -> f64 {
    if duration_s.is_finite() && duration_s > 0.0 {
        duration_s
    } else if data_max.is_finite() && data_max > 0.0 {
        data_max
    } else {
        1.0
    }
}

fn format_seconds(v: f64, span: f64) -> String {
    if span >= 20.0 {
        format!("{v:.0}")
    } else if span >= 2.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Window boundaries inside `(0, end)`, or none if too dense or invalid.
fn boundaries(window_s: Option<f64>, end: f64) -> Vec<f64> {
    match window_s {
        Some(w) if w.is_finite() && w > 0.0 && end / w <= MAX_BOUNDARY_LINES as f64 => {
            let count = (end / w).floor() as usize;
            (1..=count)
                .map(|k| k as f64 * w)
                .filter(|&x| x < end)
                .collect()
        }
        _ => Vec::new(),
    }
}

enum LegendMark {
    Line(RGBColor, u32),
    Dashed(RGBColor),
    Tick(RGBColor),
    Block(RGBColor),
}

/// Draws legend entries left to right from `(x, y)` (pixel coordinates, y = centre).
fn draw_legend_row<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (mut x, y): (i32, i32),
    entries: &[(String, LegendMark)],
) -> DrawResult<DB> {
    for (label, mark) in entries {
        draw_legend_mark(area, (x, y), mark)?;
        let style = font(LEGEND_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(label.clone(), (x + 40, y), style.clone()))?;
        let (w, _) = area.estimate_text_size(label, &style)?;
        x += 40 + w as i32 + 30;
    }
    Ok(())
}

fn draw_legend_mark<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (x, y): (i32, i32),
    mark: &LegendMark,
) -> DrawResult<DB> {
    match mark {
        LegendMark::Line(color, width) => area.draw(&PathElement::new(
            vec![(x, y), (x + 30, y)],
            color.stroke_width(*width),
        )),
        LegendMark::Dashed(color) => area.draw(&DashedPathElement::new(
            vec![(x, y), (x + 30, y)],
            6,
            4,
            color.stroke_width(2),
        )),
        LegendMark::Tick(color) => area.draw(&Rectangle::new(
            [(x + 12, y - 10), (x + 17, y + 10)],
            color.filled(),
        )),
        LegendMark::Block(color) => area.draw(&Rectangle::new(
            [(x + 4, y - 9), (x + 26, y + 9)],
            color.filled(),
        )),
    }
}

/// The message a chart with no algorithms shows instead of empty axes.
fn draw_nothing_to_show<DB: DrawingBackend>(body: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
    body.draw(&Text::new(
        "no algorithms to show",
        ((CHART_WIDTH / 2) as i32, 200),
        font(AXIS_TITLE_SIZE).pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    Ok(())
}

/// Pixel width for a left label area that fits `names` at tick size.
fn label_area_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    names: impl Iterator<Item = String>,
) -> Result<u32, DrawingAreaErrorKind<DB::ErrorType>> {
    let style = font(TICK_SIZE);
    let mut widest = 0;
    for name in names {
        widest = widest.max(area.estimate_text_size(&name, &style)?.0);
    }
    Ok((widest + 24).clamp(60, 420))
}

/// Lane `i` of `n` (top to bottom) occupies `y ∈ [n-1-i, n-i]`.
fn lane_base(i: usize, n: usize) -> f64 {
    (n - 1 - i) as f64
}

/// Writes each lane's name to the left of the plot, centred on its lane. Drawn on the
/// root area in pixels because plotters' tick labels cannot be placed at lane centres.
fn draw_lane_labels<DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
    root: &DrawingArea<DB, Shift>,
    chart: &ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    names: &[String],
) -> DrawResult<DB> {
    let n = names.len();
    for (i, name) in names.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(0.0, lane_base(i, n) + 0.5));
        root.draw(&Text::new(
            name.clone(),
            (px - 12, py),
            font(TICK_SIZE).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    Ok(())
}

fn display_name(name: &str) -> String {
    if name.is_empty() {
        "(unnamed)".to_string()
    } else if name.chars().count() > 32 {
        let short: String = name.chars().take(31).collect();
        format!("{short}…")
    } else {
        name.to_string()
    }
}

// ---------------------------------------------------------------------------------
// (a) Timeline
// ---------------------------------------------------------------------------------

/// Draws the timeline chart on any plotters backend.
pub fn draw_timeline<DB: DrawingBackend>(
    input: &TimelineChart,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let names: Vec<String> = input
        .lanes
        .iter()
        .map(|l| display_name(&l.algorithm))
        .collect();
    let n = names.len();

    let data_max = input
        .lanes
        .iter()
        .flat_map(|lane| match &lane.marks {
            TimelineMarks::Points(points) => points.iter().map(|p| p.time_s).collect::<Vec<_>>(),
            TimelineMarks::Buckets(buckets) => buckets.iter().map(|b| b.end_s).collect(),
        })
        .filter(|t| t.is_finite())
        .fold(0.0_f64, f64::max);
    let end = axis_end(input.duration_s, data_max);

    let (header, body) = root.split_vertically(110);
    header.draw(&Text::new(
        input.title.clone(),
        ((CHART_WIDTH / 2) as i32, 30),
        font(CAPTION_SIZE).pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    let mut legend = vec![
        ("allowed".to_string(), LegendMark::Tick(ALLOWED_GREEN)),
        ("denied".to_string(), LegendMark::Tick(DENIED_RED)),
    ];
    if !boundaries(input.window_s, end).is_empty() {
        legend.push((
            "window boundary".to_string(),
            LegendMark::Line(BOUNDARY_GREY, 1),
        ));
    }
    let binned_width = input.lanes.iter().find_map(|lane| match &lane.marks {
        TimelineMarks::Buckets(b) => b.first().map(|b| b.end_s - b.start_s),
        TimelineMarks::Points(p) if p.len() > MAX_TIMELINE_POINTS => {
            Some(end / TIMELINE_BINS as f64)
        }
        TimelineMarks::Points(_) => None,
    });
    let legend_x = if binned_width.is_some() { 120 } else { 320 };
    draw_legend_row(&header, (legend_x, 82), &legend)?;
    if let Some(width) = binned_width.filter(|w| w.is_finite() && *w > 0.0) {
        header.draw(&Text::new(
            format!(
                "bar height = decisions per {} s bin",
                format_seconds(width, width * 10.0)
            ),
            ((CHART_WIDTH - 40) as i32, 82),
            font(LEGEND_SIZE).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }

    if n == 0 {
        return draw_nothing_to_show(&body);
    }

    let label_width = label_area_width(&body, names.iter().cloned())?;
    let mut chart = ChartBuilder::on(&body)
        .margin_right(30)
        .margin_bottom(10)
        .x_label_area_size(70)
        .y_label_area_size(label_width)
        .build_cartesian_2d(0.0..end, 0.0..n as f64)?;
    let x_fmt = |v: &f64| format_seconds(*v, end);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_y_mesh()
        .x_desc("time (s)")
        .x_label_formatter(&x_fmt)
        .y_labels(0)
        .x_labels(12)
        .axis_desc_style(font(AXIS_TITLE_SIZE))
        .label_style(font(TICK_SIZE))
        .draw()?;
    draw_lane_labels(root, &chart, &names)?;

    // Lane backgrounds (alternating) and separators.
    for i in 0..n {
        let y = lane_base(i, n);
        if i % 2 == 1 {
            chart.draw_series(iter::once(Rectangle::new(
                [(0.0, y), (end, y + 1.0)],
                RGBColor(246, 246, 246).filled(),
            )))?;
        }
        if i > 0 {
            chart.draw_series(iter::once(PathElement::new(
                vec![(0.0, y + 1.0), (end, y + 1.0)],
                LANE_GREY.stroke_width(1),
            )))?;
        }
    }

    for x in boundaries(input.window_s, end) {
        chart.draw_series(iter::once(PathElement::new(
            vec![(x, 0.0), (x, n as f64)],
            BOUNDARY_GREY.stroke_width(1),
        )))?;
    }

    // Allowed marks in the upper half of a lane, denied in the lower half: position
    // as well as colour tells them apart.
    for (i, lane) in input.lanes.iter().enumerate() {
        let y = lane_base(i, n);
        let buckets = match &lane.marks {
            TimelineMarks::Points(points) if points.len() <= MAX_TIMELINE_POINTS => {
                let ticks = points.iter().filter(|p| p.time_s.is_finite()).map(|p| {
                    let (lo, hi, color) = if p.allowed {
                        (y + 0.54, y + 0.88, ALLOWED_GREEN)
                    } else {
                        (y + 0.12, y + 0.46, DENIED_RED)
                    };
                    let t = p.time_s.clamp(0.0, end);
                    PathElement::new(vec![(t, lo), (t, hi)], color.stroke_width(2))
                });
                chart.draw_series(ticks)?;
                continue;
            }
            TimelineMarks::Points(points) => {
                let mut binner = TimelineBinner::new(end, TIMELINE_BINS);
                for p in points {
                    binner.record(p.time_s, p.allowed);
                }
                binner.into_buckets()
            }
            TimelineMarks::Buckets(buckets) => buckets.clone(),
        };
        draw_lane_buckets(&mut chart, &buckets, y, end)?;
    }
    Ok(())
}

fn draw_lane_buckets<DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    buckets: &[TimelineBucket],
    y: f64,
    end: f64,
) -> DrawResult<DB> {
    let peak = buckets
        .iter()
        .map(|b| b.allowed.max(b.denied))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let valid = |b: &&TimelineBucket| b.start_s.is_finite() && b.end_s.is_finite();
    let bars = buckets.iter().filter(valid).flat_map(|b| {
        let x0 = b.start_s.clamp(0.0, end);
        let x1 = b.end_s.clamp(0.0, end).max(x0);
        let up = 0.36 * b.allowed as f64 / peak;
        let down = 0.36 * b.denied as f64 / peak;
        let mut out = Vec::with_capacity(2);
        if b.allowed > 0 {
            out.push(Rectangle::new(
                [(x0, y + 0.52), (x1, y + 0.52 + up)],
                ALLOWED_GREEN.filled(),
            ));
        }
        if b.denied > 0 {
            out.push(Rectangle::new(
                [(x0, y + 0.48 - down), (x1, y + 0.48)],
                DENIED_RED.filled(),
            ));
        }
        out
    });
    chart.draw_series(bars)?;
    Ok(())
}

// ---------------------------------------------------------------------------------
// (b) Trailing-window counts
// ---------------------------------------------------------------------------------

/// Keeps at most the first, the highest, the lowest and the last point of each of
/// `columns` time slices, so spikes survive and drawing stays bounded.
fn decimate(points: &[(f64, u64)], start: f64, end: f64, columns: usize) -> Vec<(f64, u64)> {
    if points.len() <= columns * 4 {
        return points.to_vec();
    }
    let span = (end - start).max(f64::MIN_POSITIVE);
    let mut out = Vec::with_capacity(columns * 4);
    let mut i = 0;
    while i < points.len() {
        let column = (((points[i].0 - start) / span) * columns as f64).floor();
        let mut j = i;
        while j < points.len()
            && (((points[j].0 - start) / span) * columns as f64).floor() == column
        {
            j += 1;
        }
        let slice = &points[i..j];
        let mut keep = vec![0, slice.len() - 1];
        if let Some((k, _)) = slice.iter().enumerate().max_by_key(|(_, p)| p.1) {
            keep.push(k);
        }
        if let Some((k, _)) = slice.iter().enumerate().min_by_key(|(_, p)| p.1) {
            keep.push(k);
        }
        keep.sort_unstable();
        keep.dedup();
        out.extend(keep.into_iter().map(|k| slice[k]));
        i = j;
    }
    out
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

/// Draws the window-count chart on any plotters backend.
pub fn draw_window_counts<DB: DrawingBackend>(
    input: &WindowCountChart,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let mut series: Vec<(String, Vec<(f64, u64)>)> = input
        .series
        .iter()
        .map(|s| {
            let mut points: Vec<(f64, u64)> = s
                .points
                .iter()
                .copied()
                .filter(|p| p.0.is_finite())
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            (display_name(&s.algorithm), points)
        })
        .collect();
    let data_max = series
        .iter()
        .filter_map(|(_, p)| p.last().map(|p| p.0))
        .fold(0.0_f64, f64::max);
    let end = axis_end(input.duration_s, data_max);
    for (_, points) in &mut series {
        *points = decimate(points, 0.0, end, 900);
    }
    // Every panel shares one y axis, tall enough for the highest count of any.
    let highest = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|&(_, c)| c))
        .max();
    let top_count = highest.unwrap_or(0).max(input.limit).max(1) as f64;
    let y_end = (top_count * 1.25).ceil().max(top_count + 1.0);
    let limit = input.limit as f64;

    let (header, body) = root.split_vertically(70);
    header.draw(&Text::new(
        input.title.clone(),
        ((CHART_WIDTH / 2) as i32, 35),
        font(CAPTION_SIZE).pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    if series.is_empty() {
        return draw_nothing_to_show(&body);
    }

    // Small multiples: one panel per algorithm, all on the same axes, so each line is
    // read on its own (six overlaid step lines hide each other) and panels compare at
    // a glance. Only the bottom panel carries the time axis.
    let axis = 60;
    let (_, body_height) = body.dim_in_pixel();
    let panel_height = (body_height.saturating_sub(axis) / series.len() as u32).max(1);
    let breaks: Vec<i32> = (1..series.len())
        .map(|i| (panel_height * i as u32) as i32)
        .collect();
    let panels = body.split_by_breakpoints([] as [i32; 0], breaks);
    let last = series.len() - 1;
    for (i, ((name, points), panel)) in series.iter().zip(&panels).enumerate() {
        let color = algorithm_color(&input.series[i].algorithm, i);
        let bottom = i == last;
        let mut chart = ChartBuilder::on(panel)
            .margin_right(30)
            .margin_top(26)
            .x_label_area_size(if bottom { axis } else { 0 })
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..end, 0.0..y_end)?;
        let x_fmt = |v: &f64| format_seconds(*v, end);
        let y_fmt = |v: &f64| format!("{v:.0}");
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_max_light_lines(0)
            .bold_line_style(RGBColor(230, 230, 230))
            .x_desc(if bottom { "time (s)" } else { "" })
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .x_labels(if bottom { 12 } else { 0 })
            .y_labels(3)
            .axis_desc_style(font(AXIS_TITLE_SIZE))
            .label_style(font(TICK_SIZE))
            .draw()?;
        // Everything above the limit is over-admission: tinted, so a spike into it
        // reads as a violation at a glance.
        chart.draw_series(iter::once(Rectangle::new(
            [(0.0, limit), (end, y_end)],
            RGBColor(254, 242, 237).filled(),
        )))?;
        for x in boundaries(input.window_s, end) {
            chart.draw_series(iter::once(PathElement::new(
                vec![(x, 0.0), (x, y_end)],
                RGBColor(215, 215, 215).stroke_width(1),
            )))?;
        }
        chart.draw_series(iter::once(DashedPathElement::new(
            vec![(0.0, limit), (end, limit)],
            8,
            5,
            BLACK.stroke_width(1),
        )))?;
        chart.draw_series(iter::once(PathElement::new(
            step_path(points, end),
            color.stroke_width(2),
        )))?;
        // The panel's caption: its name and its peak against the limit.
        let peak = points
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.total_cmp(&a.0)))
            .copied();
        let verdict = match peak {
            Some((t, count)) if count > input.limit && input.limit > 0 => {
                chart.draw_series(iter::once(
                    EmptyElement::at((t, count as f64))
                        + Circle::new((0, 0), 5, BLACK.stroke_width(2)),
                ))?;
                format!(
                    "peaks at {count} = {} the limit of {}",
                    format_ratio(count as f64 / limit),
                    input.limit
                )
            }
            Some((_, count)) => format!("at most {count}, within the limit of {}", input.limit),
            None => "nothing admitted".to_string(),
        };
        panel.draw(&Text::new(
            format!("{name}: {verdict}"),
            (80, 4),
            font(TICK_SIZE).pos(Pos::new(HPos::Left, VPos::Top)),
        ))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// (c) Over-admission bars
// ---------------------------------------------------------------------------------

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
    header.draw(&Text::new(
        input.title.clone(),
        ((CHART_WIDTH / 2) as i32, 30),
        font(CAPTION_SIZE).pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    draw_legend_row(
        &header,
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
    )?;
    if n == 0 {
        return draw_nothing_to_show(&body);
    }

    let label_width = label_area_width(&body, names.iter().cloned())?;
    let y_top = n as f64 + 0.5;
    let mut chart = ChartBuilder::on(&body)
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
    draw_lane_labels(root, &chart, &names)?;

    for (i, (_, value)) in input.bars.iter().enumerate() {
        let y = lane_base(i, n);
        let label_style = font(TICK_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
        if value.is_finite() && *value >= 0.0 {
            let color = if *value > 1.0 { OVER_RED } else { WITHIN_BLUE };
            let v = value.min(x_end);
            chart.draw_series(iter::once(Rectangle::new(
                [(0.0, y + 0.2), (v, y + 0.8)],
                color.filled(),
            )))?;
            chart.draw_series(iter::once(
                EmptyElement::at((v, y + 0.5))
                    + Text::new(format_ratio(*value), (14, 0), label_style),
            ))?;
        } else {
            chart.draw_series(iter::once(
                EmptyElement::at((0.0, y + 0.5))
                    + Text::new("n/a (no limit or no data)", (14, 0), label_style),
            ))?;
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn decimation_keeps_the_spike() {
        let mut points: Vec<(f64, u64)> = (0..100_000).map(|i| (i as f64 / 1000.0, 5)).collect();
        points[54_321].1 = 10;
        let kept = decimate(&points, 0.0, 100.0, 900);
        assert!(kept.len() <= 900 * 4 + 4, "{}", kept.len());
        assert!(kept.contains(&(54.321, 10)));
    }

    #[test]
    fn boundaries_are_bounded_and_skip_invalid_windows() {
        assert_eq!(
            boundaries(Some(10.0), 60.0),
            vec![10.0, 20.0, 30.0, 40.0, 50.0]
        );
        assert!(boundaries(Some(0.0), 60.0).is_empty());
        assert!(boundaries(Some(f64::NAN), 60.0).is_empty());
        assert!(boundaries(Some(0.001), 3600.0).is_empty());
        assert!(boundaries(None, 60.0).is_empty());
    }

    #[test]
    fn binner_counts_every_decision_once() {
        let mut b = TimelineBinner::new(10.0, 5);
        for t in [0.0, 1.9, 2.0, 9.99, 10.0, 50.0, -1.0, f64::NAN] {
            b.record(t, t < 5.0);
        }
        let buckets = b.into_buckets();
        assert_eq!(buckets.len(), 5);
        let total: u64 = buckets.iter().map(|b| b.allowed + b.denied).sum();
        assert_eq!(total, 7);
        assert_eq!((buckets[0].allowed, buckets[0].denied), (3, 0));
        assert_eq!(buckets[4].denied, 3);
    }
}
