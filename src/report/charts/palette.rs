//! Every colour the charts use, and the one function that picks an algorithm's colour.
//!
//! Colours only: nothing here draws. The per-algorithm choice lives in
//! [`algorithm_color`] alone, so it can later come from the algorithm registry by
//! changing one function.

use plotters::style::RGBColor;

/// An admitted decision on the timeline.
pub(super) const ALLOWED_GREEN: RGBColor = RGBColor(26, 150, 65);
/// A denied decision on the timeline.
pub(super) const DENIED_RED: RGBColor = RGBColor(215, 48, 39);
/// Window boundaries on the timeline.
pub(super) const BOUNDARY_GREY: RGBColor = RGBColor(150, 150, 150);
/// Window boundaries in the window-count panels (fainter: they sit behind a line).
pub(super) const PANEL_BOUNDARY_GREY: RGBColor = RGBColor(215, 215, 215);
/// Separators between timeline lanes.
pub(super) const LANE_GREY: RGBColor = RGBColor(225, 225, 225);
/// Every other timeline lane's background.
pub(super) const LANE_SHADE: RGBColor = RGBColor(246, 246, 246);
/// The window-count panels' horizontal grid lines.
pub(super) const PANEL_GRID: RGBColor = RGBColor(230, 230, 230);
/// The window-count panels' tint above the limit (over-admission territory).
pub(super) const OVER_LIMIT_TINT: RGBColor = RGBColor(254, 242, 237);
/// An over-admission bar at or below 1.0.
pub(super) const WITHIN_BLUE: RGBColor = RGBColor(0, 114, 178);
/// An over-admission bar above 1.0.
pub(super) const OVER_RED: RGBColor = RGBColor(213, 94, 0);

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
