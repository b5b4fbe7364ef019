//! `--goal`: a condition on one summary metric (`over_admission<=1.0`) that a sweep's
//! rows either meet or not.
//!
//! Goals are judged exactly: every metric is a ratio of two integer counts, the goal's
//! value an exact decimal (at most nine places), and the comparison is made on the
//! cross products in integers, so `over_admission<=1.1` holds for 110 admitted under a
//! limit of 100 however floats would round. A goal reads metrics; it computes none.

use std::cmp::Ordering;
use std::fmt;

use crate::sim::Metrics;
use crate::time::Nanos;

/// The metrics a goal can name (each a ratio of counts, see `ratio_of`).
pub const GOAL_METRICS: [&str; 9] = [
    "over_admission",
    "clients_denied",
    "requests_denied_share",
    "false_allow",
    "false_deny",
    "excess",
    "max_in_window",
    "denied",
    "allow_rate",
];

/// How a metric is compared with the goal's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// `<=`
    AtMost,
    /// `<`
    Below,
    /// `>=`
    AtLeast,
    /// `>`
    Above,
}

impl Comparison {
    fn symbol(self) -> &'static str {
        match self {
            Comparison::AtMost => "<=",
            Comparison::Below => "<",
            Comparison::AtLeast => ">=",
            Comparison::Above => ">",
        }
    }

    fn holds(self, order: Ordering) -> bool {
        match self {
            Comparison::AtMost => order != Ordering::Greater,
            Comparison::Below => order == Ordering::Less,
            Comparison::AtLeast => order != Ordering::Less,
            Comparison::Above => order == Ordering::Greater,
        }
    }
}

/// One condition: `METRIC OP VALUE`, e.g. `over_admission<=1.0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Goal {
    metric: &'static str,
    comparison: Comparison,
    /// The value × 10⁹, exactly (parsed as decimal, like seconds into nanoseconds).
    value_giga: u64,
}

/// Why a goal could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}`: {reason}")]
pub struct GoalError {
    text: String,
    reason: String,
}

impl Goal {
    /// Parses `METRIC OP VALUE` (`<=`, `<`, `>=`, `>`; spaces allowed around each part;
    /// the value a non-negative decimal with at most nine places).
    pub fn parse(text: &str) -> Result<Goal, GoalError> {
        let error = |reason: String| GoalError {
            text: text.to_string(),
            reason,
        };
        let at = text.find(['<', '>']).ok_or_else(|| {
            error("expected METRIC<=VALUE (or <, >=, >), e.g. over_admission<=1.0".to_string())
        })?;
        let (name, rest) = (text[..at].trim(), &text[at..]);
        let (comparison, value) = [
            ("<=", Comparison::AtMost),
            (">=", Comparison::AtLeast),
            ("<", Comparison::Below),
            (">", Comparison::Above),
        ]
        .into_iter()
        .find_map(|(op, c)| rest.strip_prefix(op).map(|v| (c, v.trim())))
        .expect("rest starts with < or >");
        let metric = GOAL_METRICS
            .into_iter()
            .find(|m| *m == name)
            .ok_or_else(|| {
                error(format!(
                    "unknown metric `{name}`; expected one of {}",
                    GOAL_METRICS.join(", ")
                ))
            })?;
        let value_giga = Nanos::parse_decimal_secs(value)
            .map_err(|_| {
                error(format!(
                    "`{value}` is not a number; expected a non-negative decimal such as 1.0 \
                     or 0.05 (at most nine decimals)"
                ))
            })?
            .as_u64();
        Ok(Goal {
            metric,
            comparison,
            value_giga,
        })
    }

    /// The metric the goal names.
    pub fn metric(&self) -> &'static str {
        self.metric
    }

    /// Whether `m` meets the goal; `None` when the metric does not apply to the row
    /// (no reference with retry clients, no requests), which meets no goal.
    pub fn is_met_by(&self, m: &Metrics) -> Option<bool> {
        let (num, den) = ratio_of(self.metric, m)?;
        if den == 0 {
            return None;
        }
        // num / den  vs  value_giga / 10⁹, exactly.
        let left = u128::from(num) * 1_000_000_000;
        let right = u128::from(self.value_giga) * u128::from(den);
        Some(self.comparison.holds(left.cmp(&right)))
    }
}

impl fmt::Display for Goal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = Nanos::new(self.value_giga).to_decimal_secs();
        write!(f, "{}{}{value}", self.metric, self.comparison.symbol())
    }
}

/// `metric` of `m` as `(numerator, denominator)` of integer counts.
fn ratio_of(metric: &str, m: &Metrics) -> Option<(u64, u64)> {
    Some(match metric {
        "over_admission" => (m.max_in_window, m.limit_max_requests),
        "clients_denied" => (m.clients_denied, 1),
        "requests_denied_share" => (m.requests_denied, m.requests),
        "false_allow" => (m.false_allow?, 1),
        "false_deny" => (m.false_deny?, 1),
        "excess" => (m.excess, 1),
        "max_in_window" => (m.max_in_window, 1),
        "denied" => (m.denied, 1),
        "allow_rate" => (m.allowed, m.attempts),
        _ => unreachable!("goal metrics come from GOAL_METRICS"),
    })
}

/// Whether `m` meets every goal (`true` for no goals); a goal whose metric does not
/// apply is not met.
pub fn meets_all(goals: &[Goal], m: &Metrics) -> bool {
    goals.iter().all(|g| g.is_met_by(m) == Some(true))
}

/// The goals as one line: `over_admission<=1 and clients_denied<=2`.
pub fn describe(goals: &[Goal]) -> String {
    let texts: Vec<String> = goals.iter().map(Goal::to_string).collect();
    texts.join(" and ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(max_in_window: u64, limit: u64) -> Metrics {
        Metrics {
            max_in_window,
            limit_max_requests: limit,
            requests: 10,
            requests_denied: 1,
            ..Metrics::default()
        }
    }

    #[test]
    fn goals_compare_exact_ratios() {
        let g = Goal::parse("over_admission <= 1.1").unwrap();
        assert_eq!(g.to_string(), "over_admission<=1.1");
        assert_eq!(g.is_met_by(&metrics(110, 100)), Some(true));
        assert_eq!(g.is_met_by(&metrics(110_000_001, 100_000_000)), Some(false));
        let g = Goal::parse("over_admission<1").unwrap();
        assert_eq!(g.is_met_by(&metrics(100, 100)), Some(false));
        assert_eq!(g.is_met_by(&metrics(99, 100)), Some(true));
        let g = Goal::parse("requests_denied_share>=0.1").unwrap();
        assert_eq!(g.is_met_by(&metrics(1, 1)), Some(true));
        let g = Goal::parse("requests_denied_share>0.1").unwrap();
        assert_eq!(g.is_met_by(&metrics(1, 1)), Some(false));
    }

    #[test]
    fn a_metric_that_does_not_apply_meets_no_goal() {
        let g = Goal::parse("false_deny<=0").unwrap();
        assert_eq!(g.is_met_by(&Metrics::default()), None);
        assert!(!meets_all(&[g], &Metrics::default()));
        assert!(meets_all(&[], &Metrics::default()));
    }

    #[test]
    fn bad_goals_name_the_text_and_what_was_expected() {
        for (text, says) in [
            ("over_admission", "expected METRIC<=VALUE"),
            (
                "speed<=1",
                "unknown metric `speed`; expected one of over_admission",
            ),
            ("over_admission<=fast", "`fast` is not a number"),
            ("over_admission<=-1", "`-1` is not a number"),
            ("over_admission<=", "`` is not a number"),
            ("over_admission=<1", "unknown metric `over_admission=`"),
        ] {
            let e = Goal::parse(text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("`{text}`: ")), "{e}");
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
