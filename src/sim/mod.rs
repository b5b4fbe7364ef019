//! The traffic simulator: scenarios, arrival streams, the discrete-event engine and the
//! over-admission metrics.
//!
//! `sim` drives the library's own [`RateLimiter`](crate::RateLimiter) with a
//! [`FakeClock`](crate::FakeClock); it contains no copy of any algorithm. It writes no
//! files and draws nothing: decisions go to caller-supplied [`DecisionSink`]s and
//! results come back as a serialisable [`RunReport`].
//!
//! ```
//! use std::path::Path;
//! use ratesim::sim::{self, NoopSink, RunOptions, Scenario};
//!
//! let text = r#"
//!     name = "doc"
//!     duration = "30s"
//!     algorithms = ["fixed_window", "sliding_window_log"]
//!     [limit]
//!     max_requests = 5
//!     window = "10s"
//!     [[traffic]]
//!     kind = "boundary_burst"
//!     size = 5
//! "#;
//! let scenario = Scenario::parse(text, Path::new("doc.toml"))?;
//! let report = sim::run(&scenario, &RunOptions::default(), &mut |_| Ok(Box::new(NoopSink)))?;
//! assert_eq!(report.algorithms[0].metrics.over_admission, 2.0); // fixed window
//! assert_eq!(report.algorithms[1].metrics.over_admission, 1.0); // sliding log
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod engine;
mod metrics;
mod scenario;
mod trace;
mod traffic;

pub use engine::{PROGRESS_STEPS, RunOptions, run, sweep};
pub use metrics::{
    LatencyHistogram, Metrics, TIMELINE_BUCKETS, Timeline, WINDOW_SAMPLES, WindowSample,
};
pub use scenario::{
    ClientModel, KeySpec, Popularity, Rate, Scenario, ScenarioError, TrafficKind, TrafficSpec,
};
pub mod calibrate;
pub mod worst_case;

pub use trace::{
    COMBINED_FIELDS, KeyTemplate, SameSecond, SkippedLines, StatusMatch, TimeFormat, TraceError,
    TraceFormat, TraceOptions, TraceReader, TraceRow, parse_whole, parse_whole_from,
};
pub use traffic::{Arrival, ArrivalStream, KeyTable};

use serde::Serialize;

use crate::time::Nanos;

/// One decision: one row of `decisions.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecisionRow<'a> {
    /// The algorithm's registry name.
    pub algorithm: &'a str,
    /// 0-based index of the arrival in the merged stream; identical across algorithms
    /// for open clients; a retry keeps its arrival's `seq`.
    pub seq: u64,
    /// 0 for the arrival, 1 for its first retry, ...
    pub attempt: u32,
    /// When the decision was made.
    pub time: Nanos,
    /// The client.
    pub key: &'a str,
    /// Permits asked for.
    pub cost: u64,
    /// Whether it passed.
    pub allowed: bool,
    /// Requests of cost 1 that would pass right after this decision.
    pub remaining: u64,
    /// The wait the limiter advised: zero when allowed, `None` when the cost can never
    /// fit. A request that fits may still be told `Nanos::MAX` (a wait past the end of
    /// the clock's range).
    pub retry_after: Option<Nanos>,
}

/// Where one algorithm's decisions go, in decision order. The engine gives each
/// algorithm its own sink, so parallel runs never interleave rows.
pub trait DecisionSink: Send {
    /// Takes one decision.
    fn record(&mut self, row: &DecisionRow<'_>) -> std::io::Result<()>;

    /// Called once after the algorithm's last decision: flush anything buffered.
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }

    /// False for a sink that ignores every row: the engine then does not build them.
    fn wants_rows(&self) -> bool {
        true
    }
}

/// A sink that drops every row, for runs that need only the summary.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopSink;

impl DecisionSink for NoopSink {
    fn record(&mut self, _row: &DecisionRow<'_>) -> std::io::Result<()> {
        Ok(())
    }

    fn wants_rows(&self) -> bool {
        false
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A bad scenario or trace file.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A decision sink failed to write.
    #[error("cannot record the decisions of {algorithm}: {source}")]
    Sink {
        /// The algorithm whose sink failed.
        algorithm: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An algorithm name the registry does not know.
    #[error(transparent)]
    UnknownAlgorithm(#[from] crate::registry::UnknownAlgorithm),
    /// The scenario selects no algorithm.
    #[error("no algorithm to run; expected at least one name, or `all`")]
    NoAlgorithms,
}

/// Everything a run measured, for the reports layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// Scenario name.
    pub scenario: String,
    /// Scenario description.
    pub description: String,
    /// The seed used.
    pub seed: u64,
    /// Simulated time.
    #[serde(rename = "duration_ns", serialize_with = "serialize_nanos")]
    pub duration: Nanos,
    /// The limit enforced, and the one the over-admission metrics measure against.
    pub rule: RuleReport,
    /// Further `[[limit]]` rules enforced together with `rule` (usually none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extra_limits: Vec<RuleReport>,
    /// `"open"` or `"retry"`.
    pub client: String,
    /// One entry per algorithm, in the scenario's order.
    pub algorithms: Vec<AlgorithmReport>,
}

/// The rule, flattened for output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RuleReport {
    /// Requests per window.
    pub max_requests: u64,
    /// The window.
    #[serde(rename = "window_ns", serialize_with = "serialize_nanos")]
    pub window: Nanos,
    /// Bucket capacity.
    pub burst: u64,
}

impl From<&crate::rule::Rule> for RuleReport {
    fn from(rule: &crate::rule::Rule) -> RuleReport {
        RuleReport {
            max_requests: rule.max_requests(),
            window: rule.window(),
            burst: rule.burst(),
        }
    }
}

/// One algorithm's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlgorithmReport {
    /// Registry name.
    pub name: String,
    /// The summary row.
    pub metrics: Metrics,
    /// The worst key's trailing-window admitted count over time (≤ [`WINDOW_SAMPLES`]
    /// points, each bucket's low and peak kept).
    pub window_counts: Vec<WindowSample>,
    /// Allowed/denied attempts over time (≤ [`TIMELINE_BUCKETS`] buckets).
    pub timeline: Timeline,
}

/// Serialises [`Nanos`] as its integer nanoseconds (exact; JSON numbers are not).
pub(crate) fn serialize_nanos<S: serde::Serializer>(n: &Nanos, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(n.as_u64())
}
