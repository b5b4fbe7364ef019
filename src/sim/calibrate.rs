//! The calibrator: what "N per W", nominally configured, really admits with each
//! algorithm, and a *strict* configuration of the same algorithm that never admits more
//! than N in any window — verified by the worst-case search, not just by the formula.
//!
//! Measures only; writes nothing.

use serde::Serialize;

use super::worst_case::{SearchError, SearchOptions, search};
use super::{NoopSink, RunOptions, Scenario, SimError};
use crate::registry::{Entry, Registry};
use crate::rule::Rule;
use crate::time::{NANOS_PER_SEC, Nanos};

/// One algorithm's calibration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// Registry name.
    pub algorithm: String,
    /// The nominal rule's `max_requests` (N).
    pub limit: u64,
    /// The rule's window (W), in nanoseconds.
    pub window_ns: u64,
    /// Worst case of the nominal rule, analytic.
    pub nominal_analytic: Option<u64>,
    /// Worst case of the nominal rule, found by the search.
    pub nominal_worst: u64,
    /// Most admitted in one window on Poisson traffic at the limit rate (one client).
    pub poisson_1x: u64,
    /// The same at twice the limit rate.
    pub poisson_2x: u64,
    /// The strict configuration, e.g. `50/60s (burst 50)`; empty when none exists.
    pub strict: String,
    /// Its `max_requests`.
    pub strict_max_requests: Option<u64>,
    /// Its `burst`, for an algorithm whose capacity is the burst (the buckets and
    /// GCRA); `None` for the others, which have no burst to set.
    pub strict_burst: Option<u64>,
    /// Its worst case, found by the search (≤ `limit` when the calibration is right).
    pub strict_worst: Option<u64>,
}

/// A rule for `algorithm` whose worst case in any window of the same length is at most
/// `rule.max_requests()`, keeping as much throughput as the algorithm allows; `None` if
/// no such rule exists (a fixed window of 1 over a window of 2 ns or more: two requests
/// straddling a boundary always pass).
///
/// The largest `N'` whose worst case ([`Entry::worst_case`]) is at most `N`, by binary search (every
/// bound grows with `N'`), with the burst `B = ⌈N/2⌉` for the algorithms whose capacity
/// is the burst (the buckets and GCRA: room for a burst and a steady rate) and `B = N'`
/// for the others; `None` too for an algorithm with no known worst case. For windows of at least
/// `2N` ns this is:
/// - buckets and GCRA: `B + N' − 1 ≤ N`, `N' = N − B + 1`;
/// - sliding window counter: `2N' − 1 ≤ N`, `N' = ⌊(N + 1)/2⌋`;
/// - fixed window: `2N' ≤ N`, `N' = ⌊N/2⌋`;
/// - sliding log: `N`, already exact.
pub fn strict_rule(algorithm: &Entry, rule: &Rule) -> Option<Rule> {
    let n = rule.max_requests();
    algorithm.worst_case_formula()?;
    let bucket_burst = algorithm.uses_burst().then(|| n.div_ceil(2));
    let with = |max: u64| {
        Rule::new(max, rule.window())
            .and_then(|r| r.with_burst(bucket_burst.unwrap_or(max)))
            .ok()
    };
    let strict = |max: u64| {
        with(max)
            .and_then(|r| algorithm.worst_case(&r))
            .is_some_and(|bound| bound <= n)
    };
    if !strict(1) {
        return None;
    }
    // Invariant: `lo` is strict; nothing above `hi` is.
    let (mut lo, mut hi) = (1, n);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if strict(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    with(lo)
}

/// Calibrates the algorithm called `algorithm` in `registry` for the nominal `rule`.
pub fn calibrate(
    registry: &Registry,
    algorithm: &str,
    rule: Rule,
    options: SearchOptions,
) -> Result<Calibration, CalibrateError> {
    let entry = registry.entry(algorithm).map_err(SearchError::from)?;
    let nominal = search(registry, algorithm, rule, options)?;
    let poisson =
        |factor: u64| poisson_max_in_window(registry, algorithm, &rule, factor, options.seed);
    let strict = strict_rule(entry, &rule);
    let strict_worst = match strict {
        Some(r) => Some(search(registry, algorithm, r, options)?.max_in_window),
        None => None,
    };
    Ok(Calibration {
        algorithm: algorithm.to_string(),
        limit: rule.max_requests(),
        window_ns: rule.window().as_u64(),
        nominal_analytic: nominal.analytic,
        nominal_worst: nominal.max_in_window,
        poisson_1x: poisson(1)?,
        poisson_2x: poisson(2)?,
        strict: strict.map_or_else(String::new, |r| r.to_string()),
        strict_max_requests: strict.map(|r| r.max_requests()),
        strict_burst: strict.filter(|_| entry.uses_burst()).map(|r| r.burst()),
        strict_worst,
    })
}

/// Why a calibration failed.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// An unknown algorithm, or a limit too large to search.
    #[error(transparent)]
    Search(#[from] SearchError),
    /// The Poisson simulation failed (e.g. a rate too small to express).
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The generated scenario was rejected (a bug, reported rather than hidden).
    #[error(transparent)]
    Scenario(#[from] super::ScenarioError),
}

/// Windows simulated per Poisson run: long enough for the busiest window to show,
/// but never more than about [`POISSON_ARRIVALS`] arrivals, so large limits stay fast.
const POISSON_WINDOWS: u64 = 200;
/// The most arrivals a Poisson run aims for (at 2× the rate), with at least 10 windows.
const POISSON_ARRIVALS: u64 = 2_000_000;

/// The most admitted in one window for one client sending Poisson traffic at
/// `factor ×` the limit rate, over up to [`POISSON_WINDOWS`] windows.
fn poisson_max_in_window(
    registry: &Registry,
    algorithm: &str,
    rule: &Rule,
    factor: u64,
    seed: u64,
) -> Result<u64, CalibrateError> {
    let scenario = poisson_scenario(registry, algorithm, rule, factor, seed)?;
    let options = RunOptions {
        threads: 1,
        registry,
        ..RunOptions::default()
    };
    let report = super::run(&scenario, &options, &mut |_| Ok(Box::new(NoopSink)))?;
    Ok(report
        .algorithms
        .first()
        .map_or(0, |a| a.metrics.max_in_window))
}

/// The scenario [`poisson_max_in_window`] runs: one Poisson client at `factor ×` the
/// limit rate, for about [`POISSON_ARRIVALS`] arrivals, but at least 10 windows and at
/// most [`POISSON_WINDOWS`].
fn poisson_scenario(
    registry: &Registry,
    algorithm: &str,
    rule: &Rule,
    factor: u64,
    seed: u64,
) -> Result<Scenario, CalibrateError> {
    // The rate in nano-requests per second, exactly: factor · N / W.
    let nano_rate = u128::from(factor)
        * u128::from(rule.max_requests())
        * u128::from(NANOS_PER_SEC)
        * u128::from(NANOS_PER_SEC)
        / u128::from(rule.window().as_u64());
    let nano_rate = nano_rate.max(1);
    let rate = format!(
        "{}.{:09}",
        nano_rate / u128::from(NANOS_PER_SEC),
        nano_rate % u128::from(NANOS_PER_SEC)
    );
    let per_window = factor.saturating_mul(rule.max_requests()).max(1);
    let windows = (POISSON_ARRIVALS / per_window).clamp(10, POISSON_WINDOWS);
    let duration = Nanos::new(rule.window().as_u64().saturating_mul(windows));
    let text = format!(
        "name = \"calibrate\"\nseed = {seed}\nduration = \"{}ns\"\nalgorithms = [\"{algorithm}\"]\n\
         [limit]\nmax_requests = {}\nwindow = \"{}ns\"\nburst = {}\n\
         [[traffic]]\nkind = \"poisson\"\nrate = {rate}\n",
        duration.as_u64(),
        rule.max_requests(),
        rule.window().as_u64(),
        rule.burst(),
    );
    Ok(Scenario::parse_with(
        &text,
        std::path::Path::new("<calibrate>"),
        registry,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The busiest window of a plain scenario: one Poisson client sending `rate` per
    /// second for `windows` windows of `window_s` seconds, under `max` per window.
    fn busiest_window(algorithm: &str, max: u64, window_s: u64, rate: u64, seed: u64) -> u64 {
        let duration = 200 * window_s;
        let text = format!(
            "name = \"by-hand\"\nseed = {seed}\nduration = \"{duration}s\"\n\
             algorithms = [\"{algorithm}\"]\n\
             [limit]\nmax_requests = {max}\nwindow = \"{window_s}s\"\n\
             [[traffic]]\nkind = \"poisson\"\nrate = {rate}\n"
        );
        let scenario = Scenario::parse(&text, std::path::Path::new("hand.toml")).unwrap();
        let options = RunOptions {
            threads: 1,
            ..RunOptions::default()
        };
        let report =
            super::super::run(&scenario, &options, &mut |_| Ok(Box::new(NoopSink))).unwrap();
        report.algorithms[0].metrics.max_in_window
    }

    #[test]
    fn a_poisson_calibration_runs_two_million_arrivals_within_10_to_200_windows() {
        // (N per window, factor) → windows: 2,000,000 arrivals when that is 10 to 200
        // windows, otherwise the nearer bound.
        for (max, factor, windows) in [
            (50, 2, 200),
            (5_000, 2, 200),
            (10_000, 1, 200),
            (10_000, 2, 100),
            (50_000, 2, 20),
            (100_000, 1, 20),
            (1_000_000, 2, 10),
        ] {
            let rule = Rule::new(max, Nanos::from_secs(3)).unwrap();
            let scenario = poisson_scenario(Registry::builtin(), "gcra", &rule, factor, 7).unwrap();
            assert_eq!(
                scenario.duration,
                Nanos::from_secs(3 * windows),
                "{max} per window at {factor}×"
            );
        }
    }

    #[test]
    fn the_poisson_numbers_are_those_of_one_client_at_one_and_two_times_the_limit_rate() {
        // 50 per window of 1 s and of 2 s: a Poisson client at 1× and 2× that rate,
        // over 200 windows with the calibration's seed. A fixed window's busiest window
        // (between N and 2N) depends on the exact stream, so a different rate, length
        // or seed shows.
        for window_s in [1, 2] {
            let rule = Rule::new(50, Nanos::from_secs(window_s)).unwrap();
            for algorithm in ["fixed_window", "sliding_window_counter"] {
                for factor in [1, 2] {
                    let seed = 7;
                    let calibrated =
                        poisson_max_in_window(Registry::builtin(), algorithm, &rule, factor, seed)
                            .unwrap();
                    let rate = factor * 50 / window_s;
                    assert_eq!(
                        calibrated,
                        busiest_window(algorithm, 50, window_s, rate, seed),
                        "{algorithm} at {factor}× 50/{window_s}s"
                    );
                }
            }
        }
    }
}
