//! The over-admission matrix of `compare`: one row per algorithm, one column per
//! scenario, each cell the ratio written out and coloured by how far over the limit
//! it went (blue: within; orange to red: over).
//!
//! It draws the ratios it is given (the same numbers as `over_admission_matrix.csv`)
//! and must not compute them.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{
    AXIS_TITLE_SIZE, TICK_SIZE, display_name, draw_caption, draw_nothing_to_show, font,
    label_area_width,
};
use super::{CHART_WIDTH, DrawResult};
use crate::report::summary::format_ratio;

/// Input of [`render_matrix`](super::render_matrix).
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixChart {
    /// Caption.
    pub title: String,
    /// Column headers (the scenarios).
    pub columns: Vec<String>,
    /// `(algorithm, ratio per column)`; NaN where the algorithm did not run.
    pub rows: Vec<(String, Vec<f64>)>,
}

const HEADER: u32 = 150;
const ROW: u32 = 56;

/// Pixel size of the matrix chart.
pub fn matrix_chart_size(rows: usize) -> (u32, u32) {
    (CHART_WIDTH, HEADER + ROW * rows.max(1) as u32 + 70)
}

/// A cell's colour: blue within the limit, from orange to red as the ratio grows to
/// 2.0 and beyond.
fn cell_color(ratio: f64) -> RGBColor {
    if !ratio.is_finite() {
        return RGBColor(235, 235, 235);
    }
    if ratio <= 1.0 {
        return RGBColor(214, 232, 245);
    }
    let t = ((ratio - 1.0) / 1.0).clamp(0.0, 1.0);
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
    RGBColor(mix(253, 213), mix(208, 60), mix(162, 20))
}

/// Draws the matrix on any plotters backend.
pub fn draw_matrix<DB: DrawingBackend>(
    input: &MatrixChart,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    draw_caption(root, &input.title, 34)?;
    if input.rows.is_empty() || input.columns.is_empty() {
        let (_, body) = root.split_vertically(HEADER);
        return draw_nothing_to_show(&body);
    }
    let names: Vec<String> = input.rows.iter().map(|r| display_name(&r.0)).collect();
    let left = label_area_width(root, names.iter().cloned())? as i32 + 20;
    let width = (CHART_WIDTH as i32 - left - 40) / input.columns.len() as i32;
    let top = HEADER as i32;
    let header = font(AXIS_TITLE_SIZE).pos(Pos::new(HPos::Center, VPos::Bottom));
    for (j, column) in input.columns.iter().enumerate() {
        let x = left + width * j as i32 + width / 2;
        root.draw(&Text::new(
            display_name(column),
            (x, top - 12),
            header.clone(),
        ))?;
    }
    let name_style = font(TICK_SIZE).pos(Pos::new(HPos::Right, VPos::Center));
    let cell_style = font(AXIS_TITLE_SIZE).pos(Pos::new(HPos::Center, VPos::Center));
    for (i, ((_, ratios), name)) in input.rows.iter().zip(&names).enumerate() {
        let y = top + ROW as i32 * i as i32;
        root.draw(&Text::new(
            name.clone(),
            (left - 14, y + ROW as i32 / 2),
            name_style.clone(),
        ))?;
        for (j, &ratio) in ratios.iter().enumerate() {
            let x = left + width * j as i32;
            let corners = [(x + 2, y + 2), (x + width - 2, y + ROW as i32 - 2)];
            root.draw(&Rectangle::new(corners, cell_color(ratio).filled()))?;
            let text = if ratio.is_finite() {
                format_ratio(ratio)
            } else {
                "—".into()
            };
            let centre = (x + width / 2, y + ROW as i32 / 2);
            // White on the darker reds, black elsewhere: readable on every cell.
            let ink = if ratio.is_finite() && ratio >= 1.5 {
                WHITE
            } else {
                BLACK
            };
            root.draw(&Text::new(text, centre, cell_style.clone().color(&ink)))?;
        }
    }
    let note = "each cell: the most one client got into any window ÷ the limit (1.00× = exact)";
    let bottom = top + ROW as i32 * input.rows.len() as i32 + 36;
    let legend = font(TICK_SIZE).pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new(note, ((CHART_WIDTH / 2) as i32, bottom), legend))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_blue_within_the_limit_and_redden_above_it() {
        assert_eq!(cell_color(1.0), cell_color(0.5));
        let (a, b) = (cell_color(1.2), cell_color(2.0));
        assert!(b.1 < a.1, "2.0× is redder than 1.2×");
        assert_eq!(cell_color(3.0), cell_color(2.0), "saturates at 2×");
        assert_eq!(cell_color(f64::NAN), RGBColor(235, 235, 235));
    }
}
