//! The traffic simulator: scenarios, arrival streams, the discrete-event engine and the
//! over-admission metrics.
//!
//! `sim` drives the library's own algorithms through the library's own state store for
//! numbered clients, [`DenseLimiter`](crate::DenseLimiter), at a fake clock's instants;
//! it contains no copy of any algorithm. It writes no files and draws nothing:
//! decisions go to caller-supplied [`DecisionSink`]s and results come back as a
//! serialisable [`RunReport`].
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

pub use engine::{
    PROGRESS_STEPS, RunOptions, StateBackend, check_store, check_sweepable, run, sweep,
};
pub use metrics::{
    LatencyHistogram, Metrics, RuleMetrics, TIMELINE_BUCKETS, Timeline, WINDOW_SAMPLES,
    WindowSample,
};
pub use scenario::{
    Balancer, ClientModel, Deployment, KeySpec, Popularity, Rate, Scenario, ScenarioError, Sharing,
    StoreClock, TrafficKind, TrafficSpec,
};
pub mod calibrate;
pub mod worst_case;

pub use trace::{
    COMBINED_FIELDS, KeyTemplate, SameSecond, SkippedLines, StatusMatch, TimeFormat, TraceError,
    TraceFormat, TraceOptions, TraceReader, TraceRow, parse_whole, parse_whole_from,
    take_skipped_reports,
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
    /// How long a shaper (`nginx`, `tower`) held an admitted request back: it reaches
    /// the service at `time + delay`. Zero for an immediate admission and a denial.
    pub delay: Nanos,
    /// Under a `[deployment]`, the server (0-based) that decided; `None` without one.
    pub node: Option<u32>,
    /// A denial: the rule that denied it, as `10/1s` (`max_requests/window`; with
    /// several `[[limit]]`s the one with the longest wait). `None` when admitted, or
    /// when the store cannot say which of several rules it was (Redis).
    pub denied_by: Option<&'a str>,
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

/// Why a run failed. The messages name no command-line flag: the CLI adds those
/// (`--key:`, `--store:`), since a library caller may have set the same option in code.
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
    /// The client chosen for the charts ([`Scenario::chart_key`]) sent nothing in this run.
    #[error("no client named `{key}` sent a request in this run; {hint}")]
    UnknownKey {
        /// The name asked for.
        key: String,
        /// Close matches, or examples of the names there are.
        hint: String,
    },
    /// An algorithm name the registry does not know.
    #[error(transparent)]
    UnknownAlgorithm(#[from] crate::registry::UnknownAlgorithm),
    /// The scenario selects no algorithm.
    #[error("no algorithm to run; expected at least one name, or `all`")]
    NoAlgorithms,
    /// The store holding the states (Redis) failed; the run stops, since a decision
    /// the store did not make is not one a report may count.
    #[error("the state store failed: {0}")]
    Store(#[source] StoreFailure),
    /// A scenario or algorithm the chosen store cannot run.
    #[error(transparent)]
    StoreUnsupported(#[from] StoreUnsupported),
    /// A sweep was given a scenario with a `[deployment]`, which it cannot simulate yet.
    #[error(
        "a sweep runs one server: {scenario} has a [deployment] table, which sweep does not \
         simulate yet; remove the table to sweep one server's limit"
    )]
    SweepDeployment {
        /// The scenario's name.
        scenario: String,
    },
}

/// How the store holding the states (Redis, feature `redis`) failed during a run.
#[derive(Debug, thiserror::Error)]
pub enum StoreFailure {
    /// Redis did not answer (the connection, a timeout, a script error).
    #[cfg(feature = "redis")]
    #[error(transparent)]
    Unavailable(#[from] crate::redis::StoreError),
    /// The store refused a request whose cost exceeds the capacity where the run
    /// expected an answer (a bug: such requests are never sent).
    #[error(transparent)]
    InsufficientCapacity(#[from] crate::limiter::InsufficientCapacity),
    /// Redis evicted a state the run's decisions said was still in use, or kept one
    /// they said was idle: the script and the algorithm disagree.
    #[error(
        "Redis holds a state for key {key} that is not idle at {at}, though its last \
         decision said it would be: the script and the algorithm disagree"
    )]
    NotIdle {
        /// The client's key in the store.
        key: String,
        /// The instant of the eviction.
        at: Nanos,
    },
}

/// What the chosen store ([`RunOptions::store`]) cannot run.
#[derive(Debug, thiserror::Error)]
pub enum StoreUnsupported {
    /// A scenario with a `[deployment]`, which simulates its own store.
    #[error(
        "{scenario} has a [deployment] table, which simulates its own store (shared, \
         shared_racy, synced)"
    )]
    Deployment {
        /// The scenario's name.
        scenario: String,
    },
    /// An algorithm the store has no script for (only the six built-ins have one).
    #[error(
        "the Redis store has scripts for the six built-in algorithms; `{algorithm}` is not \
         one of them"
    )]
    NotBuiltin {
        /// The algorithm's name.
        algorithm: String,
    },
    /// A rule the store's script cannot decide exactly.
    #[cfg(feature = "redis")]
    #[error("{algorithm}: {source}")]
    Unrepresentable {
        /// The algorithm's name.
        algorithm: String,
        /// The bound the rule breaks.
        source: crate::redis::Unrepresentable,
    },
    /// A sweep keeps its states in memory.
    #[error("a sweep keeps its states in memory; it does not run on another store")]
    Sweep,
}

/// In-memory states never fail.
impl From<std::convert::Infallible> for SimError {
    fn from(never: std::convert::Infallible) -> SimError {
        match never {}
    }
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
    /// The `[deployment]`, when the scenario has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<DeploymentReport>,
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

impl RuleReport {
    /// The rule as reports name it: `max_requests/window`, e.g. `10/1s`, `30/10s`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.max_requests, self.window)
    }
}

/// `rule`'s label, as [`RuleReport::label`] writes it.
pub(crate) fn rule_label(rule: &crate::rule::Rule) -> String {
    RuleReport::from(rule).label()
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
    /// The client `window_counts` follows: the worst one, or the one `--key` chose.
    pub window_key: Option<String>,
    /// Allowed/denied attempts over time (≤ [`TIMELINE_BUCKETS`] buckets).
    pub timeline: Timeline,
    /// Under a `[deployment]`: what each node decided, in node order; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeReport>,
}

/// A scenario's `[deployment]`, flattened for output (`run.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeploymentReport {
    /// Servers behind the balancer.
    pub nodes: u32,
    /// `round_robin`, `random` or `key_hash`.
    pub balancer: String,
    /// `local`, `local_split`, `shared`, `shared_racy` or `synced`.
    pub store: String,
    /// One-way node ↔ store delay, in ns.
    pub latency_ns: u64,
    /// The largest clock offset, in ns.
    pub clock_skew_ns: u64,
    /// `synced` only: time between exchanges, in ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_interval_ns: Option<u64>,
    /// `shared` only: `store` or `node`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock: Option<String>,
}

impl From<&Deployment> for DeploymentReport {
    fn from(d: &Deployment) -> DeploymentReport {
        DeploymentReport {
            nodes: d.nodes,
            balancer: d.balancer.name().to_string(),
            store: d.store.name().to_string(),
            latency_ns: d.latency.as_u64(),
            clock_skew_ns: d.clock_skew.as_u64(),
            sync_interval_ns: match d.store {
                Sharing::Synced { sync_interval } => Some(sync_interval.as_u64()),
                _ => None,
            },
            clock: match d.store {
                Sharing::Shared {
                    clock: StoreClock::Store,
                } => Some("store".to_string()),
                Sharing::Shared {
                    clock: StoreClock::Node,
                } => Some("node".to_string()),
                _ => None,
            },
        }
    }
}

/// What one node of a deployment decided: a row of `nodes.csv`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NodeReport {
    /// 0-based node number.
    pub node: u32,
    /// The node's clock minus true time, in nanoseconds (negative: behind).
    pub clock_offset_ns: i64,
    /// Attempts the balancer sent it.
    pub attempts: u64,
    /// Of those, admitted.
    pub allowed: u64,
    /// Of those, denied.
    pub denied: u64,
}

impl NodeReport {
    /// Counts one attempt decided at this node.
    #[inline]
    pub(crate) fn count(&mut self, allowed: bool) {
        self.attempts += 1;
        self.allowed += u64::from(allowed);
        self.denied += u64::from(!allowed);
    }
}

/// Serialises [`Nanos`] as its integer nanoseconds (exact; JSON numbers are not).
pub(crate) fn serialize_nanos<S: serde::Serializer>(n: &Nanos, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(n.as_u64())
}
