//! From a line's fields to a request: its time, key and cost, or "filtered out" by
//! its status, or why the line is not a request.
//!
//! Shared by every format: a format only says what a line's fields are
//! ([`super::Format::field`]); which fields make the key, the cost and the time is
//! decided here, once, from the [`TraceOptions`]. Ordering and the origin are not
//! this module's business ([`super::order`]).

use std::borrow::Cow;

use super::options::{KeyPart, KeyTemplate, StatusMatch, TimeFormat, TraceFormat, TraceOptions};
use super::timestamp::{self, Stamp};
use super::{Format, parse_whole};

/// One request read from a line, before ordering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Request {
    /// Its instant in the trace's own terms (see [`Stamp`]).
    pub(super) stamp: Stamp,
    /// The client.
    pub(super) key: String,
    /// Its cost, when the line gives one.
    pub(super) cost: Option<u64>,
    /// The line it was read from (1-based).
    pub(super) line: usize,
    /// The time as written, for messages.
    pub(super) time_text: String,
}

/// Reads requests out of lines, as the options say.
pub(super) struct Extractor {
    time_field: String,
    time_format: TimeFormat,
    key: KeyTemplate,
    /// The cost field, and whether a line may lack it (the CSV's implicit `cost`).
    cost: Option<(String, bool)>,
    include: Vec<StatusMatch>,
    exclude: Vec<StatusMatch>,
    /// The last time text parsed and its stamp: a log writes the same second on many
    /// lines in a row, parsed once (the same text always gives the same stamp).
    last_time: (String, Stamp),
}

impl Extractor {
    pub(super) fn new(options: &TraceOptions) -> Extractor {
        let cost = match (&options.cost_field, options.format) {
            (Some(field), _) => Some((field.clone(), false)),
            (None, TraceFormat::Csv) => Some(("cost".to_string(), true)),
            (None, _) => None,
        };
        Extractor {
            time_field: options.effective_time_field().to_string(),
            time_format: options.effective_time_format(),
            key: options.effective_key(),
            cost,
            include: options.include_status.clone(),
            exclude: options.exclude_status.clone(),
            last_time: (String::new(), 0),
        }
    }

    /// The request on the current line of `format` (numbered `line`), `None` when its
    /// status is filtered out, or why the line is not a request.
    pub(super) fn request(
        &mut self,
        format: &dyn Format,
        line: usize,
    ) -> Result<Option<Request>, String> {
        if !self.keeps_status(format)? {
            return Ok(None);
        }
        let time_text = required(format, &self.time_field)?;
        let stamp = if !time_text.is_empty() && self.last_time.0 == time_text {
            self.last_time.1
        } else {
            let stamp = timestamp::parse(&time_text, self.time_format)
                .map_err(|e| format!("bad {}: {e}", self.time_field))?;
            self.last_time.0.clear();
            self.last_time.0.push_str(&time_text);
            self.last_time.1 = stamp;
            stamp
        };
        let key = self.key(format)?;
        let cost = match &self.cost {
            None => None,
            Some((field, optional)) => match format.field(field)? {
                None if *optional => None,
                Some(text) if *optional && text.is_empty() => None,
                None => return Err(format!("no `{field}` field for the cost")),
                Some(text) => Some(parse_whole(&text).map_err(|e| format!("bad cost: {e}"))?),
            },
        };
        Ok(Some(Request {
            stamp,
            key,
            cost,
            line,
            time_text: time_text.into_owned(),
        }))
    }

    /// Whether the line's status passes `include_status` / `exclude_status`.
    fn keeps_status(&self, format: &dyn Format) -> Result<bool, String> {
        if self.include.is_empty() && self.exclude.is_empty() {
            return Ok(true);
        }
        let text = required(format, "status")?;
        let status: u16 = text
            .parse()
            .map_err(|_| format!("bad status: `{text}` is not an HTTP status code"))?;
        let included = self.include.is_empty() || self.include.iter().any(|m| m.matches(status));
        Ok(included && !self.exclude.iter().any(|m| m.matches(status)))
    }

    /// The key, its template filled in with the line's fields.
    fn key(&self, format: &dyn Format) -> Result<String, String> {
        let mut key = String::new();
        for part in self.key.parts() {
            match part {
                KeyPart::Literal(text) => key.push_str(text),
                KeyPart::Field(name) => key.push_str(&required(format, name)?),
            }
        }
        if key.is_empty() {
            let fields: Vec<&str> = self.key.fields().collect();
            return Err(format!(
                "expected a key, found an empty one (from `{}`)",
                fields.join("`, `")
            ));
        }
        Ok(key)
    }
}

/// Field `name` of the current line, which must be there.
fn required<'f>(format: &'f dyn Format, name: &str) -> Result<Cow<'f, str>, String> {
    format
        .field(name)?
        .ok_or_else(|| format!("no `{name}` field"))
}
