//! The lecture's animation (`window_slide.gif`): the trailing window `(t − W, t]`
//! sliding across the window edge where the worst over-admission happened, and each
//! algorithm's admitted count in it at `t` as a bar against the limit.
//!
//! Frames are exact instants (integer ns): evenly spaced ones, plus every instant at
//! which some count changes, so a burst packed into one nanosecond gets its own frames
//! instead of falling between two. It draws the series it is given (the window-count
//! series) and computes no metric.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{LEGEND_SIZE, TICK_SIZE, display_name, draw_caption, font};
use super::palette::{BOUNDARY_GREY, OVER_LIMIT_TINT, OVER_RED, WITHIN_BLUE};
use super::{
    CHART_WIDTH, ChartError, DrawResult, GlyphBackend, format_offset_short, register_fonts,
};
use crate::report::output::TempPath;

/// One algorithm's trailing-window count: `(instant ns, count)` at each change,
/// sorted; 0 before the first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlideSeries {
    /// The bar's label.
    pub algorithm: String,
    /// The step function.
    pub points: Vec<(u64, u64)>,
}

/// Input of [`render_slide_gif`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlideAnimation {
    /// Caption.
    pub title: String,
    /// The window edge the animation is centred on, ns.
    pub edge_ns: u64,
    /// The window length, ns.
    pub window_ns: u64,
    /// The rule's `max_requests`.
    pub limit: u64,
    /// One bar per algorithm.
    pub series: Vec<SlideSeries>,
}

const SIZE: (u32, u32) = (CHART_WIDTH, 560);
/// Evenly spaced frames across the shown span (before the change instants are added).
const STEPS: u64 = 40;
/// Hundredths of a second each frame shows.
const FRAME_DELAY: u32 = 25;
const LEFT: i32 = 260;
const RIGHT: i32 = CHART_WIDTH as i32 - 60;

impl SlideAnimation {
    /// The shown span: from one window before the edge to one window after.
    fn span(&self) -> (u64, u64) {
        let w = self.window_ns.max(1);
        (
            self.edge_ns.saturating_sub(w),
            self.edge_ns.saturating_add(w),
        )
    }

    /// Every frame's instant, sorted and distinct: evenly spaced ones and every change.
    pub fn frames(&self) -> Vec<u64> {
        let (start, end) = self.span();
        let step = ((end - start) / STEPS).max(1);
        let mut times: Vec<u64> = (0..=STEPS).map(|i| start + i * step).collect();
        for s in &self.series {
            times.extend(
                s.points
                    .iter()
                    .map(|p| p.0)
                    .filter(|t| (start..=end).contains(t)),
            );
        }
        times.sort_unstable();
        times.dedup();
        times
    }
}

/// The count of a sorted step function at `t`.
fn count_at(points: &[(u64, u64)], t: u64) -> u64 {
    let after = points.partition_point(|p| p.0 <= t);
    after.checked_sub(1).map_or(0, |i| points[i].1)
}

/// Writes the animation to `path` as a GIF, atomically.
pub fn render_slide_gif(input: &SlideAnimation, path: &Path) -> Result<PathBuf, ChartError> {
    register_fonts()?;
    let temp = TempPath::new(path)?;
    let draw_err = |e: &dyn std::fmt::Display| ChartError::Draw {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    {
        let backend = BitMapBackend::gif(temp.temp_path(), SIZE, FRAME_DELAY * 10)
            .map_err(|e| draw_err(&e))?;
        let root = GlyphBackend(backend).into_drawing_area();
        for t in input.frames() {
            draw_frame(input, t, &root).map_err(|e| draw_err(&e))?;
            root.present().map_err(|e| draw_err(&e))?;
        }
    }
    Ok(temp.persist()?)
}

/// One frame: the time strip with the window at `t`, then one bar per algorithm.
pub fn draw_frame<DB: DrawingBackend>(
    input: &SlideAnimation,
    t: u64,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    draw_caption(root, &input.title, 30)?;
    draw_time_strip(input, t, root)?;
    let top_count = input
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .max()
        .unwrap_or(0)
        .max(input.limit)
        .max(1);
    let scale =
        |c: u64| LEFT + ((RIGHT - LEFT) as f64 * c as f64 / (top_count as f64 * 1.15)) as i32;
    let limit_x = scale(input.limit);
    let row = 52;
    let top = 200;
    let bottom = top + row * input.series.len() as i32;
    root.draw(&Rectangle::new(
        [(limit_x, top - 10), (RIGHT, bottom)],
        OVER_LIMIT_TINT.filled(),
    ))?;
    for (i, s) in input.series.iter().enumerate() {
        let y = top + row * i as i32;
        let count = count_at(&s.points, t);
        let color = if count > input.limit {
            OVER_RED
        } else {
            WITHIN_BLUE
        };
        let name = font(TICK_SIZE).pos(Pos::new(HPos::Right, VPos::Center));
        root.draw(&Text::new(
            display_name(&s.algorithm),
            (LEFT - 12, y + row / 2 - 5),
            name,
        ))?;
        root.draw(&Rectangle::new(
            [(LEFT, y), (scale(count), y + row - 14)],
            color.filled(),
        ))?;
        let label = font(TICK_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new(
            count.to_string(),
            (scale(count) + 8, y + row / 2 - 5),
            label,
        ))?;
    }
    let dashed = BLACK.stroke_width(2);
    root.draw(&PathElement::new(
        vec![(limit_x, top - 14), (limit_x, bottom)],
        dashed,
    ))?;
    let note = font(LEGEND_SIZE).pos(Pos::new(HPos::Left, VPos::Bottom));
    let text = format!("limit {}", input.limit);
    root.draw(&Text::new(text, (limit_x + 6, top - 14), note))?;
    Ok(())
}

/// The span around the edge, the edge itself, the window `(t − W, t]` shaded, and `t`
/// written exactly as an offset from the edge.
fn draw_time_strip<DB: DrawingBackend>(
    input: &SlideAnimation,
    t: u64,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    let (start, end) = input.span();
    let x = |v: u64| {
        let f = (v.clamp(start, end) - start) as f64 / (end - start).max(1) as f64;
        LEFT + ((RIGHT - LEFT) as f64 * f) as i32
    };
    let (y0, y1) = (90, 130);
    root.draw(&Rectangle::new(
        [(LEFT, y0), (RIGHT, y1)],
        BLACK.stroke_width(1),
    ))?;
    let from = t.saturating_sub(input.window_ns);
    root.draw(&Rectangle::new(
        [(x(from), y0), (x(t), y1)],
        RGBColor(200, 225, 245).filled(),
    ))?;
    let edge = x(input.edge_ns);
    root.draw(&PathElement::new(
        vec![(edge, y0 - 6), (edge, y1 + 6)],
        BOUNDARY_GREY.stroke_width(3),
    ))?;
    root.draw(&PathElement::new(
        vec![(x(t), y0 - 10), (x(t), y1 + 10)],
        BLACK.stroke_width(2),
    ))?;
    let offset = match i128::from(t) - i128::from(input.edge_ns) {
        0 => "exactly at the boundary".to_string(),
        d => format!("boundary {}", format_offset_short(d)),
    };
    let label = format!("t = {offset}; shaded: the trailing window (t − W, t]");
    let style = font(LEGEND_SIZE).pos(Pos::new(HPos::Left, VPos::Top));
    root.draw(&Text::new(label, (LEFT, y1 + 14), style))?;
    let above = font(LEGEND_SIZE - 2).pos(Pos::new(HPos::Center, VPos::Bottom));
    root.draw(&Text::new(
        "boundary",
        (edge, y0 - 8),
        above.color(&BOUNDARY_GREY),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_inside_one_nanosecond_gets_its_own_frames() {
        let w = 10_000_000_000;
        let animation = SlideAnimation {
            title: String::new(),
            edge_ns: w,
            window_ns: w,
            limit: 5,
            series: vec![SlideSeries {
                algorithm: "fixed_window".into(),
                points: vec![(w - 1, 5), (w, 10), (2 * w - 1, 5)],
            }],
        };
        let frames = animation.frames();
        assert!(
            frames.contains(&(w - 1)) && frames.contains(&w),
            "{frames:?}"
        );
        assert!(frames.windows(2).all(|p| p[0] < p[1]));
        let counts: Vec<u64> = [w - 2, w - 1, w, 2 * w - 1]
            .iter()
            .map(|&t| count_at(&animation.series[0].points, t))
            .collect();
        assert_eq!(counts, [0, 5, 10, 5]);
    }
}
