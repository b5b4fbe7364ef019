//! The measurements, exactly as docs/design.md §6 defines them, and their serialisable forms.
//!
//! Everything here observes decisions; nothing here makes one. The trailing-window
//! count is exact (`window`: one FIFO of the admissions still inside the window, with a
//! running count per key; never sampled); only the retry-latency percentiles are
//! bucketed, with a stated bound.

use serde::Serialize;

use crate::time::Nanos;

mod rules;
mod series;
mod window;

pub use rules::RuleMetrics;
pub(crate) use rules::delay_percentiles;
pub(crate) use series::SeriesThinner;
pub(crate) use window::{Lane, Lanes, MAX_LANES, WindowTracker};

/// One algorithm's results: flat, so it maps 1:1 to a `summary.csv` row (one per rule,
/// through [`Metrics::rule_rows`], with several `[[limit]]`s).
///
/// Counts are requests (attempts), not cost units, except `max_in_window`, which is
/// by cost as docs/design.md §6 defines it. Fields that do not apply to the client model are
/// `None` (an empty CSV cell, `null` in JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Registry name.
    pub algorithm: String,
    /// Arrivals (first attempts).
    pub requests: u64,
    /// Decisions made: arrivals plus retries.
    pub attempts: u64,
    /// Attempts admitted.
    pub allowed: u64,
    /// Attempts denied.
    pub denied: u64,
    /// `allowed / attempts`; `None` (an empty CSV cell, JSON `null`) when there were
    /// no attempts.
    pub allow_rate: Option<f64>,
    /// Clients (keys) that saw at least one denial: how many people a limit would
    /// have sent a 429, which tuning a limit weighs against over-admission.
    pub clients_denied: u64,
    /// Requests denied at least once (their first attempt: a retry only follows a
    /// denial), the exact count behind `requests_denied_share`. Not a column of its
    /// own: with open clients it is `denied`.
    #[serde(skip)]
    pub requests_denied: u64,
    /// `requests_denied / requests`: the share of requests that got at least one
    /// denial; `None` (empty, `null`) without requests.
    pub requests_denied_share: Option<f64>,
    /// The most cost admitted for one key inside any half-open window `(t − W, t]`.
    pub max_in_window: u64,
    /// A key that reached `max_in_window`: the one `window_counts` follows (`None` if
    /// nothing passed).
    pub worst_key: Option<String>,
    /// `max_in_window / max_requests`: ≤ 1.0 means the limit held everywhere.
    pub over_admission: f64,
    /// Admissions after which the key's trailing-window count exceeded the limit.
    pub excess: u64,
    /// Open clients only: allowed here but denied by the sliding log on the same stream.
    pub false_allow: Option<u64>,
    /// Open clients only: denied here but allowed by the sliding log.
    pub false_deny: Option<u64>,
    /// Denials whose `retry_after` pointed at exactly the earliest passing instant.
    pub retry_after_exact: u64,
    /// Denials whose `retry_after` was too short: a retry then would be wasted.
    pub retry_after_too_early: u64,
    /// Denials whose `retry_after` was too long: capacity left unused.
    pub retry_after_too_late: u64,
    /// As `retry_after_exact`, for the HTTP header (whole seconds, rounded up, ≥ 1).
    pub retry_after_secs_exact: u64,
    /// As `retry_after_too_early`, for the rounded-up header.
    pub retry_after_secs_too_early: u64,
    /// As `retry_after_too_late`, for the rounded-up header.
    pub retry_after_secs_too_late: u64,
    /// Requests whose cost exceeds the capacity: denied, and never retried.
    pub never_fits: u64,
    /// Retry clients: requests eventually admitted. With `gave_up`, `unfinished` and
    /// `never_fits` (never retried) this accounts for every request.
    pub succeeded: Option<u64>,
    /// Retry clients: requests denied on their last allowed attempt.
    pub gave_up: Option<u64>,
    /// Retry clients: requests whose next retry would fall after the simulation ends.
    pub unfinished: Option<u64>,
    /// Retry clients: retries that were denied again.
    pub wasted_retries: Option<u64>,
    /// Retry clients: median time from arrival to admission, in ns (see
    /// [`LatencyHistogram`] for the precision); `None` also when nothing succeeded.
    pub latency_p50_ns: Option<u64>,
    /// Retry clients: 99th percentile of the same, in ns.
    pub latency_p99_ns: Option<u64>,
    /// Retry clients: the longest, exact, in ns.
    pub latency_max_ns: Option<u64>,
    /// The most keys the limiter held at once (idle keys are evicted periodically).
    pub peak_keys: u64,
    /// The largest per-key state seen at the periodic idle-key sweeps: `size_of` the
    /// state plus its heap (the log's entries), in bytes. A peak between two sweeps
    /// can be missed. `None` when the states lived outside this process (a run on
    /// Redis), where this process measures nothing.
    pub state_bytes_per_key: Option<u64>,
    /// Admissions a shaper (`nginx`, `tower`) delayed; 0 for every other algorithm.
    pub delayed: u64,
    /// Median delay of the delayed admissions, in ns, exact (nearest rank); `None`
    /// when none was delayed.
    pub delay_p50_ns: Option<u64>,
    /// 99th percentile of the same, exact.
    pub delay_p99_ns: Option<u64>,
    /// The longest delay, exact.
    pub delay_max_ns: Option<u64>,
    /// The rule the window metrics are measured against, as `max_requests/window`
    /// (`10/1s`); with several `[[limit]]`s, `summary.csv` has one row per rule.
    pub rule: String,
    /// The limit these numbers are measured against (the scenario's first): its
    /// `max_requests`, so a summary row says what "over" meant.
    pub limit_max_requests: u64,
    /// Its window, in nanoseconds.
    pub limit_window_ns: u64,
    /// Its burst.
    pub limit_burst: u64,
    /// Every rule's window metrics, in the scenario's order (the first is the one the
    /// fields above measure); written as rows of their own, not as a column.
    #[serde(skip)]
    pub rules: Vec<RuleMetrics>,
}

/// The trailing-window admitted count at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WindowSample {
    /// The instant, in ns since the start.
    #[serde(rename = "time_ns", serialize_with = "super::serialize_nanos")]
    pub time: Nanos,
    /// Cost admitted in `(time − W, time]` for the worst key.
    pub count: u64,
}

/// Allowed and denied attempts per time bucket: enough to draw a timeline.
/// Bucket `i` covers `[i·bucket, (i+1)·bucket)`.
///
/// The only bucketing a run's decisions get: the timeline chart draws these buckets
/// (or one tick per non-empty bucket, for small runs) and does not re-bin them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Timeline {
    /// Bucket width.
    #[serde(rename = "bucket_ns", serialize_with = "super::serialize_nanos")]
    pub bucket: Nanos,
    /// Allowed attempts per bucket.
    pub allowed: Vec<u64>,
    /// Denied attempts per bucket.
    pub denied: Vec<u64>,
}

/// At most this many timeline buckets.
pub const TIMELINE_BUCKETS: u64 = 2_000;
/// At most this many window-count samples: each bucket's first, low, peak and last
/// point once a series is too long to keep whole (see `metrics/series.rs`).
pub const WINDOW_SAMPLES: u64 = 20_000;

impl Timeline {
    pub(crate) fn new(duration: Nanos) -> Timeline {
        let bucket = duration.as_u64().div_ceil(TIMELINE_BUCKETS).max(1);
        let n = duration.as_u64().div_ceil(bucket) as usize;
        Timeline {
            bucket: Nanos::new(bucket),
            allowed: vec![0; n],
            denied: vec![0; n],
        }
    }

    /// Counts one attempt in bucket `i` (from a [`BucketCursor`] over this timeline's
    /// bucket width).
    pub(crate) fn record_in(&mut self, i: usize, allowed: bool) {
        let column = if allowed {
            &mut self.allowed
        } else {
            &mut self.denied
        };
        if let Some(c) = column.get_mut(i) {
            *c += 1;
        }
    }
}

/// Maps non-decreasing instants to fixed-width buckets with one comparison per call
/// instead of a division (instants that go back are still mapped exactly).
#[derive(Debug)]
pub(crate) struct BucketCursor {
    width: u64,
    index: usize,
    /// The current bucket is `[start, start + width)` (`start = index · width`, which
    /// cannot overflow where `start + width` can).
    start: u64,
}

impl BucketCursor {
    pub(crate) fn new(width: Nanos) -> BucketCursor {
        BucketCursor {
            width: width.as_u64().max(1),
            index: 0,
            start: 0,
        }
    }

    /// The bucket holding `time`: `time / width`.
    pub(crate) fn index(&mut self, time: Nanos) -> usize {
        let t = time.as_u64();
        if t < self.start || t - self.start >= self.width {
            let i = t / self.width;
            self.index = i as usize;
            self.start = i * self.width;
        }
        self.index
    }
}

/// A log-linear histogram of nanosecond latencies in bounded memory.
///
/// Values below 128 ns are exact; above, each power of two is split into 64 buckets,
/// so a percentile is reported as its bucket's upper bound: never understated, and at
/// most 1/64 (1.6 %) above the true value. The maximum is exact.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            counts: vec![0; 128 + 57 * 64],
            total: 0,
            max: 0,
        }
    }
}

impl LatencyHistogram {
    fn index(v: u64) -> usize {
        if v < 128 {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros() as usize; // ≥ 7
        let mantissa = (v >> (exp - 6)) as usize; // 64..=127
        128 + (exp - 7) * 64 + (mantissa - 64)
    }

    fn upper(index: usize) -> u64 {
        if index < 128 {
            return index as u64;
        }
        let exp = (index - 128) / 64 + 7;
        let mantissa = ((index - 128) % 64 + 64) as u128;
        let upper = ((mantissa + 1) << (exp - 6)) - 1;
        u64::try_from(upper).unwrap_or(u64::MAX)
    }

    /// Records one latency.
    pub fn record(&mut self, v: Nanos) {
        let v = v.as_u64();
        self.counts[Self::index(v)] += 1;
        self.total += 1;
        self.max = self.max.max(v);
    }

    /// The nearest-rank `q`-quantile (0 < q ≤ 1), or `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Self::upper(i).min(self.max));
            }
        }
        Some(self.max)
    }

    /// The exact maximum, or `None` when empty.
    pub fn max(&self) -> Option<u64> {
        (self.total > 0).then_some(self.max)
    }
}

/// How a reported wait compares with the exact earliest passing instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Honesty {
    Exact,
    TooEarly,
    TooLate,
}

impl Honesty {
    pub(crate) fn judge(reported: u128, earliest: u128) -> Honesty {
        match reported.cmp(&earliest) {
            std::cmp::Ordering::Equal => Honesty::Exact,
            std::cmp::Ordering::Less => Honesty::TooEarly,
            std::cmp::Ordering::Greater => Honesty::TooLate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeline_counts_allowed_and_denied_attempts_in_their_own_buckets() {
        let mut timeline = Timeline::new(Nanos::from_secs(2));
        assert_eq!(
            timeline.bucket,
            Nanos::from_millis(1),
            "2 s in 2 000 buckets"
        );
        let mut cursor = BucketCursor::new(timeline.bucket);
        for (ms, allowed) in [(0, true), (0, true), (0, false), (5, false), (1_999, true)] {
            let i = cursor.index(Nanos::from_millis(ms));
            timeline.record_in(i, allowed);
        }
        timeline.record_in(2_000, true); // past the end: dropped, not a panic
        let nonzero = |v: &[u64]| -> Vec<(usize, u64)> {
            v.iter()
                .copied()
                .enumerate()
                .filter(|&(_, c)| c > 0)
                .collect()
        };
        assert_eq!(nonzero(&timeline.allowed), [(0, 2), (1_999, 1)]);
        assert_eq!(nonzero(&timeline.denied), [(0, 1), (5, 1)]);
    }

    #[test]
    fn the_bucket_cursor_agrees_with_division_forwards_backwards_and_at_the_edges() {
        for width in [1, 3, 10, 1_000_000_007] {
            let mut cursor = BucketCursor::new(Nanos::new(width));
            let times = [
                0,
                1,
                2,
                9,
                10,
                11,
                29,
                30,
                5,
                0,
                1_000_000_006,
                1_000_000_007,
            ]
            .into_iter()
            // The top bucket is cut short by u64::MAX; going back from it must still
            // land in the right bucket.
            .chain([u64::MAX - 1, u64::MAX, u64::MAX - width, u64::MAX, 7]);
            for t in times {
                assert_eq!(
                    cursor.index(Nanos::new(t)),
                    (t / width) as usize,
                    "width {width}, t {t}"
                );
            }
        }
    }

    #[test]
    fn every_small_latency_lands_in_a_bucket_whose_upper_bound_holds_it() {
        // Exact below 128; from 128 on, buckets of 2, 4, 8, ... ns; never understated.
        for v in 0..70_000u64 {
            let i = LatencyHistogram::index(v);
            let upper = LatencyHistogram::upper(i);
            assert!(
                upper >= v && upper - v <= v / 64,
                "{v}: bucket {i}, upper {upper}"
            );
            if v < 128 {
                assert_eq!(upper, v, "exact below 128");
            }
            if v > 0 {
                let previous = LatencyHistogram::index(v - 1);
                assert!(
                    i == previous || i == previous + 1,
                    "{v}: buckets are contiguous"
                );
            }
        }
        assert_eq!(LatencyHistogram::upper(LatencyHistogram::index(128)), 129);
        assert_eq!(LatencyHistogram::upper(LatencyHistogram::index(256)), 259);
    }

    #[test]
    fn histogram_percentiles_report_the_bucket_upper_bound_and_max_is_exact() {
        let mut h = LatencyHistogram::default();
        for v in [1_000, 1_000, 1_000, 5_000_000] {
            h.record(Nanos::new(v));
        }
        // 1 000 ns falls in the 8-ns bucket 1 000..=1 007.
        assert_eq!(h.quantile(0.5), Some(1_007));
        assert_eq!(h.quantile(0.75), Some(1_007));
        assert_eq!(h.quantile(0.99), Some(5_000_000), "capped by the exact max");
        assert_eq!(h.max(), Some(5_000_000));
        assert_eq!(LatencyHistogram::default().max(), None);
    }

    #[test]
    fn histogram_buckets_bound_the_true_value_from_above_within_a_64th() {
        let mut v: u64 = 1;
        while v < u64::MAX / 3 {
            let i = LatencyHistogram::index(v);
            let upper = LatencyHistogram::upper(i);
            assert!(upper >= v, "bucket {i} upper {upper} < {v}");
            assert!(
                upper - v <= v / 64,
                "bucket {i} upper {upper} too far above {v}"
            );
            v = v * 3 + 1;
        }
        assert_eq!(LatencyHistogram::index(u64::MAX), 128 + 57 * 64 - 1);
    }

    #[test]
    fn histogram_quantiles_are_nearest_rank() {
        let mut h = LatencyHistogram::default();
        for v in 1..=100 {
            h.record(Nanos::new(v));
        }
        assert_eq!(h.quantile(0.5), Some(50));
        assert_eq!(h.quantile(0.99), Some(99));
        assert_eq!(h.max(), Some(100));
        assert_eq!(LatencyHistogram::default().quantile(0.5), None);
    }
}
