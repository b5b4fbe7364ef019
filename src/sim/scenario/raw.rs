//! The scenario schema exactly as written: serde structs that keep every value's
//! position, and the exact readers for durations, rates and whole numbers.
//!
//! `Spanned` keeps each value's byte span so the checks made after parsing
//! ([`super::build`]) can still point at the offending text. This module checks only
//! what a value's type says (a duration is a duration, a whole number fits its range);
//! it never judges one field against another, and never fills in a default.

use std::fmt;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use toml::Spanned;

use super::ScenarioError;
use crate::time::Nanos;

/// Parses scenario `text` (read from `origin`) into the raw schema.
pub(super) fn parse(text: &str, origin: &Path) -> Result<RawScenario, ScenarioError> {
    toml::from_str(text).map_err(|e| toml_error(&e, text, origin))
}

/// A whole scenario file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) description: String,
    #[serde(default)]
    pub(super) seed: Whole,
    pub(super) duration: Spanned<Dur>,
    pub(super) algorithms: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) limit: RawLimits,
    pub(super) traffic: Spanned<Vec<RawTraffic>>,
    pub(super) client: Option<RawClient>,
    pub(super) deployment: Option<Spanned<RawDeployment>>,
    pub(super) preset: Option<RawPresets>,
}

/// One `[limit]` table, or one of several `[[limit]]` tables.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimit {
    pub(super) max_requests: Spanned<Whole>,
    pub(super) window: Spanned<Dur>,
    pub(super) burst: Option<Spanned<Whole>>,
}

/// `[limit]` (one rule) or `[[limit]]` (several, enforced together). Deserialised by
/// hand so either form keeps the inner values' positions for error messages.
pub(super) struct RawLimits(pub(super) Vec<RawLimit>);

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

/// Every field any source kind takes; the builder rejects those the kind
/// does not use, at their position.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTraffic {
    pub(super) kind: Spanned<String>,
    pub(super) rate: Option<Spanned<RateValue>>,
    pub(super) size: Option<Spanned<Whole>>,
    pub(super) spread: Option<Spanned<Dur>>,
    pub(super) period: Option<Spanned<Dur>>,
    pub(super) on: Option<Spanned<Dur>>,
    pub(super) off: Option<Spanned<Dur>>,
    pub(super) path: Option<Spanned<String>>,
    pub(super) keys: Option<Spanned<Whole>>,
    pub(super) key_popularity: Option<Spanned<String>>,
    pub(super) zipf_exponent: Option<Spanned<f64>>,
    pub(super) key_prefix: Option<Spanned<String>>,
    pub(super) cost: Option<Spanned<CostValue>>,
    pub(super) start: Option<Spanned<Dur>>,
    pub(super) end: Option<Spanned<Dur>>,
    // `trace` only: how the file is read.
    pub(super) format: Option<Spanned<String>>,
    pub(super) key: Option<Spanned<String>>,
    pub(super) time_field: Option<Spanned<String>>,
    pub(super) time_format: Option<Spanned<String>>,
    pub(super) origin: Option<Spanned<String>>,
    pub(super) same_second: Option<Spanned<String>>,
    pub(super) reorder: Option<Spanned<Dur>>,
    pub(super) include_status: Option<Spanned<Vec<Spanned<StatusValue>>>>,
    pub(super) exclude_status: Option<Spanned<Vec<Spanned<StatusValue>>>>,
    pub(super) skip_bad_lines: Option<Spanned<bool>>,
}

/// `cost`: a whole number, or (for a trace) the name of the field that holds it.
pub(super) enum CostValue {
    Number(u64),
    Field(String),
}

impl<'de> Deserialize<'de> for CostValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CostValue, D::Error> {
        struct Visit;
        impl Visitor<'_> for Visit {
            type Value = CostValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                WholeVisitor::<{ u64::MAX }>.expecting(f)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<CostValue, E> {
                WholeVisitor::<{ u64::MAX }>
                    .visit_u64(v)
                    .map(CostValue::Number)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<CostValue, E> {
                WholeVisitor::<{ u64::MAX }>
                    .visit_i64(v)
                    .map(CostValue::Number)
            }
            fn visit_i128<E: de::Error>(self, v: i128) -> Result<CostValue, E> {
                WholeVisitor::<{ u64::MAX }>
                    .visit_i128(v)
                    .map(CostValue::Number)
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<CostValue, E> {
                WholeVisitor::<{ u64::MAX }>
                    .visit_u128(v)
                    .map(CostValue::Number)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<CostValue, E> {
                WholeVisitor::<{ u64::MAX }>
                    .visit_f64(v)
                    .map(CostValue::Number)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CostValue, E> {
                Ok(CostValue::Field(v.to_string()))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// One entry of `include_status` / `exclude_status`: a code (`404`) or a string
/// (`"4xx"`, checked by the builder).
pub(super) enum StatusValue {
    Code(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for StatusValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StatusValue, D::Error> {
        struct Visit;
        const EXPECTED: &str = "an HTTP status like 404 or a class like \"4xx\"";
        impl Visitor<'_> for Visit {
            type Value = StatusValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<StatusValue, E> {
                Ok(StatusValue::Code(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<StatusValue, E> {
                u64::try_from(v)
                    .map(StatusValue::Code)
                    .map_err(|_| E::custom(format!("`{v}` is negative; expected {EXPECTED}")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<StatusValue, E> {
                Err(E::custom(format!(
                    "`{v:?}` is not a status; expected {EXPECTED}"
                )))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StatusValue, E> {
                Ok(StatusValue::Text(v.to_string()))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// The `[preset.NAME]` tables: a preset's own parameters where `[limit]` cannot say
/// them (only `nginx` has any).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPresets {
    pub(super) nginx: Option<RawNginx>,
}

/// `[preset.nginx]`: `limit_req`'s `burst=`, `nodelay` and `delay=`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNginx {
    pub(super) burst: Option<Whole>,
    pub(super) nodelay: Option<bool>,
    pub(super) delay: Option<Whole>,
}

/// The `[client]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClient {
    /// Default `"open"`, as for a missing `[client]` table.
    pub(super) kind: Option<Spanned<String>>,
    pub(super) max_retries: Option<Spanned<Whole<{ u32::MAX as u64 }>>>,
    pub(super) jitter: Option<Spanned<Dur>>,
}

/// The `[deployment]` table; the builder rejects fields the chosen store does not use.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDeployment {
    pub(super) nodes: Option<Spanned<Whole<{ u32::MAX as u64 }>>>,
    pub(super) balancer: Option<Spanned<String>>,
    pub(super) store: Option<Spanned<String>>,
    pub(super) latency: Option<Spanned<Dur>>,
    pub(super) clock_skew: Option<Spanned<Dur>>,
    pub(super) sync_interval: Option<Spanned<Dur>>,
    pub(super) clock: Option<Spanned<String>>,
}

/// A whole number from 0 to `MAX`, whose messages name that range, never a Rust type
/// (`u64`), and call a number too large "too large".
#[derive(Default)]
pub(super) struct Whole<const MAX: u64 = { u64::MAX }>(pub(super) u64);

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
pub(super) struct Dur(pub(super) Nanos);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        d.deserialize_any(DecimalVisitor(
            "a duration like \"10s\", \"250ms\", \"1m\" or a number of seconds",
            |text| Nanos::parse_duration(text).map_err(|e| e.to_string()),
        ))
        .map(Dur)
    }
}

/// A rate in requests per second (`2`, `0.5`), or per client as a multiple of the
/// limit's rate (`"2x"`, `"0.5x"`); stored as the number `× 10⁹`, exactly.
pub(super) struct RateValue {
    pub(super) value: Nanos,
    /// Written as `"<multiple>x"`.
    pub(super) of_limit: bool,
}

/// What a rate looks like, for messages.
const RATE: &str = "a number of requests per second, like 2 or 0.5, or a multiple of the limit's rate, like \"2x\"";

impl<'de> Deserialize<'de> for RateValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RateValue, D::Error> {
        d.deserialize_any(DecimalVisitor(RATE, |text| match text.strip_suffix('x') {
            Some(multiple) => parse_rate(multiple).map(|value| RateValue {
                value,
                of_limit: true,
            }),
            None => parse_rate(text).map(|value| RateValue {
                value,
                of_limit: false,
            }),
        }))
    }
}

impl RawTraffic {
    /// The optional fields that are set, with their positions.
    pub(super) fn present_fields(&self) -> Vec<(&'static str, Range<usize>)> {
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
            ("format", span(&self.format)),
            ("key", span(&self.key)),
            ("time_field", span(&self.time_field)),
            ("time_format", span(&self.time_format)),
            ("origin", span(&self.origin)),
            ("same_second", span(&self.same_second)),
            ("reorder", span(&self.reorder)),
            ("include_status", span(&self.include_status)),
            ("exclude_status", span(&self.exclude_status)),
            ("skip_bad_lines", span(&self.skip_bad_lines)),
        ]
        .into_iter()
        .filter_map(|(name, s)| s.map(|s| (name, s)))
        .collect()
    }
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
struct DecimalVisitor<T = Nanos>(&'static str, fn(&str) -> Result<T, String>);

impl<T> Visitor<'_> for DecimalVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        // The parser's message already says what was expected.
        (self.1)(v).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        if !v.is_finite() {
            return Err(E::custom(format!(
                "`{v}` is not finite; expected {}",
                self.0
            )));
        }
        self.visit_str(&v.to_string())
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
