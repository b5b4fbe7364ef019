//! Per-rule window metrics (a scenario with several `[[limit]]`s is measured against
//! each of them) and the exact delay percentiles of a shaper's admissions.
//!
//! Observes finished measurements; decides nothing. Comparisons between rules are exact
//! (cross-multiplied in `u128`), never through the display ratio.

use std::borrow::Cow;

use serde::Serialize;

use super::Metrics;

/// One rule's window metrics: what `max_in_window`, `over_admission` and `excess` are
/// when measured against this rule alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RuleMetrics {
    /// The rule, as `max_requests/window`: `10/1s`.
    pub rule: String,
    /// The most cost admitted for one key inside any half-open window `(t − W, t]` of
    /// this rule's window.
    pub max_in_window: u64,
    /// A key that reached `max_in_window` first.
    pub worst_key: Option<String>,
    /// `max_in_window / max_requests` of this rule.
    pub over_admission: f64,
    /// Admissions after which the key's count in this rule's window exceeded its limit.
    pub excess: u64,
    /// This rule's `max_requests`.
    pub limit_max_requests: u64,
    /// Its window, in ns.
    pub limit_window_ns: u64,
    /// Its burst.
    pub limit_burst: u64,
}

impl RuleMetrics {
    /// True when `self` over-admits strictly more than `other`, compared exactly:
    /// `max_a / limit_a > max_b / limit_b` as `max_a · limit_b > max_b · limit_a`.
    pub fn exceeds(&self, other: &RuleMetrics) -> bool {
        let a = u128::from(self.max_in_window) * u128::from(other.limit_max_requests);
        let b = u128::from(other.max_in_window) * u128::from(self.limit_max_requests);
        a > b
    }
}

impl Metrics {
    /// The rule over-admitted most (exactly compared; the first declared of equals),
    /// `None` when there are no per-rule metrics.
    pub fn worst_rule(&self) -> Option<&RuleMetrics> {
        let mut worst: Option<&RuleMetrics> = None;
        for r in &self.rules {
            if worst.is_none_or(|w| r.exceeds(w)) {
                worst = Some(r);
            }
        }
        worst
    }

    /// This row with its window metrics (`rule`, `max_in_window`, `worst_key`,
    /// `over_admission`, `excess`, `limit_*`) replaced by `rule`'s.
    pub fn for_rule(&self, rule: &RuleMetrics) -> Metrics {
        Metrics {
            rule: rule.rule.clone(),
            max_in_window: rule.max_in_window,
            worst_key: rule.worst_key.clone(),
            over_admission: rule.over_admission,
            excess: rule.excess,
            limit_max_requests: rule.limit_max_requests,
            limit_window_ns: rule.limit_window_ns,
            limit_burst: rule.limit_burst,
            ..self.clone()
        }
    }

    /// The rows `summary.csv` and `summary.json` write for this algorithm: one per
    /// rule, in the scenario's order (with one rule, this row itself).
    pub fn rule_rows(&self) -> Vec<Cow<'_, Metrics>> {
        if self.rules.len() <= 1 {
            return vec![Cow::Borrowed(self)];
        }
        self.rules
            .iter()
            .map(|r| Cow::Owned(self.for_rule(r)))
            .collect()
    }
}

/// The nearest-rank percentiles of a shaper's delays, exact: p50, p99 and the maximum
/// of `delays` (sorted here), `None` each when there are none.
pub(crate) fn delay_percentiles(delays: &mut [u64]) -> [Option<u64>; 3] {
    delays.sort_unstable();
    let n = delays.len() as u64;
    let rank = |percent: u64| -> Option<u64> {
        // Nearest rank: the ⌈p·n/100⌉-th smallest, at least the first.
        let r = (percent * n).div_ceil(100).max(1);
        delays.get(usize::try_from(r - 1).ok()?).copied()
    };
    if n == 0 {
        return [None; 3];
    }
    [rank(50), rank(99), delays.last().copied()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(max: u64, limit: u64) -> RuleMetrics {
        RuleMetrics {
            rule: format!("{limit}/x"),
            max_in_window: max,
            limit_max_requests: limit,
            ..RuleMetrics::default()
        }
    }

    #[test]
    fn the_worst_rule_is_the_largest_exact_ratio_and_the_first_of_equals() {
        let m = Metrics {
            rules: vec![rule(10, 10), rule(31, 30), rule(62, 60), rule(3, 1)],
            ..Metrics::default()
        };
        assert_eq!(m.worst_rule().map(|r| r.rule.as_str()), Some("1/x"));
        let m = Metrics {
            rules: vec![rule(10, 10), rule(31, 30), rule(62, 60)],
            ..Metrics::default()
        };
        // 31/30 and 62/60 are equal: the first declared wins; 10/10 is below both.
        assert_eq!(m.worst_rule().map(|r| r.rule.as_str()), Some("30/x"));
        assert_eq!(Metrics::default().worst_rule(), None);
    }

    #[test]
    fn one_rule_is_one_row_and_several_are_one_row_each() {
        let mut m = Metrics {
            algorithm: "gcra".into(),
            allowed: 7,
            rules: vec![rule(5, 5)],
            ..Metrics::default()
        };
        assert!(matches!(m.rule_rows()[..], [Cow::Borrowed(_)]));
        m.rules.push(rule(9, 4));
        let rows = m.rule_rows();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[1].max_in_window, rows[1].limit_max_requests), (9, 4));
        assert_eq!((rows[1].allowed, rows[1].algorithm.as_str()), (7, "gcra"));
    }

    #[test]
    fn delay_percentiles_are_nearest_rank_and_exact() {
        let mut delays: Vec<u64> = (1..=200).rev().collect();
        assert_eq!(
            delay_percentiles(&mut delays),
            [Some(100), Some(198), Some(200)]
        );
        assert_eq!(delay_percentiles(&mut [7]), [Some(7), Some(7), Some(7)]);
        assert_eq!(delay_percentiles(&mut []), [None, None, None]);
    }
}
