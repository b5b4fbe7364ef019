//! The frame every chart shares: text styles, the caption, legends, the x axis's
//! extent and labels, window boundaries, and the lane layout of the timeline and the
//! bar chart.
//!
//! Helpers only: nothing here knows which chart it serves or looks at the data beyond
//! the axis extent, and nothing here thins or reshapes a series.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{CHART_WIDTH, DrawResult, MAX_BOUNDARY_LINES};

/// The font family the embedded Noto Sans is registered as (plotters' mesh and legend
/// defaults use it too).
pub(super) const FONT: &str = "sans-serif";
pub(super) const CAPTION_SIZE: u32 = 36;
pub(super) const AXIS_TITLE_SIZE: u32 = 24;
pub(super) const TICK_SIZE: u32 = 20;
pub(super) const LEGEND_SIZE: u32 = 20;

/// Black text in the chart font at `size`.
pub(super) fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).color(&BLACK)
}

/// The chart font at `size`, or smaller (down to 12) until `text` fits `max_width`
/// pixels: a long client name must not push a caption off the image.
pub(super) fn fitted_font<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    size: u32,
    max_width: u32,
) -> Result<TextStyle<'static>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut size = size;
    while size > 12 && area.estimate_text_size(text, &font(size))?.0 > max_width {
        size -= 1;
    }
    Ok(font(size))
}

/// The chart's title, centred across the full width at height `y` of `header`.
pub(super) fn draw_caption<DB: DrawingBackend>(
    header: &DrawingArea<DB, Shift>,
    title: &str,
    y: i32,
) -> DrawResult<DB> {
    header.draw(&Text::new(
        title.to_string(),
        ((CHART_WIDTH / 2) as i32, y),
        font(CAPTION_SIZE).pos(Pos::new(HPos::Center, VPos::Center)),
    ))
}

/// A sane x-axis length: the run's duration when it is valid (data past it is clipped),
/// else the data's extent, else 1 s.
pub(super) fn axis_end(duration_s: f64, data_max: f64) -> f64 {
    if duration_s.is_finite() && duration_s > 0.0 {
        duration_s
    } else if data_max.is_finite() && data_max > 0.0 {
        data_max
    } else {
        1.0
    }
}

/// A time-axis label with as many decimals as the axis's `span` needs.
pub(super) fn format_seconds(v: f64, span: f64) -> String {
    if span >= 20.0 {
        format!("{v:.0}")
    } else if span >= 2.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Window boundaries inside `(0, end)`, or none if too dense or invalid.
pub(super) fn boundaries(window_s: Option<f64>, end: f64) -> Vec<f64> {
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

/// How a legend entry is marked.
pub(super) enum LegendMark {
    Line(RGBColor, u32),
    Dashed(RGBColor),
    Tick(RGBColor),
    Block(RGBColor),
    /// A filled dot, as a scatter plot's points.
    Dot(RGBColor),
    /// A cross: a denied request.
    Cross(RGBColor),
    /// A ring: a hollow point, or (thick) a point's outline.
    Ring(RGBColor, u32),
    /// A diamond outline: a marked point.
    Diamond(RGBColor),
    /// Two dots side by side: points moved apart so both show.
    Pair(RGBColor),
}

/// Draws legend entries left to right from `(x, y)` (pixel coordinates, y = centre).
pub(super) fn draw_legend_row<DB: DrawingBackend>(
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
        LegendMark::Dot(color) => area.draw(&Circle::new((x + 15, y), 6, color.filled())),
        LegendMark::Cross(color) => {
            let style = color.stroke_width(3);
            area.draw(&PathElement::new(
                vec![(x + 9, y - 6), (x + 21, y + 6)],
                style,
            ))?;
            area.draw(&PathElement::new(
                vec![(x + 9, y + 6), (x + 21, y - 6)],
                style,
            ))
        }
        LegendMark::Ring(color, width) => {
            area.draw(&Circle::new((x + 15, y), 8, color.stroke_width(*width)))
        }
        LegendMark::Diamond(color) => {
            let corners = [(15, -11), (26, 0), (15, 11), (4, 0), (15, -11)];
            let path: Vec<(i32, i32)> = corners.iter().map(|(dx, dy)| (x + dx, y + dy)).collect();
            area.draw(&PathElement::new(path, color.stroke_width(3)))
        }
        LegendMark::Pair(color) => {
            area.draw(&Circle::new((x + 8, y), 6, color.filled()))?;
            area.draw(&Circle::new((x + 23, y), 6, color.filled()))
        }
    }
}

/// The message a chart with no algorithms shows instead of empty axes.
pub(super) fn draw_nothing_to_show<DB: DrawingBackend>(
    body: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    body.draw(&Text::new(
        "no algorithms to show",
        ((CHART_WIDTH / 2) as i32, 200),
        font(AXIS_TITLE_SIZE).pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    Ok(())
}

/// Pixel width for a left label area that fits `names` at tick size.
pub(super) fn label_area_width<DB: DrawingBackend>(
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
pub(super) fn lane_base(i: usize, n: usize) -> f64 {
    (n - 1 - i) as f64
}

/// Writes each lane's name to the left of the plot, centred on its lane. Drawn on the
/// root area in pixels because plotters' tick labels cannot be placed at lane centres.
pub(super) fn draw_lane_labels<DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
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

/// An algorithm's label: `(unnamed)` for an empty name, long names cut at 40 characters.
pub(super) fn display_name(name: &str) -> String {
    if name.is_empty() {
        "(unnamed)".to_string()
    } else if name.chars().count() > 40 {
        let short: String = name.chars().take(39).collect();
        format!("{short}…")
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
