//! Scenario files: the TOML schema, its validation, and errors that point at
//! `file:line:col`.
//!
//! This module turns text into a validated [`Scenario`] and stops there: it generates no
//! traffic and runs no algorithm. Times are parsed exactly into [`Nanos`] (a TOML float
//! such as `0.1` is read back through its shortest decimal form, never multiplied as a
//! float), so `window = 0.1` is exactly 100,000,000 ns.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use toml::Spanned;

use super::trace::{TraceError, TraceReader};
use crate::registry::{Registry, UnknownAlgorithm};
use crate::rule::Rule;
use crate::time::{NANOS_PER_SEC, Nanos};

/// A scenario file that could not be read or is not valid.
///
/// Displays as `file:line:col: message`, or `file: message` when the problem has no
/// single position (for example, the file could not be opened).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file at fault (the scenario, or a trace it names).
    pub path: PathBuf,
    /// 1-based line and column, when the problem has a position.
    pub position: Option<(usize, usize)>,
    /// What was expected, and what was found.
    pub message: String,
}

impl ScenarioError {
    /// An error at a byte `span` of `text`, which was read from `path`.
    pub(crate) fn at(path: &Path, text: &str, span: Option<Range<usize>>, message: String) -> Self {
        ScenarioError {
            path: path.to_path_buf(),
            position: span.map(|s| line_col(text, s.start)),
            message,
        }
    }

    /// An error about the whole file, or a line without a column.
    pub(crate) fn file(path: &Path, line: Option<usize>, message: String) -> Self {
        ScenarioError {
            path: path.to_path_buf(),
            position: line.map(|l| (l, 1)),
            message,
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((line, col)) => {
                write!(f, "{}:{line}:{col}: {}", self.path.display(), self.message)
            }
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

impl From<TraceError> for ScenarioError {
    fn from(e: TraceError) -> ScenarioError {
        ScenarioError {
            path: e.path,
            position: e.position,
            message: e.message,
        }
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    // A span may start inside a multi-byte character only if the parser is buggy; walk
    // back to a boundary rather than panic.
    let mut start = offset;
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// A validated scenario: everything the engine needs, with defaults filled in.
///
/// Fields are public so a front end can override them (`--seed`, `--algos`); use
/// [`Scenario::set_algorithms`] to override the algorithm list with validation.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Short name, used for the output directory.
    pub name: String,
    /// What the scenario teaches (free text).
    pub description: String,
    /// Seeds every random source; the same seed gives the same stream.
    pub seed: u64,
    /// Arrivals are generated in `[0, duration)`; the simulation ends there.
    pub duration: Nanos,
    /// The limit every algorithm enforces: the first `[limit]` / `[[limit]]`. The
    /// over-admission metrics and the charts measure against this rule.
    pub rule: Rule,
    /// Further `[[limit]]` rules enforced together with `rule` (each algorithm then runs
    /// as a composite: a request passes only if every rule admits it). Usually empty.
    pub extra_limits: Vec<Rule>,
    /// Registry names, resolved (`all` expanded), in run order.
    pub algorithms: Vec<String>,
    /// Arrival sources, in declaration order.
    pub traffic: Vec<TrafficSpec>,
    /// How clients react to a denial.
    pub client: ClientModel,
    /// The file this scenario was read from (relative paths resolve against its folder).
    pub path: PathBuf,
}

/// One `[[traffic]]` source.
#[derive(Debug, Clone, PartialEq)]
pub struct TrafficSpec {
    /// The arrival process.
    pub kind: TrafficKind,
    /// Which clients send the requests (ignored by `trace`, whose rows name the key).
    pub keys: KeySpec,
    /// Permits each request takes (a trace row's own cost wins). Default 1.
    pub cost: u64,
    /// No arrival before this instant. Default 0.
    pub start: Nanos,
    /// No arrival at or after this instant. Default: the scenario's duration.
    pub end: Nanos,
}

/// The arrival processes.
#[derive(Debug, Clone, PartialEq)]
pub enum TrafficKind {
    /// Evenly spaced: arrival `i` at `start + floor(i / rate)`, exactly.
    Uniform {
        /// Requests per second, all keys together.
        rate: Rate,
    },
    /// Exponential gaps with mean `1 / rate`.
    Poisson {
        /// Requests per second, all keys together.
        rate: Rate,
    },
    /// `size` requests just before and `size` just after every multiple of `period`.
    BoundaryBurst {
        /// Requests on each side of each boundary.
        size: u64,
        /// Width of each half-burst; 0 puts a half-burst at a single instant.
        spread: Nanos,
        /// Distance between boundaries; `None`: the limit's window (resolved when the
        /// stream is built, so a rule changed after parsing moves the boundaries too).
        period: Option<Nanos>,
    },
    /// Poisson at `rate` during `on`, silent during `off`, repeating from `start`.
    OnOff {
        /// Requests per second while on.
        rate: Rate,
        /// Length of each busy period.
        on: Nanos,
        /// Length of each idle period.
        off: Nanos,
    },
    /// Replays a CSV file `time_s,key[,cost]`.
    Trace {
        /// The trace file, resolved against the scenario's folder.
        path: PathBuf,
    },
}

impl TrafficKind {
    /// The `kind` string as written in the file.
    pub fn name(&self) -> &'static str {
        match self {
            TrafficKind::Uniform { .. } => "uniform",
            TrafficKind::Poisson { .. } => "poisson",
            TrafficKind::BoundaryBurst { .. } => "boundary_burst",
            TrafficKind::OnOff { .. } => "on_off",
            TrafficKind::Trace { .. } => "trace",
        }
    }
}

/// The clients a source spreads its requests over.
#[derive(Debug, Clone, PartialEq)]
pub struct KeySpec {
    /// How many clients (keys). Default 1.
    pub count: u32,
    /// How often each client is picked. Default uniform.
    pub popularity: Popularity,
    /// Keys are named `{prefix}-{i}`; sources with the same prefix share clients.
    /// Default `"client"`.
    pub prefix: String,
}

/// How a request's client is picked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Popularity {
    /// Every client equally likely.
    Uniform,
    /// Client `i` (1-based) with probability proportional to `1 / i^exponent`.
    Zipf {
        /// The Zipf exponent `s` (≥ 0; default 1).
        exponent: f64,
    },
}

/// How clients react to a denial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientModel {
    /// Arrivals ignore decisions: every algorithm sees the identical stream.
    Open,
    /// A denied request is retried at `now + retry_after + U[0, jitter]`.
    Retry {
        /// Retries after the first attempt (default 3).
        max_retries: u32,
        /// Upper bound of the uniform random extra wait (default 0).
        jitter: Nanos,
    },
}

impl ClientModel {
    /// `"open"` or `"retry"`.
    pub fn name(&self) -> &'static str {
        match self {
            ClientModel::Open => "open",
            ClientModel::Retry { .. } => "retry",
        }
    }
}

/// A rate in requests per second, held exactly as `requests per 10⁹ seconds` so that
/// `rate = 0.3` spaces uniform arrivals by exactly 3.333… s, floored per arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    per_giga_secs: u64,
}

impl Rate {
    /// `n` requests per second.
    pub fn per_sec(n: u64) -> Option<Rate> {
        let per_giga_secs = n.checked_mul(NANOS_PER_SEC)?;
        (per_giga_secs > 0).then_some(Rate { per_giga_secs })
    }

    /// The rate as a float, for Poisson sampling and display only.
    pub fn as_f64(self) -> f64 {
        self.per_giga_secs as f64 / NANOS_PER_SEC as f64
    }

    /// The offset of arrival `i` of an evenly spaced stream: `floor(i / rate)` in ns.
    pub fn nth_arrival(self, i: u64) -> Nanos {
        // i / (r·10⁻⁹ per s) s = i·10⁹·10⁹ / r ns; u128 cannot overflow for u64 i.
        let ns = u128::from(i) * 1_000_000_000_000_000_000 / u128::from(self.per_giga_secs);
        Nanos::saturating_from_u128(ns)
    }
}

impl Scenario {
    /// Reads and validates the scenario at `path` (trace files are checked by
    /// [`Scenario::validate`] and while running).
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError::file(path, None, format!("cannot read: {e}")))?;
        Scenario::parse(&text, path)
    }

    /// Parses scenario `text`; `origin` is the file it came from, used in error
    /// messages and to resolve trace paths.
    pub fn parse(text: &str, origin: &Path) -> Result<Scenario, ScenarioError> {
        let raw: RawScenario = toml::from_str(text).map_err(|e| toml_error(&e, text, origin))?;
        Builder { text, origin }.build(raw)
    }

    /// Replaces every limit with `rule` (e.g. `compare --limit`). Boundary bursts
    /// without an explicit `period` follow the new window, so their spread must still
    /// fit in it; a burst the size of the old limit (the boundary lesson: a full quota
    /// on each side of a boundary) becomes the size of the new one.
    pub fn set_rule(&mut self, rule: Rule) -> Result<(), ScenarioError> {
        for spec in &self.traffic {
            if let TrafficKind::BoundaryBurst {
                spread,
                period: None,
                ..
            } = spec.kind
                && !burst_fits(spread, rule.window())
            {
                return Err(ScenarioError::file(
                    &self.path,
                    None,
                    window_too_short_for_bursts(rule.window(), spread),
                ));
            }
        }
        let old_limit = self.rule.max_requests();
        for spec in &mut self.traffic {
            if let TrafficKind::BoundaryBurst { size, .. } = &mut spec.kind
                && *size == old_limit
            {
                *size = rule.max_requests();
            }
        }
        self.rule = rule;
        self.extra_limits.clear();
        Ok(())
    }

    /// About how many arrivals the sources generate over the run, all keys together:
    /// `rate × time` for uniform (exactly: `ceil`), Poisson and the busy part of
    /// on/off sources, `2 × size` per boundary for boundary bursts. Trace sources
    /// are not counted (they hold what their file holds), nor are retries. For
    /// warnings about enormous runs, never for a decision.
    pub fn expected_arrivals(&self) -> u128 {
        const PER_GIGA: u128 = NANOS_PER_SEC as u128 * NANOS_PER_SEC as u128;
        let at_rate =
            |rate: Rate, ns: u128| (ns * u128::from(rate.per_giga_secs)).div_ceil(PER_GIGA);
        self.traffic
            .iter()
            .map(|spec| {
                let span = u128::from(spec.end.saturating_sub(spec.start).as_u64());
                match &spec.kind {
                    TrafficKind::Uniform { rate } | TrafficKind::Poisson { rate } => {
                        at_rate(*rate, span)
                    }
                    TrafficKind::OnOff { rate, on, off } => {
                        let (on, off) = (u128::from(on.as_u64()), u128::from(off.as_u64()));
                        at_rate(*rate, span * on / (on + off))
                    }
                    TrafficKind::BoundaryBurst { size, period, .. } => {
                        let period = period.unwrap_or(self.rule.window()).as_u64();
                        span.div_ceil(u128::from(period.max(1)))
                            .saturating_mul(2 * u128::from(*size))
                    }
                    TrafficKind::Trace { .. } => 0,
                }
            })
            .fold(0, u128::saturating_add)
    }

    /// Checks what parsing cannot: every trace file exists, is well formed and sorted.
    /// Reads traces as a stream, never whole.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        for spec in &self.traffic {
            if let TrafficKind::Trace { path } = &spec.kind {
                let mut reader = TraceReader::open(path)?;
                while reader.next_row()?.is_some() {}
            }
        }
        Ok(())
    }

    /// Replaces the algorithm list (`all` allowed), e.g. from a command-line flag.
    pub fn set_algorithms<S: AsRef<str>>(&mut self, names: &[S]) -> Result<(), UnknownAlgorithm> {
        self.algorithms = Registry::default().resolve(names)?;
        Ok(())
    }
}

/// The TOML parser's error, with its terse messages made to say what to do.
fn toml_error(e: &toml::de::Error, text: &str, origin: &Path) -> ScenarioError {
    let span = e.span();
    let found = span.clone().and_then(|s| text.get(s)).unwrap_or_default();
    let message = match e.message().trim_end() {
        // The parser points at the second occurrence of the key.
        "duplicate key" => {
            let key = found.trim().trim_matches(|c| c == '"' || c == '\'');
            match key {
                "limit" => "`limit` is given twice; choose one form: `[limit]` for one rule, \
                            or `[[limit]]` tables for several"
                    .to_string(),
                "traffic" => "`traffic` is given twice; write every source as a `[[traffic]]` \
                              table"
                    .to_string(),
                _ => format!("`{key}` is given twice; a key may appear only once in its table"),
            }
        }
        // A literal beyond f64 (`1e400`) or beyond 128-bit integers.
        "floating-point number overflowed" | "integer number overflowed" => {
            let kind = if e.message().starts_with("floating") {
                "a 64-bit float"
            } else {
                "128 bits"
            };
            format!(
                "`{}` is too large for a number (it overflows {kind})",
                found.trim()
            )
        }
        other => other.to_string(),
    };
    ScenarioError::at(origin, text, span, message)
}

// ---------------------------------------------------------------------------------
// The raw schema, exactly as written. `Spanned` keeps each value's position so checks
// made after parsing can still point at the offending text.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    seed: Whole,
    duration: Spanned<Dur>,
    algorithms: Option<Spanned<Vec<Spanned<String>>>>,
    limit: RawLimits,
    traffic: Spanned<Vec<RawTraffic>>,
    client: Option<RawClient>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimit {
    max_requests: Spanned<Whole>,
    window: Spanned<Dur>,
    burst: Option<Spanned<Whole>>,
}

/// `[limit]` (one rule) or `[[limit]]` (several, enforced together). Deserialised by
/// hand so either form keeps the inner values' positions for error messages.
struct RawLimits(Vec<RawLimit>);

impl<'de> Deserialize<'de> for RawLimits {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RawLimits, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RawLimits;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a [limit] table or [[limit]] tables")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                map: M,
            ) -> Result<RawLimits, M::Error> {
                let one = RawLimit::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(RawLimits(vec![one]))
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(
                self,
                seq: S,
            ) -> Result<RawLimits, S::Error> {
                let many = Vec::<RawLimit>::deserialize(
                    serde::de::value::SeqAccessDeserializer::new(seq),
                )?;
                if many.is_empty() {
                    return Err(serde::de::Error::invalid_length(
                        0,
                        &"at least one [[limit]]",
                    ));
                }
                Ok(RawLimits(many))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// Every field any source kind takes; [`Builder::traffic`] rejects those the kind
/// does not use, at their position.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTraffic {
    kind: Spanned<String>,
    rate: Option<Spanned<RateValue>>,
    size: Option<Spanned<Whole>>,
    spread: Option<Spanned<Dur>>,
    period: Option<Spanned<Dur>>,
    on: Option<Spanned<Dur>>,
    off: Option<Spanned<Dur>>,
    path: Option<Spanned<String>>,
    keys: Option<Spanned<Whole>>,
    key_popularity: Option<Spanned<String>>,
    zipf_exponent: Option<Spanned<f64>>,
    key_prefix: Option<Spanned<String>>,
    cost: Option<Spanned<Whole>>,
    start: Option<Spanned<Dur>>,
    end: Option<Spanned<Dur>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClient {
    /// Default `"open"`, as for a missing `[client]` table.
    kind: Option<Spanned<String>>,
    max_retries: Option<Spanned<Whole<{ u32::MAX as u64 }>>>,
    jitter: Option<Spanned<Dur>>,
}

/// A whole number from 0 to `MAX`, whose messages name that range, never a Rust type
/// (`u64`), and call a number too large "too large".
#[derive(Default)]
struct Whole<const MAX: u64 = { u64::MAX }>(u64);

impl<'de, const MAX: u64> Deserialize<'de> for Whole<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Whole<MAX>, D::Error> {
        d.deserialize_any(WholeVisitor::<MAX>).map(Whole)
    }
}

struct WholeVisitor<const MAX: u64>;

impl<const MAX: u64> Visitor<'_> for WholeVisitor<MAX> {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a whole number from 0 to {MAX}")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        self.visit_u128(u128::from(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        self.visit_i128(i128::from(v))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<u64, E> {
        match u128::try_from(v) {
            Ok(v) => self.visit_u128(v),
            Err(_) => Err(E::custom(format!(
                "`{v}` is negative; expected {}",
                self.expected()
            ))),
        }
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<u64, E> {
        match u64::try_from(v) {
            Ok(v) if v <= MAX => Ok(v),
            _ => Err(E::custom(format!("`{v}` is too large (at most {MAX})"))),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        Err(E::custom(format!(
            "`{v:?}` is not a whole number; expected {}",
            self.expected()
        )))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        Err(E::custom(format!(
            "found the string {v:?}; expected {}, without quotes",
            self.expected()
        )))
    }
}

impl<const MAX: u64> WholeVisitor<MAX> {
    fn expected(&self) -> String {
        format!("a whole number from 0 to {MAX}")
    }
}

/// A duration: `"10s"`, `"250ms"`, or a number of seconds (`10`, `0.5`).
struct Dur(Nanos);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        d.deserialize_any(DecimalVisitor(
            "a duration like \"10s\", \"250ms\", \"1m\" or a number of seconds",
            |text| Nanos::parse_duration(text).map_err(|e| e.to_string()),
        ))
        .map(Dur)
    }
}

/// A rate in requests per second (`2`, `0.5`); stored as `rate × 10⁹`, exactly.
struct RateValue(Nanos);

/// What a rate looks like, for messages.
const RATE: &str = "a number of requests per second, like 2 or 0.5";

impl<'de> Deserialize<'de> for RateValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RateValue, D::Error> {
        d.deserialize_any(DecimalVisitor(RATE, parse_rate))
            .map(RateValue)
    }
}

/// Whether boundary half-bursts of width `spread` fit `period` apart: neighbouring
/// half-bursts must not overlap, or the source would emit out of order
/// (`2·spread + 1 ns < period`).
fn burst_fits(spread: Nanos, period: Nanos) -> bool {
    u128::from(spread.as_u64()) * 2 + 1 < u128::from(period.as_u64())
}

/// The rule every boundary burst keeps.
const BURST_RULE: &str = "boundary bursts need 2 × spread + 1ns < period";

/// Why the window, standing in for an unset `period`, cannot hold bursts of `spread`:
/// in a scenario file and after `compare --limit` alike.
fn window_too_short_for_bursts(window: Nanos, spread: Nanos) -> String {
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
fn least_burst_period(spread: Nanos) -> Option<Nanos> {
    let least = u128::from(spread.as_u64()) * 2 + 2;
    u64::try_from(least).ok().map(Nanos::new)
}

/// The widest spread that fits `period` (`(period − 2 ns) / 2`), if any does.
fn most_burst_spread(period: Nanos) -> Option<Nanos> {
    period.as_u64().checked_sub(2).map(|p| Nanos::new(p / 2))
}

/// A rate as `rate × 10⁹` (exact), with messages about rates rather than times.
fn parse_rate(text: &str) -> Result<Nanos, String> {
    use crate::time::ParseTimeError as E;
    Nanos::parse_decimal_secs(text).map_err(|e| match e {
        E::TooPrecise(t) => format!("`{t}` has more than nine decimal places"),
        E::TooLarge(t) => {
            format!("`{t}` requests per second is too many (at most about 18 billion)")
        }
        E::Negative(t) => format!("`{t}` is negative; expected {RATE}"),
        E::Invalid(t) | E::UnknownUnit(t) => format!("`{t}` is not a number; expected {RATE}"),
        E::Empty => format!("empty rate; expected {RATE}"),
    })
}

/// Reads a string or number as an exact decimal scaled by 10⁹. Floats go through
/// their shortest decimal text (what the user wrote), never through multiplication.
struct DecimalVisitor(&'static str, fn(&str) -> Result<Nanos, String>);

impl Visitor<'_> for DecimalVisitor {
    type Value = Nanos;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Nanos, E> {
        // The parser's message already says what was expected.
        (self.1)(v).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Nanos, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Nanos, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Nanos, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Nanos, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Nanos, E> {
        if !v.is_finite() {
            return Err(E::custom(format!(
                "`{v}` is not finite; expected {}",
                self.0
            )));
        }
        self.visit_str(&v.to_string())
    }
}

// ---------------------------------------------------------------------------------

/// Turns the raw schema into a [`Scenario`], reporting the first problem found.
struct Builder<'a> {
    text: &'a str,
    origin: &'a Path,
}

impl Builder<'_> {
    fn err(&self, span: Range<usize>, message: impl Into<String>) -> ScenarioError {
        ScenarioError::at(self.origin, self.text, Some(span), message.into())
    }

    fn build(&self, raw: RawScenario) -> Result<Scenario, ScenarioError> {
        let name = raw.name.get_ref().trim().to_string();
        // The name becomes a folder under output/: one path segment, nothing that
        // could climb out of it or replace an absolute path.
        let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        let folder = "it names the output folder (output/<name>)";
        let why = match name.as_str() {
            "" => Some(
                "empty name; expected letters, digits, '.', '_' and '-' (it names the output \
                 folder, output/<name>)"
                    .to_string(),
            ),
            "." => Some(format!(
                "`.` cannot be a name: {folder}, and `.` means the current folder"
            )),
            ".." => Some(format!(
                "`..` cannot be a name: {folder}, and `..` means the parent folder"
            )),
            _ if !name.chars().all(safe) => Some(format!(
                "`{name}` cannot be a name: {folder}, so it may hold only letters, digits, \
                 '.', '_' and '-'"
            )),
            _ => None,
        };
        if let Some(why) = why {
            return Err(self.err(raw.name.span(), why));
        }
        let duration = raw.duration.get_ref().0;
        if duration == Nanos::ZERO {
            return Err(self.err(raw.duration.span(), "expected a duration above zero"));
        }
        let mut limits = raw
            .limit
            .0
            .iter()
            .map(|l| self.rule(l))
            .collect::<Result<Vec<_>, _>>()?;
        let rule = limits.remove(0);
        let extra_limits = limits;
        let algorithms = match &raw.algorithms {
            None => Registry::default().resolve(&["all"]).unwrap_or_default(),
            Some(list) => self.algorithms(list)?,
        };
        if raw.traffic.get_ref().is_empty() {
            return Err(self.err(
                raw.traffic.span(),
                "expected at least one [[traffic]] source",
            ));
        }
        let traffic = raw
            .traffic
            .get_ref()
            .iter()
            .map(|t| self.traffic(t, &rule, duration))
            .collect::<Result<Vec<_>, _>>()?;
        let client = match &raw.client {
            None => ClientModel::Open,
            Some(c) => self.client(c)?,
        };
        Ok(Scenario {
            name,
            description: raw.description.trim().to_string(),
            seed: raw.seed.0,
            duration,
            rule,
            extra_limits,
            algorithms,
            traffic,
            client,
            path: self.origin.to_path_buf(),
        })
    }

    fn rule(&self, raw: &RawLimit) -> Result<Rule, ScenarioError> {
        let rule =
            Rule::new(raw.max_requests.get_ref().0, raw.window.get_ref().0).map_err(|e| {
                let span = match e {
                    crate::RuleError::ZeroWindow => raw.window.span(),
                    _ => raw.max_requests.span(),
                };
                self.err(span, format!("{e}"))
            })?;
        match &raw.burst {
            None => Ok(rule),
            Some(b) => rule
                .with_burst(b.get_ref().0)
                .map_err(|e| self.err(b.span(), e.to_string())),
        }
    }

    fn algorithms(
        &self,
        list: &Spanned<Vec<Spanned<String>>>,
    ) -> Result<Vec<String>, ScenarioError> {
        if list.get_ref().is_empty() {
            return Err(self.err(
                list.span(),
                "expected at least one algorithm name, or [\"all\"]",
            ));
        }
        // Resolve name by name so an unknown one is reported at its own position;
        // `all` expands in place and repeats are dropped, keeping the first.
        let mut resolved: Vec<String> = Vec::new();
        for name in list.get_ref() {
            let expanded = Registry::default()
                .resolve(&[name.get_ref()])
                .map_err(|e| self.err(name.span(), e.to_string()))?;
            for n in expanded {
                if !resolved.contains(&n) {
                    resolved.push(n);
                }
            }
        }
        Ok(resolved)
    }

    fn client(&self, raw: &RawClient) -> Result<ClientModel, ScenarioError> {
        let kind = raw.kind.as_ref().map_or("open", |k| k.get_ref().as_str());
        match kind {
            "open" => {
                if let Some(m) = &raw.max_retries {
                    return Err(
                        self.err(m.span(), "`max_retries` applies only to kind = \"retry\"")
                    );
                }
                if let Some(j) = &raw.jitter {
                    return Err(self.err(j.span(), "`jitter` applies only to kind = \"retry\""));
                }
                Ok(ClientModel::Open)
            }
            "retry" => Ok(ClientModel::Retry {
                max_retries: raw.max_retries.as_ref().map_or(3, |m| {
                    // Whole<u32::MAX> holds at most u32::MAX.
                    u32::try_from(m.get_ref().0).unwrap_or(u32::MAX)
                }),
                jitter: raw.jitter.as_ref().map_or(Nanos::ZERO, |j| j.get_ref().0),
            }),
            other => Err(self.err(
                raw.kind.as_ref().map(|k| k.span()).unwrap_or_default(),
                format!("unknown client kind `{other}`; expected \"open\" or \"retry\""),
            )),
        }
    }

    fn traffic(
        &self,
        raw: &RawTraffic,
        rule: &Rule,
        duration: Nanos,
    ) -> Result<TrafficSpec, ScenarioError> {
        let kind_name = raw.kind.get_ref().as_str();
        let (allowed, required): (&[&str], &[&str]) = match kind_name {
            "uniform" | "poisson" => (&["rate"], &["rate"]),
            "boundary_burst" => (&["size", "spread", "period"], &["size"]),
            "on_off" => (&["rate", "on", "off"], &["rate", "on", "off"]),
            "trace" => (&["path", "cost"], &["path"]),
            other => {
                return Err(self.err(
                    raw.kind.span(),
                    format!(
                        "unknown traffic kind `{other}`; expected one of uniform, poisson, \
                         boundary_burst, on_off, trace"
                    ),
                ));
            }
        };
        const COMMON: &[&str] = &[
            "keys",
            "key_popularity",
            "zipf_exponent",
            "key_prefix",
            "cost",
            "start",
            "end",
        ];
        let present = raw.present_fields();
        for (field, span) in &present {
            let ok = allowed.contains(field) || (kind_name != "trace" && COMMON.contains(field));
            if !ok {
                return Err(self.err(
                    span.clone(),
                    format!("`{field}` does not apply to a `{kind_name}` source"),
                ));
            }
        }
        for field in required {
            if !present.iter().any(|(f, _)| f == field) {
                return Err(self.err(
                    raw.kind.span(),
                    format!("a `{kind_name}` source needs `{field}`"),
                ));
            }
        }

        let rate = |r: &Option<Spanned<RateValue>>| -> Result<Rate, ScenarioError> {
            let r = r.as_ref().expect("checked as required above");
            match r.get_ref().0.as_u64() {
                0 => Err(self.err(r.span(), "expected a rate above zero")),
                n => Ok(Rate { per_giga_secs: n }),
            }
        };
        let dur = |d: &Option<Spanned<Dur>>| d.as_ref().map(|d| d.get_ref().0);

        let kind = match kind_name {
            "uniform" => TrafficKind::Uniform {
                rate: rate(&raw.rate)?,
            },
            "poisson" => TrafficKind::Poisson {
                rate: rate(&raw.rate)?,
            },
            "boundary_burst" => {
                let size_field = raw.size.as_ref().expect("required");
                let size = size_field.get_ref().0;
                if size == 0 {
                    return Err(self.err(size_field.span(), "expected a size of at least 1"));
                }
                let spread = dur(&raw.spread).unwrap_or(Nanos::ZERO);
                let explicit = dur(&raw.period);
                let period = explicit.unwrap_or(rule.window());
                if !burst_fits(spread, period) {
                    return Err(self.burst_misfit(raw, spread, period));
                }
                TrafficKind::BoundaryBurst {
                    size,
                    spread,
                    period: explicit,
                }
            }
            "on_off" => {
                let on = raw.on.as_ref().expect("required");
                if on.get_ref().0 == Nanos::ZERO {
                    return Err(self.err(on.span(), "expected an `on` period above zero"));
                }
                TrafficKind::OnOff {
                    rate: rate(&raw.rate)?,
                    on: on.get_ref().0,
                    off: dur(&raw.off).unwrap_or(Nanos::ZERO),
                }
            }
            _ => {
                let p = raw.path.as_ref().expect("required");
                let folder = self.origin.parent().unwrap_or(Path::new(""));
                TrafficKind::Trace {
                    path: folder.join(p.get_ref()),
                }
            }
        };

        let count = match &raw.keys {
            None => 1,
            Some(k) => match u32::try_from(k.get_ref().0) {
                Ok(n) if (1..u32::MAX).contains(&n) => n,
                _ => {
                    return Err(self.err(
                        k.span(),
                        format!("expected between 1 and {} keys", u32::MAX - 1),
                    ));
                }
            },
        };
        let popularity = match raw
            .key_popularity
            .as_ref()
            .map(|p| (p.get_ref().as_str(), p.span()))
        {
            None | Some(("uniform", _)) => {
                if let Some(z) = &raw.zipf_exponent {
                    return Err(self.err(
                        z.span(),
                        "`zipf_exponent` applies only to key_popularity = \"zipf\"",
                    ));
                }
                Popularity::Uniform
            }
            Some(("zipf", _)) => {
                let exponent = raw.zipf_exponent.as_ref().map_or(1.0, |z| *z.get_ref());
                if !(exponent.is_finite() && exponent >= 0.0) {
                    let span = raw
                        .zipf_exponent
                        .as_ref()
                        .map(|z| z.span())
                        .unwrap_or_default();
                    return Err(self.err(span, "expected a zipf_exponent of 0 or more"));
                }
                Popularity::Zipf { exponent }
            }
            Some((other, span)) => {
                return Err(self.err(
                    span,
                    format!("unknown key_popularity `{other}`; expected \"uniform\" or \"zipf\""),
                ));
            }
        };
        let prefix = raw
            .key_prefix
            .as_ref()
            .map_or_else(|| "client".to_string(), |p| p.get_ref().clone());
        let cost = raw.cost.as_ref().map_or(1, |c| c.get_ref().0);
        let start = dur(&raw.start).unwrap_or(Nanos::ZERO);
        let end = dur(&raw.end).unwrap_or(duration).min(duration);
        if let (Some(s), true) = (&raw.start, start >= end) {
            return Err(self.err(
                s.span(),
                format!("expected `start` before the source's end ({end})"),
            ));
        }
        if let (Some(e), true) = (&raw.end, end <= start) {
            // Only `end = 0` gets here (a later start is reported above): a source
            // that can never send is a mistake, not a silent no-op.
            return Err(self.err(
                e.span(),
                format!("expected `end` after the source's start ({start})"),
            ));
        }
        Ok(TrafficSpec {
            kind,
            keys: KeySpec {
                count,
                popularity,
                prefix,
            },
            cost,
            start,
            end,
        })
    }
}

impl Builder<'_> {
    /// Why boundary half-bursts of width `spread` do not fit `period` apart, at the
    /// field to change: the spread if some spread would fit the period, else the
    /// explicit period, else the source (whose period is the window).
    fn burst_misfit(&self, raw: &RawTraffic, spread: Nanos, period: Nanos) -> ScenarioError {
        let least = least_burst_period(spread);
        let most = most_burst_spread(period);
        if let Some(s) = raw
            .spread
            .as_ref()
            .filter(|_| most.is_some() || least.is_none())
        {
            let of = if raw.period.is_some() {
                ""
            } else {
                " (the window; `period` is not set)"
            };
            let most = most.map_or_else(
                || "which no period can satisfy".to_string(),
                |m| format!("so a spread of at most {m}"),
            );
            return self.err(
                s.span(),
                format!(
                    "`spread` of {spread} is too wide for a period of {period}{of}: {BURST_RULE}, {most}"
                ),
            );
        }
        // No spread fits the period, and a longer one would fit this spread (a spread
        // too wide for any period was blamed above, so `least` exists).
        let least = least.unwrap_or(Nanos::MAX);
        match &raw.period {
            Some(p) => self.err(
                p.span(),
                format!(
                    "`period` of {period} is too short for a spread of {spread}: {BURST_RULE}, so a \
                     period of at least {least}"
                ),
            ),
            None => self.err(raw.kind.span(), window_too_short_for_bursts(period, spread)),
        }
    }
}

impl RawTraffic {
    /// The optional fields that are set, with their positions.
    fn present_fields(&self) -> Vec<(&'static str, Range<usize>)> {
        fn span<T>(s: &Option<Spanned<T>>) -> Option<Range<usize>> {
            s.as_ref().map(|s| s.span())
        }
        [
            ("rate", span(&self.rate)),
            ("size", span(&self.size)),
            ("spread", span(&self.spread)),
            ("period", span(&self.period)),
            ("on", span(&self.on)),
            ("off", span(&self.off)),
            ("path", span(&self.path)),
            ("keys", span(&self.keys)),
            ("key_popularity", span(&self.key_popularity)),
            ("zipf_exponent", span(&self.zipf_exponent)),
            ("key_prefix", span(&self.key_prefix)),
            ("cost", span(&self.cost)),
            ("start", span(&self.start)),
            ("end", span(&self.end)),
        ]
        .into_iter()
        .filter_map(|(name, s)| s.map(|s| (name, s)))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "t"
duration = "60s"
[limit]
max_requests = 5
window = "10s"
[[traffic]]
kind = "uniform"
rate = 0.3
"#;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(text, Path::new("dir/s.toml"))
    }

    #[test]
    fn a_minimal_scenario_gets_documented_defaults() {
        let s = parse(MINIMAL).unwrap();
        assert_eq!(s.seed, 0);
        assert_eq!(s.client, ClientModel::Open);
        assert_eq!(s.algorithms.len(), Registry::default().names().count());
        assert_eq!(s.rule.burst(), 5);
        let t = &s.traffic[0];
        assert_eq!((t.cost, t.start, t.end), (1, Nanos::ZERO, s.duration));
        assert_eq!(t.keys.count, 1);
    }

    #[test]
    fn float_rates_and_durations_are_read_as_exact_decimals() {
        let s = parse(&MINIMAL.replace("\"10s\"", "0.1")).unwrap();
        assert_eq!(s.rule.window(), Nanos::new(100_000_000));
        let TrafficKind::Uniform { rate } = s.traffic[0].kind else {
            panic!("not uniform")
        };
        // 0.3 per second: arrival 3 at exactly 10 s, arrival 1 at floor(3.33…) s.
        assert_eq!(rate.nth_arrival(3), Nanos::from_secs(10));
        assert_eq!(rate.nth_arrival(1), Nanos::new(3_333_333_333));
    }

    #[test]
    fn errors_point_at_the_line_and_column_of_the_bad_value() {
        let err = parse(&MINIMAL.replace("max_requests = 5", "max_requests = 0")).unwrap_err();
        assert_eq!(err.position, Some((5, 16)), "{err}");
        assert!(err.to_string().starts_with("dir/s.toml:5:16: "), "{err}");
    }

    #[test]
    fn a_source_that_ends_at_zero_is_an_error_at_its_end() {
        let err = parse(&format!("{MINIMAL}end = 0\n")).unwrap_err();
        assert_eq!(err.position, Some((10, 7)), "{err}");
        assert!(err.message.contains("`end` after"), "{err}");
    }

    #[test]
    fn the_expected_arrival_count_follows_each_source_kind() {
        let with = |traffic: &str| {
            parse(&format!(
                "name = \"t\"\nduration = \"60s\"\n[limit]\nmax_requests = 5\n\
                 window = \"10s\"\n[[traffic]]\n{traffic}"
            ))
            .unwrap()
            .expected_arrivals()
        };
        // ceil(60 s × 0.3 per s): arrivals at 0, 3.33…, …, 56.66… s.
        assert_eq!(with("kind = \"uniform\"\nrate = 0.3\n"), 18);
        assert_eq!(with("kind = \"uniform\"\nrate = 2\nstart = \"30s\"\n"), 60);
        assert_eq!(with("kind = \"poisson\"\nrate = 2\n"), 120);
        // Busy a quarter of the time.
        assert_eq!(
            with("kind = \"on_off\"\nrate = 10\non = \"1s\"\noff = \"3s\"\n"),
            150
        );
        // 2 × size at each of the six boundaries 10 s … 60 s.
        assert_eq!(with("kind = \"boundary_burst\"\nsize = 5\n"), 60);
        assert_eq!(
            with("kind = \"boundary_burst\"\nsize = 5\nperiod = \"7s\"\n"),
            90
        );
        // Traces are not counted: they are as long as their file.
        assert_eq!(with("kind = \"trace\"\npath = \"t.csv\"\n"), 0);
        // Sources add up, and the largest rate over the longest duration does not overflow.
        let huge = parse(
            "name = \"t\"\nduration = \"213503d\"\n[limit]\nmax_requests = 5\n\
             window = \"1ns\"\n[[traffic]]\nkind = \"uniform\"\nrate = 18000000000\n\
             [[traffic]]\nkind = \"poisson\"\nrate = 1\n",
        )
        .unwrap();
        assert_eq!(
            huge.expected_arrivals(),
            18_000_000_001 * 213_503 * 86_400,
            "{huge:?}"
        );
    }

    #[test]
    fn line_and_column_count_characters_not_bytes() {
        assert_eq!(line_col("ab\nçd", 5), (2, 2));
        assert_eq!(line_col("", 0), (1, 1));
        assert_eq!(
            line_col("é", 1),
            (1, 1),
            "mid-character offsets do not panic"
        );
    }
}
