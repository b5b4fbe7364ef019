//! The fixed window and the sliding window counter on Redis, computed by
//! `lua/window.lua`: a key holds the window counted (or the latest instant) and the
//! counts; instants' windows are found exactly from (s, ns) pairs.

use super::error::{Bound, WINDOW_LIMIT};
use super::script::{Family, Part};
use super::{Scripted, Unrepresentable};
use crate::algorithm::{Algorithm, FixedWindow, SlidingWindowCounter};

impl Scripted for FixedWindow {
    fn parts(&self) -> Result<Vec<Part>, Unrepresentable> {
        part(self, "fixed_window", Family::Fixed)
    }
}

impl Scripted for SlidingWindowCounter {
    fn parts(&self) -> Result<Vec<Part>, Unrepresentable> {
        part(self, "sliding_window_counter", Family::Counter)
    }
}

/// The script's parameters (`max`, `W`), or the bound the rule breaks.
fn part<A: Algorithm>(
    algorithm: &A,
    name: &'static str,
    family: Family,
) -> Result<Vec<Part>, Unrepresentable> {
    let rule = *algorithm.rule();
    let (max, w) = (rule.max_requests(), rule.window().as_u64());
    quota_fits(algorithm, name)?;
    if w > WINDOW_LIMIT {
        return Err(Unrepresentable {
            algorithm: name,
            rule,
            bound: Bound::Window { value: w },
        });
    }
    let params = vec![max.to_string(), w.to_string()];
    Ok(vec![Part::new(algorithm, name, family, params)])
}

/// `max_requests ≤ 2^52`, the bound the windows and the log share.
pub(super) fn quota_fits<A: Algorithm>(
    algorithm: &A,
    name: &'static str,
) -> Result<(), Unrepresentable> {
    let rule = *algorithm.rule();
    let max = rule.max_requests();
    if max > WINDOW_LIMIT {
        return Err(Unrepresentable {
            algorithm: name,
            rule,
            bound: Bound::Quota { value: max },
        });
    }
    Ok(())
}
