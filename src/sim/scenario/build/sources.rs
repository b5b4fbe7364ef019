//! Building `[[traffic]]` sources: which fields each kind takes, one helper per kind,
//! then the clients, cost and active span every kind shares.
//!
//! Like the rest of [`super`], this validates and fills in defaults, reporting the first
//! problem at the field to change; it generates no arrival and opens no trace file.

use toml::Spanned;

use super::Builder;
use crate::rule::Rule;
use crate::sim::scenario::burst::{
    BURST_RULE, burst_fits, burst_period, least_burst_period, most_burst_spread,
    window_too_short_for_bursts,
};
use crate::sim::scenario::raw::{CostValue, Dur, RateValue, RawTraffic};
use crate::sim::scenario::{KeySpec, Popularity, Rate, ScenarioError, TrafficKind, TrafficSpec};
use crate::time::Nanos;

/// Each kind's own fields, as `(kind, accepted, required)`, in the order the
/// "unknown kind" message lists them. Every kind but `trace` also takes [`COMMON`].
const KINDS: &[(&str, &[&str], &[&str])] = &[
    ("uniform", &["rate"], &["rate"]),
    ("poisson", &["rate"], &["rate"]),
    ("boundary_burst", &["size", "spread", "period"], &["size"]),
    ("on_off", &["rate", "on", "off"], &["rate", "on", "off"]),
    ("trace", TRACE_FIELDS, &["path"]),
];

/// The fields a `trace` source takes: its file, and how to read it.
const TRACE_FIELDS: &[&str] = &[
    "path",
    "cost",
    "format",
    "key",
    "time_field",
    "time_format",
    "origin",
    "same_second",
    "reorder",
    "include_status",
    "exclude_status",
    "skip_bad_lines",
];

/// The fields every generated (non-trace) source takes: its clients, cost and span.
const COMMON: &[&str] = &[
    "keys",
    "key_popularity",
    "zipf_exponent",
    "key_prefix",
    "cost",
    "start",
    "end",
];

/// The value of an optional duration field.
fn dur(d: &Option<Spanned<Dur>>) -> Option<Nanos> {
    d.as_ref().map(|d| d.get_ref().0)
}

impl Builder<'_> {
    /// One source, valid under `rule` over a run of `duration`.
    pub(super) fn traffic(
        &self,
        raw: &RawTraffic,
        rule: &Rule,
        duration: Nanos,
    ) -> Result<TrafficSpec, ScenarioError> {
        let kind_name = self.kind_fields(raw)?;
        let cost = self.cost(raw, kind_name)?;
        let clients = self.key_count(raw)?;
        let kind = match kind_name {
            "uniform" => TrafficKind::Uniform {
                rate: self.rate(raw, rule, clients)?,
            },
            "poisson" => TrafficKind::Poisson {
                rate: self.rate(raw, rule, clients)?,
            },
            "boundary_burst" => self.boundary_burst(raw, rule)?,
            "on_off" => self.on_off(raw, rule, clients)?,
            _ => self.trace(raw)?,
        };
        let keys = KeySpec {
            count: clients,
            popularity: self.popularity(raw)?,
            prefix: raw
                .key_prefix
                .as_ref()
                .map_or_else(|| "client".to_string(), |p| p.get_ref().clone()),
        };
        let (start, end) = self.active_span(raw, duration)?;
        Ok(TrafficSpec {
            kind,
            keys,
            cost,
            start,
            end,
        })
    }

    /// The source's kind, once it is known and every field it needs, and none it does
    /// not take, is present.
    fn kind_fields<'r>(&self, raw: &'r RawTraffic) -> Result<&'r str, ScenarioError> {
        let kind_name = raw.kind.get_ref().as_str();
        let Some(&(_, accepted, required)) = KINDS.iter().find(|(k, ..)| *k == kind_name) else {
            let known: Vec<&str> = KINDS.iter().map(|(k, ..)| *k).collect();
            return Err(self.err(
                raw.kind.span(),
                format!(
                    "unknown traffic kind `{kind_name}`; expected one of {}",
                    known.join(", ")
                ),
            ));
        };
        let present = raw.present_fields();
        for (field, span) in &present {
            let ok = accepted.contains(field) || (kind_name != "trace" && COMMON.contains(field));
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
        Ok(kind_name)
    }

    /// The `rate` of a kind that requires one, for `clients` clients under `rule`.
    fn rate(&self, raw: &RawTraffic, rule: &Rule, clients: u32) -> Result<Rate, ScenarioError> {
        let r = raw.rate.as_ref().expect("checked as required");
        let RateValue { value, of_limit } = r.get_ref();
        match (value.as_u64(), of_limit) {
            (0, _) => Err(self.err(r.span(), "expected a rate above zero")),
            (multiple, true) => {
                Rate::of_limit(multiple, clients, rule).map_err(|e| self.err(r.span(), e))
            }
            (n, false) => Ok(Rate {
                per_giga_secs: n,
                of_limit: None,
            }),
        }
    }

    fn boundary_burst(&self, raw: &RawTraffic, rule: &Rule) -> Result<TrafficKind, ScenarioError> {
        let size_field = raw.size.as_ref().expect("checked as required");
        let size = size_field.get_ref().0;
        if size == 0 {
            return Err(self.err(size_field.span(), "expected a size of at least 1"));
        }
        let spread = dur(&raw.spread).unwrap_or(Nanos::ZERO);
        let explicit = dur(&raw.period);
        let period = burst_period(explicit, rule);
        if !burst_fits(spread, period) {
            return Err(self.burst_misfit(raw, spread, period));
        }
        Ok(TrafficKind::BoundaryBurst {
            size,
            spread,
            period: explicit,
        })
    }

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

    fn on_off(
        &self,
        raw: &RawTraffic,
        rule: &Rule,
        clients: u32,
    ) -> Result<TrafficKind, ScenarioError> {
        let on = raw.on.as_ref().expect("checked as required");
        if on.get_ref().0 == Nanos::ZERO {
            return Err(self.err(on.span(), "expected an `on` period above zero"));
        }
        Ok(TrafficKind::OnOff {
            rate: self.rate(raw, rule, clients)?,
            on: on.get_ref().0,
            off: dur(&raw.off).unwrap_or(Nanos::ZERO),
        })
    }

    /// `cost`: permits per request, default 1. Only a trace may name a field instead
    /// (read by [`Builder::trace`]); its requests without one cost the default.
    fn cost(&self, raw: &RawTraffic, kind: &str) -> Result<u64, ScenarioError> {
        match raw.cost.as_ref().map(|c| (c.get_ref(), c.span())) {
            None => Ok(1),
            Some((CostValue::Number(n), _)) => Ok(*n),
            Some((CostValue::Field(_), _)) if kind == "trace" => Ok(1),
            Some((CostValue::Field(f), span)) => Err(self.err(
                span,
                format!(
                    "found the string {f:?}; expected a whole number from 0 to {}, without \
                     quotes (only a `trace` source can name a field for its cost)",
                    u64::MAX
                ),
            )),
        }
    }

    /// `keys`: how many clients, default 1.
    fn key_count(&self, raw: &RawTraffic) -> Result<u32, ScenarioError> {
        let Some(k) = &raw.keys else {
            return Ok(1);
        };
        match u32::try_from(k.get_ref().0) {
            Ok(n) if (1..u32::MAX).contains(&n) => Ok(n),
            _ => Err(self.err(
                k.span(),
                format!("expected between 1 and {} keys", u32::MAX - 1),
            )),
        }
    }

    /// `key_popularity` and its `zipf_exponent`, default uniform.
    fn popularity(&self, raw: &RawTraffic) -> Result<Popularity, ScenarioError> {
        let named = raw
            .key_popularity
            .as_ref()
            .map(|p| (p.get_ref().as_str(), p.span()));
        if let (Some((_, span)), "boundary_burst") = (&named, raw.kind.get_ref().as_str()) {
            return Err(self.err(
                span.clone(),
                "`key_popularity` does not apply to boundary_burst: every one of its `keys` \
                 clients sends the whole burst",
            ));
        }
        match named {
            None | Some(("uniform", _)) => {
                if let Some(z) = &raw.zipf_exponent {
                    return Err(self.err(
                        z.span(),
                        "`zipf_exponent` applies only to key_popularity = \"zipf\"",
                    ));
                }
                Ok(Popularity::Uniform)
            }
            Some(("zipf", _)) => {
                let exponent = raw.zipf_exponent.as_ref().map_or(1.0, |z| *z.get_ref());
                if !(exponent.is_finite() && exponent >= 0.0) {
                    let span = raw.zipf_exponent.as_ref().map(|z| z.span());
                    return Err(self.err(
                        span.unwrap_or_default(),
                        "expected a zipf_exponent of 0 or more",
                    ));
                }
                Ok(Popularity::Zipf { exponent })
            }
            Some((other, span)) => Err(self.err(
                span,
                format!("unknown key_popularity `{other}`; expected \"uniform\" or \"zipf\""),
            )),
        }
    }

    /// `[start, end)`: no arrival before `start` (default 0) nor at or after `end`
    /// (default, and at most, the run's `duration`).
    fn active_span(
        &self,
        raw: &RawTraffic,
        duration: Nanos,
    ) -> Result<(Nanos, Nanos), ScenarioError> {
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
        Ok((start, end))
    }
}
