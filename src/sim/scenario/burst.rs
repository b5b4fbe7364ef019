//! Boundary bursts' geometry: the one place a burst's period is decided, and the rule
//! that keeps neighbouring half-bursts apart, with the words that explain it.
//!
//! Pure functions of times; this module reads no file and knows no positions (the
//! builder points the messages at the field to change).

use crate::rule::Rule;
use crate::time::Nanos;

/// The distance between a boundary burst's boundaries: its own `period` if set, else
/// the window of the `rule` it runs under. Validation, [`super::Scenario::set_rule`],
/// the arrival estimate and the arrival stream all take it from here, so a rule
/// changed after parsing moves the boundaries everywhere at once.
pub(crate) fn burst_period(period: Option<Nanos>, rule: &Rule) -> Nanos {
    period.unwrap_or(rule.window())
}

/// Whether boundary half-bursts of width `spread` fit `period` apart: neighbouring
/// half-bursts must not overlap, or the source would emit out of order
/// (`2·spread + 1 ns < period`).
pub(super) fn burst_fits(spread: Nanos, period: Nanos) -> bool {
    u128::from(spread.as_u64()) * 2 + 1 < u128::from(period.as_u64())
}

/// The rule every boundary burst keeps.
pub(super) const BURST_RULE: &str = "boundary bursts need 2 × spread + 1ns < period";

/// Why the window, standing in for an unset `period`, cannot hold bursts of `spread`:
/// in a scenario file and after `compare --limit` alike.
pub(super) fn window_too_short_for_bursts(window: Nanos, spread: Nanos) -> String {
    let fix = match least_burst_period(spread) {
        Some(least) => format!("use a window of at least {least} or set `period`"),
        None => "no window is long enough; make the spread narrower".to_string(),
    };
    format!(
        "the window of {window} is too short to be the boundary bursts' period (spread \
         {spread}; `period` is not set): {BURST_RULE}; {fix}"
    )
}

/// The shortest period that fits half-bursts of width `spread` (`2·spread + 2 ns`), if
/// it is representable.
pub(super) fn least_burst_period(spread: Nanos) -> Option<Nanos> {
    let least = u128::from(spread.as_u64()) * 2 + 2;
    u64::try_from(least).ok().map(Nanos::new)
}

/// The widest spread that fits `period` (`(period − 2 ns) / 2`), if any does.
pub(super) fn most_burst_spread(period: Nanos) -> Option<Nanos> {
    period.as_u64().checked_sub(2).map(|p| Nanos::new(p / 2))
}
