//! The timeline chart: one lane per algorithm, admitted decisions above the lane's
//! middle in green, denied below in red, as ticks or as pre-counted bars.
//!
//! It draws exactly the marks it is given: it never bins or drops points itself (the
//! simulator's `Timeline` is the one place a run's decisions are bucketed; see
//! [`super`]). It must not compute metrics.

use std::iter;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::CHART_WIDTH;
use super::DrawResult;
use super::frame::{
    AXIS_TITLE_SIZE, LEGEND_SIZE, LegendMark, TICK_SIZE, axis_end, boundaries, display_name,
    draw_caption, draw_lane_labels, draw_legend_row, draw_nothing_to_show, font, format_seconds,
    label_area_width, lane_base,
};
use super::palette::{ALLOWED_GREEN, BOUNDARY_GREY, DENIED_RED, LANE_GREY, LANE_SHADE};

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
    /// Every decision as a tick, all of them: the chart does not bin points. Past a
    /// few thousand per lane the ticks merge into a solid band that shows when there
    /// were decisions but not how many, so a caller with that many counts them first
    /// (the simulator's `Timeline`, or [`TimelineBinner`]) and passes
    /// [`TimelineMarks::Buckets`], as `ratesim run` does above 5,000 decisions.
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

/// Input of [`render_timeline`](super::render_timeline): one lane per algorithm, top to
/// bottom in this order.
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
/// huge stream of decisions needs `O(bins)` memory instead of one entry per decision.
///
/// A tool for callers that hold raw decisions in seconds (tests, embedders); the chart
/// never applies it on its own, and `ratesim run` does not use it (its decisions are
/// already bucketed by the simulator).
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

type LaneChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

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
    let end = axis_end(input.duration_s, data_end(&input.lanes));

    let (header, body) = root.split_vertically(110);
    draw_header(input, &header, end)?;
    if names.is_empty() {
        return draw_nothing_to_show(&body);
    }
    let peak = bucket_peak(&input.lanes);
    let mut chart = draw_axes(root, &body, &names, end, peak.is_some())?;
    draw_lane_backgrounds(&mut chart, names.len(), end)?;
    for x in boundaries(input.window_s, end) {
        chart.draw_series(iter::once(PathElement::new(
            vec![(x, 0.0), (x, names.len() as f64)],
            BOUNDARY_GREY.stroke_width(1),
        )))?;
    }
    for (i, lane) in input.lanes.iter().enumerate() {
        let y = lane_base(i, names.len());
        match &lane.marks {
            TimelineMarks::Points(points) => draw_lane_ticks(&mut chart, points, y, end)?,
            TimelineMarks::Buckets(buckets) => {
                let peak = peak.unwrap_or(1);
                draw_lane_buckets(&mut chart, buckets, y, end, peak)?;
                draw_bar_scale(root, &chart, y, end, peak)?;
            }
        }
    }
    Ok(())
}

/// The highest count of any bucket in any lane (`None` when no lane has buckets):
/// every lane's bars share this scale, so lanes compare by height.
fn bucket_peak(lanes: &[TimelineLane]) -> Option<u64> {
    let mut peak = None;
    for lane in lanes {
        if let TimelineMarks::Buckets(buckets) = &lane.marks {
            let high = buckets.iter().map(|b| b.allowed.max(b.denied)).max();
            peak = Some(peak.unwrap_or(1).max(high.unwrap_or(1)).max(1));
        }
    }
    peak
}

/// The bars' scale at the right of a lane: the shared peak at the top of the allowed
/// bars and the bottom of the denied ones, 0 at the middle.
fn draw_bar_scale<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &LaneChart<'_, DB>,
    y: f64,
    end: f64,
    peak: u64,
) -> DrawResult<DB> {
    let x = end * 1.004;
    let style = font(TICK_SIZE - 4).pos(Pos::new(HPos::Left, VPos::Center));
    for (level, text) in [
        (0.88, peak.to_string()),
        (0.5, "0".into()),
        (0.12, peak.to_string()),
    ] {
        let (px, py) = chart.backend_coord(&(x, y + level));
        root.draw(&PathElement::new(vec![(px, py), (px + 5, py)], BLACK))?;
        root.draw(&Text::new(text, (px + 8, py), style.clone()))?;
    }
    let (px, top) = chart.backend_coord(&(x, y + 0.88));
    let (_, bottom) = chart.backend_coord(&(x, y + 0.12));
    root.draw(&PathElement::new(vec![(px, top), (px, bottom)], BLACK))?;
    Ok(())
}

/// The latest instant any lane mentions (0 if none is finite).
fn data_end(lanes: &[TimelineLane]) -> f64 {
    lanes
        .iter()
        .flat_map(|lane| match &lane.marks {
            TimelineMarks::Points(points) => points.iter().map(|p| p.time_s).collect::<Vec<_>>(),
            TimelineMarks::Buckets(buckets) => buckets.iter().map(|b| b.end_s).collect(),
        })
        .filter(|t| t.is_finite())
        .fold(0.0_f64, f64::max)
}

/// Caption, legend, and (when any lane shows bars) what a bar's height means.
fn draw_header<DB: DrawingBackend>(
    input: &TimelineChart,
    header: &DrawingArea<DB, Shift>,
    end: f64,
) -> DrawResult<DB> {
    draw_caption(header, &input.title, 30)?;
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
    let bar_width = input.lanes.iter().find_map(|lane| match &lane.marks {
        TimelineMarks::Buckets(b) => b.first().map(|b| b.end_s - b.start_s),
        TimelineMarks::Points(_) => None,
    });
    let legend_x = if bar_width.is_some() { 120 } else { 320 };
    draw_legend_row(header, (legend_x, 82), &legend)?;
    if let Some(width) = bar_width.filter(|w| w.is_finite() && *w > 0.0) {
        header.draw(&Text::new(
            format!(
                "bar height = decisions per {} s bin (scale at right)",
                format_seconds(width, width * 10.0)
            ),
            ((CHART_WIDTH - 40) as i32, 82),
            font(LEGEND_SIZE).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    Ok(())
}

/// The time axis and the lane names; returns the chart to draw the lanes on.
fn draw_axes<'a, DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    body: &'a DrawingArea<DB, Shift>,
    names: &[String],
    end: f64,
    bars: bool,
) -> Result<LaneChart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let label_width = label_area_width(body, names.iter().cloned())?;
    // A little room past the end, so a mark at the very end is drawn whole rather
    // than cut in half by the plot's edge; room at the right for the bars' scale.
    let pad = end * 0.004;
    let mut chart = ChartBuilder::on(body)
        .margin_right(if bars { 80 } else { 30 })
        .margin_bottom(10)
        .x_label_area_size(70)
        .y_label_area_size(label_width)
        .build_cartesian_2d(0.0..end + pad, 0.0..names.len() as f64)?;
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
    draw_lane_labels(root, &chart, names)?;
    Ok(chart)
}

/// Lane backgrounds (alternating) and separators.
fn draw_lane_backgrounds<DB: DrawingBackend>(
    chart: &mut LaneChart<'_, DB>,
    n: usize,
    end: f64,
) -> DrawResult<DB> {
    for i in 0..n {
        let y = lane_base(i, n);
        if i % 2 == 1 {
            chart.draw_series(iter::once(Rectangle::new(
                [(0.0, y), (end, y + 1.0)],
                LANE_SHADE.filled(),
            )))?;
        }
        if i > 0 {
            chart.draw_series(iter::once(PathElement::new(
                vec![(0.0, y + 1.0), (end, y + 1.0)],
                LANE_GREY.stroke_width(1),
            )))?;
        }
    }
    Ok(())
}

/// One tick per decision in the lane starting at `y`. Allowed marks in the upper half
/// of a lane, denied in the lower half: position as well as colour tells them apart.
fn draw_lane_ticks<DB: DrawingBackend>(
    chart: &mut LaneChart<'_, DB>,
    points: &[TimelinePoint],
    y: f64,
    end: f64,
) -> DrawResult<DB> {
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
    Ok(())
}

/// Bars for pre-counted buckets: allowed up from the lane's middle, denied down, both
/// scaled to `peak` (the highest count of any lane), which the scale at the right shows.
fn draw_lane_buckets<DB: DrawingBackend>(
    chart: &mut LaneChart<'_, DB>,
    buckets: &[TimelineBucket],
    y: f64,
    end: f64,
    peak: u64,
) -> DrawResult<DB> {
    let peak = peak.max(1) as f64;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binned_lanes_share_one_scale_the_highest_bucket_of_any() {
        let lane = |allowed, denied| TimelineLane {
            algorithm: "a".into(),
            marks: TimelineMarks::Buckets(vec![TimelineBucket {
                start_s: 0.0,
                end_s: 1.0,
                allowed,
                denied,
            }]),
        };
        assert_eq!(bucket_peak(&[lane(3, 1), lane(2, 9)]), Some(9));
        assert_eq!(bucket_peak(&[lane(0, 0)]), Some(1), "never a zero scale");
        let points = TimelineLane {
            algorithm: "b".into(),
            marks: TimelineMarks::Points(Vec::new()),
        };
        assert_eq!(bucket_peak(&[points]), None, "ticks need no scale");
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
