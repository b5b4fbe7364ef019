//! Any chart, in either format: PNG (the default, bitmap backend) or SVG (plotters'
//! SVG backend, for slides: it scales without blurring).
//!
//! One enum over the chart inputs, so a caller picks the chart and the format as values
//! and each chart's generic `draw_*` function is instantiated for both backends here.
//! It draws nothing of its own.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    CHART_HEIGHT, CHART_WIDTH, ChartError, DrawResult, GlyphBackend, MatrixChart,
    OverAdmissionChart, TimelineChart, WindowCountChart, ZoomChart, draw_matrix,
    draw_over_admission, draw_timeline, draw_window_counts, draw_zoom, lane_chart_size,
    matrix_chart_size, register_fonts, zoom_chart_size,
};
use crate::report::output::TempPath;

/// The image format of the charts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ChartFormat {
    /// PNG (the default): what every viewer shows.
    #[default]
    Png,
    /// SVG: vector, for slides. Text is SVG text in the `sans-serif` family, so the
    /// viewer's own font draws it.
    Svg,
}

impl ChartFormat {
    /// The file extension: `png` or `svg`.
    pub fn extension(self) -> &'static str {
        match self {
            ChartFormat::Png => "png",
            ChartFormat::Svg => "svg",
        }
    }
}

/// One chart's input.
#[derive(Debug, Clone, Copy)]
pub enum AnyChart<'a> {
    /// The timeline.
    Timeline(&'a TimelineChart),
    /// The boundary zoom.
    Zoom(&'a ZoomChart),
    /// The trailing-window counts.
    WindowCounts(&'a WindowCountChart),
    /// The over-admission bars.
    OverAdmission(&'a OverAdmissionChart),
    /// `compare`'s matrix.
    Matrix(&'a MatrixChart),
}

impl AnyChart<'_> {
    /// The chart's size in pixels.
    pub fn size(self) -> (u32, u32) {
        match self {
            AnyChart::Timeline(c) => lane_chart_size(c.lanes.len()),
            AnyChart::Zoom(c) => zoom_chart_size(c),
            AnyChart::WindowCounts(_) => (CHART_WIDTH, CHART_HEIGHT),
            AnyChart::OverAdmission(c) => lane_chart_size(c.bars.len()),
            AnyChart::Matrix(c) => matrix_chart_size(c.rows.len()),
        }
    }

    fn draw<DB: DrawingBackend>(self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        match self {
            AnyChart::Timeline(c) => draw_timeline(c, root),
            AnyChart::Zoom(c) => draw_zoom(c, root),
            AnyChart::WindowCounts(c) => draw_window_counts(c, root),
            AnyChart::OverAdmission(c) => draw_over_admission(c, root),
            AnyChart::Matrix(c) => draw_matrix(c, root),
        }
    }
}

/// Writes `chart` to `path` with its extension replaced by the format's, atomically;
/// returns the path written.
pub fn render_chart(
    chart: AnyChart<'_>,
    path: &Path,
    format: ChartFormat,
) -> Result<PathBuf, ChartError> {
    register_fonts()?;
    let path = path.with_extension(format.extension());
    let temp = TempPath::new(&path)?;
    let draw_err = |e: &dyn std::fmt::Display| ChartError::Draw {
        path: path.clone(),
        message: e.to_string(),
    };
    match format {
        ChartFormat::Png => {
            let bitmap = BitMapBackend::new(temp.temp_path(), chart.size());
            let root = GlyphBackend(bitmap).into_drawing_area();
            chart.draw(&root).map_err(|e| draw_err(&e))?;
            root.present().map_err(|e| draw_err(&e))?;
        }
        ChartFormat::Svg => {
            let root = SVGBackend::new(temp.temp_path(), chart.size()).into_drawing_area();
            chart.draw(&root).map_err(|e| draw_err(&e))?;
            root.present().map_err(|e| draw_err(&e))?;
        }
    }
    Ok(temp.persist()?)
}

/// Renders `chart` as an SVG document in memory (for tests and embedding).
pub fn render_svg_string(chart: AnyChart<'_>) -> Result<String, ChartError> {
    register_fonts()?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, chart.size()).into_drawing_area();
        let draw_err = |e: &dyn std::fmt::Display| ChartError::Draw {
            path: PathBuf::from("<memory>"),
            message: e.to_string(),
        };
        chart.draw(&root).map_err(|e| draw_err(&e))?;
        root.present().map_err(|e| draw_err(&e))?;
    }
    Ok(out)
}
