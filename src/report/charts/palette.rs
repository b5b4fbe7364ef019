//! Every colour the charts use, and the one function that picks an algorithm's colour.
//!
//! Colours only: nothing here draws. An algorithm's colour follows its place in the
//! registry's display order ([`Registry::position`](crate::Registry::position)), so it
//! is the same in every chart and every run, and an algorithm a caller registers gets
//! the next colour.

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
/// The fixed window's own counter in the boundary zoom.
pub(super) const COUNTER_BLUE: RGBColor = RGBColor(0, 114, 178);
/// An over-admission bar at or below 1.0.
pub(super) const WITHIN_BLUE: RGBColor = RGBColor(0, 114, 178);
/// An over-admission bar above 1.0.
pub(super) const OVER_RED: RGBColor = RGBColor(213, 94, 0);

/// The colour of the algorithm at `slot` in the registry's display order. The six
/// built-ins take the Okabe–Ito palette (readable by colour-blind viewers): token
/// bucket blue, leaky bucket sky blue, fixed window vermilion, sliding log green,
/// sliding window counter purple, GCRA orange; algorithms registered after them take
/// four more colours in turn.
pub fn algorithm_color(slot: usize) -> RGBColor {
    const PALETTE: [RGBColor; 10] = [
        RGBColor(0, 114, 178),
        RGBColor(86, 180, 233),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(230, 159, 0),
        RGBColor(90, 90, 90),
        RGBColor(153, 102, 51),
        RGBColor(102, 51, 153),
        RGBColor(0, 102, 102),
    ];
    PALETTE[slot % PALETTE.len()]
}
