//! The JSON Lines trace format: one JSON object per line, such as nginx's
//! `log_format … escape=json '{"time":"$time_iso8601","ip":"$remote_addr",…}'`.
//!
//! A field is a top-level member, read as text: a string's value, or a number exactly
//! as written (never through a float, so `1700000000.123456789` keeps its nanoseconds);
//! `null` counts as absent. Blank lines are skipped. This file only splits a line into
//! fields; it interprets no value.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;

use super::input::{Input, Lines};
use super::{Fault, Format};

/// A JSON Lines trace being read.
pub(super) struct JsonLines {
    lines: Lines,
    /// The current line's members, as their raw JSON text.
    fields: HashMap<String, Box<RawValue>>,
}

impl JsonLines {
    pub(super) fn new(input: Input) -> JsonLines {
        JsonLines {
            lines: Lines::new(input),
            fields: HashMap::new(),
        }
    }
}

impl Format for JsonLines {
    fn advance(&mut self) -> Result<Option<usize>, Fault> {
        let parse = |text: &str| {
            serde_json::from_str(text)
                .map_err(|e| format!("expected one JSON object per line: {e}"))
        };
        let Some((number, fields)) = self.lines.next_parsed(parse)? else {
            return Ok(None);
        };
        self.fields = fields;
        Ok(Some(number))
    }

    fn field(&self, name: &str) -> Result<Option<Cow<'_, str>>, String> {
        let Some(raw) = self.fields.get(name) else {
            return Ok(None);
        };
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'"') => serde_json::from_str::<String>(text)
                .map(|s| Some(Cow::Owned(s)))
                .map_err(|e| format!("field `{name}`: {e}")),
            Some(b'-' | b'0'..=b'9') => Ok(Some(Cow::Borrowed(text))),
            Some(b'n') => Ok(None),
            _ => Err(format!(
                "field `{name}` is `{text}`; expected a string or a number"
            )),
        }
    }
}
