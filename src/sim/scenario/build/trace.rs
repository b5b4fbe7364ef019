//! Building a `trace` source: its file, and the [`TraceOptions`] that say how to read
//! it, each field checked against the format it is for.
//!
//! A field that does not apply to the chosen format (`time_format` for `combined`,
//! `origin` for run-offset times, a key field a combined line does not have) is an
//! error at that field. Like the rest of [`super`], this opens no file.

use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use super::Builder;
use crate::sim::scenario::raw::{CostValue, RawTraffic, StatusValue};
use crate::sim::scenario::{ScenarioError, TrafficKind};
use crate::sim::trace::{
    COMBINED_FIELDS, KeyTemplate, SameSecond, StatusMatch, TimeFormat, TraceFormat, TraceOptions,
    parse_time,
};
use crate::time::Nanos;

impl Builder<'_> {
    /// A trace source; its path resolves against the scenario's folder.
    pub(super) fn trace(&self, raw: &RawTraffic) -> Result<TrafficKind, ScenarioError> {
        let p = raw.path.as_ref().expect("checked as required");
        let folder = self.origin.parent().unwrap_or(Path::new(""));
        let format = match &raw.format {
            None => TraceFormat::Csv,
            Some(f) => TraceFormat::from_name(f.get_ref()).ok_or_else(|| {
                self.err(
                    f.span(),
                    format!(
                        "unknown trace format `{}`; expected one of {}",
                        f.get_ref(),
                        TraceFormat::NAMES.join(", ")
                    ),
                )
            })?,
        };
        let mut options = TraceOptions {
            format,
            same_second: self.same_second(raw)?,
            reorder: raw.reorder.as_ref().map_or(Nanos::ZERO, |r| r.get_ref().0),
            include_status: self.statuses(&raw.include_status)?,
            exclude_status: self.statuses(&raw.exclude_status)?,
            skip_bad_lines: raw.skip_bad_lines.as_ref().is_some_and(|s| *s.get_ref()),
            ..TraceOptions::default()
        };
        self.time_fields(raw, &mut options)?;
        if let Some(k) = &raw.key {
            let key = KeyTemplate::parse(k.get_ref()).map_err(|e| self.err(k.span(), e))?;
            for field in key.fields() {
                self.known_field(format, field, k.span(), "key")?;
            }
            options.key = Some(key);
        }
        if let Some(c) = &raw.cost
            && let CostValue::Field(field) = c.get_ref()
        {
            if field.is_empty() {
                return Err(self.err(c.span(), "expected a field name or a whole number"));
            }
            self.known_field(format, field, c.span(), "cost")?;
            options.cost_field = Some(field.clone());
        }
        Ok(TrafficKind::Trace {
            path: folder.join(p.get_ref()),
            options,
        })
    }

    /// `time_field`, `time_format` (CSV and JSONL only) and `origin` (absolute times).
    fn time_fields(
        &self,
        raw: &RawTraffic,
        options: &mut TraceOptions,
    ) -> Result<(), ScenarioError> {
        let combined = options.format == TraceFormat::Combined;
        if let Some(f) = raw.time_field.as_ref().filter(|_| combined) {
            return Err(self.err(
                f.span(),
                "`time_field` does not apply to format = \"combined\" (its time is the \
                 [bracketed] field); it is for \"csv\" and \"jsonl\"",
            ));
        }
        if let Some(f) = raw.time_format.as_ref().filter(|_| combined) {
            return Err(self.err(
                f.span(),
                "`time_format` does not apply to format = \"combined\" (its time is always \
                 `clf`); it is for \"csv\" and \"jsonl\"",
            ));
        }
        if let Some(f) = &raw.time_field {
            if f.get_ref().is_empty() {
                return Err(self.err(f.span(), "expected the name of the field holding the time"));
            }
            options.time_field = Some(f.get_ref().clone());
        }
        if let Some(f) = &raw.time_format {
            let format = TimeFormat::from_name(f.get_ref()).ok_or_else(|| {
                self.err(
                    f.span(),
                    format!(
                        "unknown time_format `{}`; expected one of {}",
                        f.get_ref(),
                        TimeFormat::NAMES.join(", ")
                    ),
                )
            })?;
            options.time_format = Some(format);
        }
        if let Some(o) = &raw.origin {
            if !options.effective_time_format().is_absolute() {
                return Err(self.err(
                    o.span(),
                    "`origin` applies only to absolute times (time_format epoch_*, rfc3339 or \
                     clf); `seconds` times are already offsets from the start of the run",
                ));
            }
            let at = parse_time(o.get_ref(), TimeFormat::Rfc3339)
                .map_err(|e| self.err(o.span(), format!("bad origin: {e}")))?;
            options.origin = Some(at);
        }
        Ok(())
    }

    /// `same_second`: `keep` (default) or `spread`.
    fn same_second(&self, raw: &RawTraffic) -> Result<SameSecond, ScenarioError> {
        match raw
            .same_second
            .as_ref()
            .map(|s| (s.get_ref().as_str(), s.span()))
        {
            None | Some(("keep", _)) => Ok(SameSecond::Keep),
            Some(("spread", _)) => Ok(SameSecond::Spread),
            Some((other, span)) => Err(self.err(
                span,
                format!("unknown same_second `{other}`; expected \"keep\" or \"spread\""),
            )),
        }
    }

    /// `include_status` / `exclude_status`: codes and classes, each checked at its place.
    fn statuses(
        &self,
        list: &Option<Spanned<Vec<Spanned<StatusValue>>>>,
    ) -> Result<Vec<StatusMatch>, ScenarioError> {
        let Some(list) = list else {
            return Ok(Vec::new());
        };
        list.get_ref()
            .iter()
            .map(|s| {
                match s.get_ref() {
                    StatusValue::Code(c) => StatusMatch::code(*c),
                    StatusValue::Text(t) => StatusMatch::parse(t),
                }
                .map_err(|e| self.err(s.span(), e))
            })
            .collect()
    }

    /// Checks that `field` (named by `what`) exists in every line of `format`: only a
    /// combined line's fields are known in advance.
    fn known_field(
        &self,
        format: TraceFormat,
        field: &str,
        span: Range<usize>,
        what: &str,
    ) -> Result<(), ScenarioError> {
        if format != TraceFormat::Combined || COMBINED_FIELDS.contains(&field) {
            return Ok(());
        }
        Err(self.err(
            span,
            format!(
                "`{what}` names `{field}`, which a combined log line does not have; expected \
                 one of {}",
                COMBINED_FIELDS.join(", ")
            ),
        ))
    }
}
