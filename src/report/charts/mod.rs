//! PNG charts (plotters, bitmap backend, embedded Noto Sans): the per-algorithm
//! timeline, the trailing-window count against the limit, and the over-admission bars.
//!
//! Each chart is a pure function of a small input struct defined in its own module
//! (`timeline`, `window_counts`, `over_admission`); `frame` holds what they share
//! (caption, legend, lanes, axis helpers) and `palette` every colour. This module
//! registers the font and writes files atomically (temporary name, then rename). The
//! charts must not compute metrics, read system fonts, or panic on odd input: empty
//! series, single points, zero durations, NaN ratios and huge counts all render
//! something sensible.
//!
//! # Thinning happens once, in the simulator
//!
//! A run can make tens of millions of decisions, so its series are bounded where they
//! are recorded: `sim`'s `Timeline` counts decisions into at most `TIMELINE_BUCKETS`
//! buckets, and its `SeriesThinner` keeps the worst key's window count to at most
//! `WINDOW_SAMPLES` points (each bucket's first, lowest, highest and last, so no peak
//! is lost). That is the only place that can thin: it is where memory is at stake (the
//! full series never exists), and `window_counts.csv` is written from its output, so
//! the CSV is bounded by the same rule. The charts draw what they are given, point for
//! point. Before, the window chart decimated again (900 columns) and the timeline
//! re-binned large point lanes (400 bins): a second, different rule on data that was
//! already bounded, which made the picture disagree with the CSV beside it for no gain
//! (20,000 points are cheap to draw). [`TimelineBinner`] remains for callers that hold
//! raw decisions; the charts never apply it themselves.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use thiserror::Error;

use super::output::{OutputError, TempPath};

mod animation;
mod format;
mod frame;
mod frontier;
mod matrix;
mod nodes;
mod over_admission;
mod palette;
mod text;
mod timeline;
mod window_counts;
mod zoom;

pub use animation::{SlideAnimation, SlideSeries, draw_frame, render_slide_gif};
pub use format::{AnyChart, ChartFormat, render_chart, render_svg_string};
pub use frontier::{FrontierChart, FrontierPoint, draw_frontier};
pub use matrix::{MatrixChart, draw_matrix, matrix_chart_size};
pub use nodes::{NodesChart, NodesSeries, draw_nodes};
pub use over_admission::{OverAdmissionChart, draw_over_admission};
pub use palette::algorithm_color;
pub use text::{GlyphBackend, text_ink};
pub use timeline::{
    TimelineBinner, TimelineBucket, TimelineChart, TimelineLane, TimelineMarks, TimelinePoint,
    draw_timeline,
};
pub use window_counts::{WindowCountChart, WindowCountSeries, draw_window_counts};
pub use zoom::{
    LanePeak, ZoomChart, ZoomLane, ZoomMark, draw_zoom, format_offset, format_offset_short,
    zoom_chart_size, zoom_panel_label,
};

/// Width of every chart, in pixels.
pub const CHART_WIDTH: u32 = 1200;
/// Height of the window-count chart, and the minimum height of the lane charts.
pub const CHART_HEIGHT: u32 = 700;
/// At most this many window boundaries are drawn; denser ones would be a grey smear.
pub const MAX_BOUNDARY_LINES: usize = 240;

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
        plotters::style::register_font(frame::FONT, FontStyle::Normal, ttf_noto_sans::REGULAR)
            .is_ok()
    });
    if ok { Ok(()) } else { Err(ChartError::Font) }
}

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

/// Writes the boundary zoom PNG to `path` atomically.
pub fn render_zoom(input: &ZoomChart, path: &Path) -> Result<PathBuf, ChartError> {
    render_png(path, zoom_chart_size(input), |root| draw_zoom(input, root))
}

/// Renders the boundary zoom into memory.
pub fn render_zoom_rgb(input: &ZoomChart) -> Result<RgbImage, ChartError> {
    render_rgb(zoom_chart_size(input), |root| draw_zoom(input, root))
}

/// Writes `compare`'s over-admission matrix PNG to `path` atomically.
pub fn render_matrix(input: &MatrixChart, path: &Path) -> Result<PathBuf, ChartError> {
    render_png(path, matrix_chart_size(input.rows.len()), |root| {
        draw_matrix(input, root)
    })
}

/// Renders the matrix into memory.
pub fn render_matrix_rgb(input: &MatrixChart) -> Result<RgbImage, ChartError> {
    render_rgb(matrix_chart_size(input.rows.len()), |root| {
        draw_matrix(input, root)
    })
}

/// Writes the over-admission-versus-nodes PNG to `path` atomically.
pub fn render_nodes(input: &NodesChart, path: &Path) -> Result<PathBuf, ChartError> {
    render_png(path, (CHART_WIDTH, CHART_HEIGHT), |root| {
        draw_nodes(input, root)
    })
}

/// Renders the over-admission-versus-nodes chart into memory.
pub fn render_nodes_rgb(input: &NodesChart) -> Result<RgbImage, ChartError> {
    render_rgb((CHART_WIDTH, CHART_HEIGHT), |root| draw_nodes(input, root))
}

/// Writes a sweep's frontier PNG to `path` atomically.
pub fn render_frontier(input: &FrontierChart, path: &Path) -> Result<PathBuf, ChartError> {
    render_png(path, (CHART_WIDTH, CHART_HEIGHT + 140), |root| {
        draw_frontier(input, root)
    })
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

/// What a draw function returns on backend `DB`.
type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The bitmap backend every PNG is drawn on: plotters' own, with text placed right.
type Bitmap<'a> = GlyphBackend<BitMapBackend<'a>>;

fn render_png<F>(path: &Path, size: (u32, u32), draw: F) -> Result<PathBuf, ChartError>
where
    F: FnOnce(&DrawingArea<Bitmap<'_>, Shift>) -> DrawResult<Bitmap<'static>>,
{
    register_fonts()?;
    let temp = TempPath::new(path)?;
    let draw_err = |e: &dyn std::fmt::Display| ChartError::Draw {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    {
        let root = GlyphBackend(BitMapBackend::new(temp.temp_path(), size)).into_drawing_area();
        draw(&root).map_err(|e| draw_err(&e))?;
        root.present().map_err(|e| draw_err(&e))?;
    }
    Ok(temp.persist()?)
}

fn render_rgb<F>(size: (u32, u32), draw: F) -> Result<RgbImage, ChartError>
where
    F: FnOnce(&DrawingArea<Bitmap<'_>, Shift>) -> DrawResult<Bitmap<'static>>,
{
    register_fonts()?;
    let mut pixels = vec![0u8; size.0 as usize * size.1 as usize * 3];
    let draw_err = |e: &dyn std::fmt::Display| ChartError::Draw {
        path: PathBuf::from("<memory>"),
        message: e.to_string(),
    };
    {
        let root = GlyphBackend(BitMapBackend::with_buffer(&mut pixels, size)).into_drawing_area();
        draw(&root).map_err(|e| draw_err(&e))?;
        root.present().map_err(|e| draw_err(&e))?;
    }
    Ok(RgbImage {
        width: size.0,
        height: size.1,
        pixels,
    })
}
