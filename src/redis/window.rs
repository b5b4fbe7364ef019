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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::Rule;
    use crate::time::Nanos;
    use crate::{SlidingWindowLog, algorithm::SlidingWindowCounter};

    fn rule(max: u64, w: u64) -> Rule {
        Rule::new(max, Nanos::new(w)).unwrap()
    }

    #[test]
    fn windows_and_quotas_up_to_2_pow_52_pass_and_one_more_is_refused() {
        let at = WINDOW_LIMIT;
        assert!(FixedWindow::new(rule(at, at)).parts().is_ok());
        let refused = FixedWindow::new(rule(1, at + 1)).parts().unwrap_err();
        assert_eq!(refused.bound, Bound::Window { value: at + 1 });
        let refused = SlidingWindowCounter::new(rule(at + 1, 1))
            .parts()
            .unwrap_err();
        assert_eq!(refused.bound, Bound::Quota { value: at + 1 });
        // The log has no window bound, only the quota's.
        assert!(SlidingWindowLog::new(rule(at, u64::MAX)).parts().is_ok());
        let refused = SlidingWindowLog::new(rule(at + 1, 1)).parts().unwrap_err();
        assert!(refused.to_string().contains("2^52"), "{refused}");
    }
}
