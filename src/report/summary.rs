//! The per-algorithm summary row shared by the terminal table and `summary.csv/json`.
//!
//! A plain data carrier filled by the glue layer from simulator metrics; it must not
//! compute metrics itself beyond the two display ratios in [`SummaryRow::new`].

use serde::{Serialize, Serializer};

use crate::time::Nanos;

/// One algorithm's results as the terminal shows them: one table row, and as CSV or
/// JSON (through [`write_summary`](super::write_summary)) one row of the table's
/// columns.
///
/// Counts are exact integers; the two ratios are floats because they are only shown.
/// A ratio that cannot be computed (no requests, zero limit) is NaN and is written as
/// an empty CSV field / JSON `null` and shown as `n/a`. Metrics that do not apply to a
/// run (no sliding-log reference, no denials to judge `retry_after` by) are `None`.
///
/// [`never_fits`](Self::never_fits) and [`retry`](Self::retry) are shown under the
/// table, not in it, and are not serialised: the `summary.csv` a run writes comes
/// from `sim::Metrics`, which has them as columns of their own.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SummaryRow {
    /// Registry name of the algorithm.
    pub algorithm: String,
    /// Admitted decisions.
    pub allowed: u64,
    /// Denied decisions.
    pub denied: u64,
    /// Clients that saw at least one denial (the metric `sweep` ranks on); `None` when
    /// not known. Not serialised: `summary.csv` has it from `sim::Metrics`.
    #[serde(skip)]
    pub clients_denied: Option<u64>,
    /// `allowed / (allowed + denied)`.
    #[serde(serialize_with = "finite_or_none")]
    pub allow_rate: f64,
    /// Largest admitted count (by cost) in any trailing window of one key.
    pub max_in_window: u64,
    /// The rule's `max_requests`.
    pub limit: u64,
    /// `max_in_window / limit`; above 1.0 the algorithm let more through than the rule.
    #[serde(serialize_with = "finite_or_none")]
    pub over_admission: f64,
    /// Admissions at which the trailing-window count exceeded the limit.
    pub excess: u64,
    /// Allowed here but denied by the exact sliding log on the same stream.
    pub false_allow: Option<u64>,
    /// Denied here but allowed by the exact sliding log.
    pub false_deny: Option<u64>,
    /// Denials whose `retry_after` was exactly the earliest passing wait.
    pub retry_exact: Option<u64>,
    /// Denials whose `retry_after` was too short (a wasted retry).
    pub retry_early: Option<u64>,
    /// Denials whose `retry_after` was too long (lost capacity).
    pub retry_late: Option<u64>,
    /// Requests whose cost exceeds the algorithm's capacity: denied, and never retried.
    #[serde(skip)]
    pub never_fits: u64,
    /// Retry clients only: what became of the requests.
    #[serde(skip)]
    pub retry: Option<RetryOutcome>,
}

/// With retry clients, what became of one algorithm's requests: with
/// [`SummaryRow::never_fits`], `succeeded + gave_up + unfinished` accounts for every
/// request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryOutcome {
    /// Requests eventually admitted.
    pub succeeded: u64,
    /// Requests denied on their last allowed attempt.
    pub gave_up: u64,
    /// Requests whose next retry would fall after the simulation ends.
    pub unfinished: u64,
    /// Retries that were denied again.
    pub wasted_retries: u64,
    /// Time from arrival to admission: median, 99th percentile and longest; `None`
    /// when nothing succeeded.
    pub latency: Option<[Nanos; 3]>,
}

/// An over-admission ratio for people: `1.60×`. Two decimals, unless they would show
/// a whole number the ratio is not — 100,001 admitted under a limit of 100,000 is not
/// `1.00×` (the limit held), and 199,999 of 100,000 is not the fixed window's exact
/// `2.00×` — then as many decimals as it takes (up to 9). `n/a` when undefined.
pub fn format_ratio(ratio: f64) -> String {
    if !ratio.is_finite() {
        return "n/a".to_string();
    }
    let mut text = format!("{ratio:.2}");
    for decimals in 3..=9 {
        let whole = text.trim_end_matches('0').ends_with('.');
        if !whole || text.parse::<f64>() == Ok(ratio) {
            break;
        }
        text = format!("{ratio:.decimals$}");
    }
    text + "×"
}

impl SummaryRow {
    /// A row with the counts and both ratios filled in, optional metrics `None`.
    pub fn new(
        algorithm: impl Into<String>,
        allowed: u64,
        denied: u64,
        max_in_window: u64,
        limit: u64,
    ) -> SummaryRow {
        SummaryRow {
            algorithm: algorithm.into(),
            allowed,
            denied,
            clients_denied: None,
            allow_rate: ratio(allowed, allowed.saturating_add(denied)),
            max_in_window,
            limit,
            over_admission: ratio(max_in_window, limit),
            excess: 0,
            false_allow: None,
            false_deny: None,
            retry_exact: None,
            retry_early: None,
            retry_late: None,
            never_fits: 0,
            retry: None,
        }
    }

    /// True when the algorithm admitted more than the limit in some window.
    pub fn is_over_admitting(&self) -> bool {
        self.over_admission > 1.0
    }
}

/// `num / den` as a float, NaN when `den` is zero.
pub fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        f64::NAN
    } else {
        num as f64 / den as f64
    }
}

fn finite_or_none<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.is_finite() {
        serializer.serialize_some(value)
    } else {
        serializer.serialize_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_nan_instead_of_dividing_by_zero() {
        let row = SummaryRow::new("gcra", 0, 0, 0, 0);
        assert!(row.allow_rate.is_nan());
        assert!(row.over_admission.is_nan());
        assert!(!row.is_over_admitting());
        let json = serde_json::to_value(&row).unwrap();
        assert!(json["over_admission"].is_null());
    }

    #[test]
    fn fixed_window_at_twice_the_limit_is_over_admitting() {
        let row = SummaryRow::new("fixed_window", 60, 30, 10, 5);
        assert_eq!(row.over_admission, 2.0);
        assert!(row.is_over_admitting());
        assert!(!SummaryRow::new("sliding_window_log", 30, 60, 5, 5).is_over_admitting());
    }

    #[test]
    fn a_ratio_never_rounds_to_a_whole_number_it_is_not() {
        let cases = [
            (ratio(100_001, 100_000), "1.00001×"),
            (ratio(199_999, 100_000), "1.99999×"),
            (ratio(1_004, 1_000), "1.004×"),
            (ratio(2, 1), "2.00×"),
            (ratio(1, 1), "1.00×"),
            (ratio(8, 5), "1.60×"),
            (ratio(2, 3), "0.67×"),
            (ratio(1, 0), "n/a"),
        ];
        for (value, shown) in cases {
            assert_eq!(format_ratio(value), shown, "{value}");
        }
    }
}
