//! Envoy's two kinds of rate limit: the envoyproxy/ratelimit service's YAML (a
//! `domain` and nested `descriptors`, each limit `rate_limit: {unit,
//! requests_per_unit}`), and the local rate limit filter's `token_bucket` (`max_tokens`,
//! `tokens_per_fill`, `fill_interval`) anywhere in an Envoy config.
//!
//! The service's units are fixed numbers of seconds (its `UnitToDivider`): second,
//! minute, hour, day, week, month (30 days) and year (365 days), each window aligned to
//! the Unix epoch, as the `envoy` preset models them. Descriptors marked
//! `unlimited` or `shadow_mode` never refuse a request: they are named in a warning,
//! not imported.

use super::yaml::{self, Node, Value};
use super::{Fault, ImportedLimit, Parsed, Warning};
use crate::time::Nanos;

/// The ratelimit service's config: one scenario per descriptor with a `rate_limit`.
pub(super) fn parse_service(text: &str) -> Parsed {
    let doc = yaml::parse(text)?;
    let mut warnings = Vec::new();
    let domain = doc
        .get("domain")
        .ok_or_else(|| {
            Fault::at(
                doc.line,
                "no `domain:` (the ratelimit service requires one)",
            )
        })?
        .text("a domain name")?
        .to_string();
    for (key, node) in doc.entries() {
        if !matches!(key.as_str(), "domain" | "descriptors") {
            warnings.push(Warning {
                line: node.line,
                message: format!("`{key}` is not a ratelimit config field: ignored"),
            });
        }
    }
    let mut limits = Vec::new();
    if let Some(descriptors) = doc.get("descriptors") {
        for d in descriptors.list("descriptors")? {
            descriptor(d, &domain, &mut limits, &mut warnings)?;
        }
    }
    Ok((limits, warnings))
}

/// One descriptor and those nested under it; `path` is the name so far.
fn descriptor(
    d: &Node,
    path: &str,
    limits: &mut Vec<ImportedLimit>,
    warnings: &mut Vec<Warning>,
) -> Result<(), Fault> {
    let key = d
        .get("key")
        .ok_or_else(|| Fault::at(d.line, "a descriptor without `key:`"))?
        .text("a descriptor key")?;
    let value = match d.get("value") {
        Some(v) => Some(v.text("a descriptor value")?),
        None => None,
    };
    let name = match value {
        Some(v) => format!("{path}_{key}_{v}"),
        None => format!("{path}_{key}"),
    };
    let shown = match value {
        Some(v) => format!("{key}={v}"),
        None => key.to_string(),
    };
    for (field, node) in d.entries() {
        match field.as_str() {
            "key" | "value" | "rate_limit" | "descriptors" | "detailed_metric" => {}
            "shadow_mode" if node.text("true or false").is_ok_and(|t| t == "true") => warnings
                .push(Warning {
                    line: node.line,
                    message: format!(
                        "descriptor {shown} is in shadow_mode (counted, never refused): \
                         not imported"
                    ),
                }),
            "shadow_mode" => {}
            other => warnings.push(Warning {
                line: node.line,
                message: format!("`{other}` in descriptor {shown} is not modelled: ignored"),
            }),
        }
    }
    let shadow = d
        .get("shadow_mode")
        .is_some_and(|n| n.text("").is_ok_and(|t| t == "true"));
    if let Some(rate) = d.get("rate_limit")
        && !shadow
        && let Some(limit) = rate_limit(rate, &name, key, &shown, warnings)?
    {
        limits.push(limit);
    }
    if let Some(nested) = d.get("descriptors") {
        for n in nested.list("descriptors")? {
            descriptor(n, &name, limits, warnings)?;
        }
    }
    Ok(())
}

/// `rate_limit: {unit, requests_per_unit}` (or `unlimited: true`, which never refuses).
fn rate_limit(
    rate: &Node,
    name: &str,
    key: &str,
    shown: &str,
    warnings: &mut Vec<Warning>,
) -> Result<Option<ImportedLimit>, Fault> {
    if rate
        .get("unlimited")
        .is_some_and(|n| n.text("").is_ok_and(|t| t == "true"))
    {
        warnings.push(Warning {
            line: rate.line,
            message: format!("descriptor {shown} is unlimited: not imported"),
        });
        return Ok(None);
    }
    for (field, node) in rate.entries() {
        if !matches!(
            field.as_str(),
            "unit" | "requests_per_unit" | "name" | "unlimited"
        ) {
            warnings.push(Warning {
                line: node.line,
                message: format!("`{field}` in rate_limit is not modelled: ignored"),
            });
        }
    }
    let unit_node = rate
        .get("unit")
        .ok_or_else(|| Fault::at(rate.line, "rate_limit without `unit:`"))?;
    let unit = unit_node.text("a unit")?;
    let window = match unit.to_ascii_lowercase().as_str() {
        "second" => Nanos::from_secs(1),
        "minute" => Nanos::from_secs(60),
        "hour" => Nanos::from_secs(3_600),
        "day" => Nanos::from_secs(86_400),
        // The service's own lengths: a month is 30 days, a year 365 (not the calendar's).
        "week" => Nanos::from_secs(7 * 86_400),
        "month" => Nanos::from_secs(30 * 86_400),
        "year" => Nanos::from_secs(365 * 86_400),
        _ => {
            return Err(Fault::at(
                unit_node.line,
                format!(
                    "unknown unit `{unit}`; expected second, minute, hour, day, week, month \
                     or year"
                ),
            ));
        }
    };
    let n_node = rate
        .get("requests_per_unit")
        .ok_or_else(|| Fault::at(rate.line, "rate_limit without `requests_per_unit:`"))?;
    let max_requests = n_node.uint32("requests_per_unit")?;
    if max_requests == 0 {
        // A ban (the ratelimit README's "black list IP" example): nothing to simulate.
        warnings.push(Warning {
            line: n_node.line,
            message: format!(
                "descriptor {shown} has requests_per_unit 0, refusing every request: \
                 not imported"
            ),
        });
        return Ok(None);
    }
    let field = (key == "remote_address").then_some("ip");
    if field.is_none() {
        warnings.push(Warning {
            line: rate.line,
            message: format!(
                "descriptor key `{key}` has no field in a combined log: a replayed trace is \
                 keyed by its default field (pass --key to choose)"
            ),
        });
    }
    Ok(Some(ImportedLimit {
        name: name.to_string(),
        preset: "envoy",
        max_requests,
        window,
        burst: None,
        nginx: None,
        key: field,
        sources: vec![(
            rate.line,
            format!(
                "descriptor {shown}: {max_requests} per {}",
                unit.to_ascii_lowercase()
            ),
        )],
    }))
}

/// Every `token_bucket` in an Envoy config: one scenario each.
pub(super) fn parse_local(text: &str) -> Parsed {
    let doc = yaml::parse(text)?;
    let mut limits = Vec::new();
    let mut warnings = Vec::new();
    walk(&doc, "local_rate_limit", &mut limits, &mut warnings)?;
    Ok((limits, warnings))
}

/// Finds token buckets below `node`; `prefix` is the nearest `stat_prefix`.
fn walk(
    node: &Node,
    prefix: &str,
    limits: &mut Vec<ImportedLimit>,
    warnings: &mut Vec<Warning>,
) -> Result<(), Fault> {
    match &node.value {
        Value::List(items) => {
            for item in items {
                walk(item, prefix, limits, warnings)?;
            }
        }
        Value::Map(entries) => {
            let prefix = match node.get("stat_prefix") {
                Some(p) => p.text("a stat_prefix")?,
                None => prefix,
            };
            if let Some(bucket) = node.get("token_bucket") {
                enabled(node, warnings);
                let name = match node.get("entries") {
                    Some(e) => format!("{prefix}_{}", entries_name(e)?),
                    None => prefix.to_string(),
                };
                limits.push(token_bucket(bucket, name)?);
            }
            for (key, value) in entries {
                if key != "token_bucket" {
                    walk(value, prefix, limits, warnings)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// A local descriptor's `entries` as a name: `key_value_key_value`.
fn entries_name(entries: &Node) -> Result<String, Fault> {
    let mut parts = Vec::new();
    for e in entries.list("entries")? {
        for field in ["key", "value"] {
            if let Some(v) = e.get(field) {
                parts.push(v.text("a descriptor entry")?.to_string());
            }
        }
    }
    Ok(parts.join("_"))
}

/// Warns where the HTTP filter would not enforce the bucket on every request:
/// `filter_enabled` / `filter_enforced` absent (Envoy's default is 0 %) or below 100 %.
fn enabled(node: &Node, warnings: &mut Vec<Warning>) {
    let http = node
        .get("@type")
        .and_then(|t| t.text("").ok())
        .is_some_and(|t| t.contains("http.local_ratelimit"));
    for field in ["filter_enabled", "filter_enforced"] {
        match node.get(field) {
            None if http => warnings.push(Warning {
                line: node.line,
                message: format!(
                    "no {field}: Envoy's default is 0 % of requests, so this bucket refuses \
                     nothing until it is set; the scenario simulates it enforced on every \
                     request"
                ),
            }),
            Some(f) => {
                let value = f.get("default_value");
                let numerator = value.and_then(|v| v.get("numerator"));
                let denominator = value
                    .and_then(|v| v.get("denominator"))
                    .and_then(|d| d.text("").ok())
                    .unwrap_or("HUNDRED");
                let full = numerator
                    .and_then(|n| n.text("").ok())
                    .is_some_and(|n| n == "100" && denominator == "HUNDRED");
                if !full {
                    warnings.push(Warning {
                        line: f.line,
                        message: format!(
                            "{field} is not 100 %: the scenario simulates the bucket applied \
                             to every request"
                        ),
                    });
                }
            }
            None => {}
        }
    }
}

/// `token_bucket: {max_tokens, tokens_per_fill, fill_interval}`.
fn token_bucket(bucket: &Node, name: String) -> Result<ImportedLimit, Fault> {
    let max_tokens = bucket
        .get("max_tokens")
        .ok_or_else(|| Fault::at(bucket.line, "token_bucket without `max_tokens:`"))?
        .uint32("max_tokens")?;
    let per_fill = match bucket.get("tokens_per_fill") {
        // A `UInt32Value`: a bare number or `{value: N}`.
        Some(n) => n.get("value").unwrap_or(n).uint32("tokens_per_fill")?,
        None => 1, // Envoy's default: one token a fill
    };
    let interval_node = bucket
        .get("fill_interval")
        .ok_or_else(|| Fault::at(bucket.line, "token_bucket without `fill_interval:`"))?;
    let interval = duration(interval_node)?;
    if interval < Nanos::from_millis(50) {
        return Err(Fault::at(
            interval_node.line,
            "fill_interval below 50ms: Envoy refuses such a bucket",
        ));
    }
    if max_tokens == 0 || per_fill == 0 {
        return Err(Fault::at(
            bucket.line,
            "max_tokens and tokens_per_fill must be at least 1",
        ));
    }
    Ok(ImportedLimit {
        name,
        preset: "envoy_local",
        max_requests: per_fill,
        window: interval,
        burst: Some(max_tokens),
        nginx: None,
        key: None,
        sources: vec![(
            bucket.line,
            format!(
                "token_bucket max_tokens={max_tokens} tokens_per_fill={per_fill} \
                 fill_interval={}s",
                interval.to_decimal_secs()
            ),
        )],
    })
}

/// A protobuf `Duration`: `"1.5s"` (decimal seconds, `s` suffix) or `{seconds, nanos}`.
fn duration(node: &Node) -> Result<Nanos, Fault> {
    if let Value::Map(_) = node.value {
        let seconds = node.get("seconds").map_or(Ok(0), |s| s.uint32("seconds"))?;
        let nanos = node.get("nanos").map_or(Ok(0), |n| n.uint32("nanos"))?;
        if nanos >= 1_000_000_000 {
            return Err(Fault::at(node.line, "nanos must be below 1000000000"));
        }
        return Ok(Nanos::from_secs(seconds).saturating_add(Nanos::new(nanos)));
    }
    let text = node.text("a duration like 1s")?;
    text.strip_suffix('s')
        .and_then(|n| Nanos::parse_decimal_secs(n).ok())
        .ok_or_else(|| {
            Fault::at(
                node.line,
                format!("`{text}` is not a duration: Envoy writes seconds like 1s or 0.5s"),
            )
        })
}
