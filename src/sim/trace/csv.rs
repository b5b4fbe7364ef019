//! The CSV trace format: `time_s,key[,cost]`, or columns named by a header row.
//!
//! Blank lines and lines starting with `#` are skipped; fields are trimmed. Without
//! `key`, `cost` (a field), `time_field` or `time_format`, a row is `time_s,key[,cost]`
//! by position and a first row starting with `time_s` is a header to skip (the format
//! as it always was). With any of them, columns are named: by the first row when it
//! contains the time field's name, else `time_s,key,cost`. This file only splits rows
//! into fields; it opens no file and interprets no value.

use std::borrow::Cow;

use super::input::Input;
use super::options::{TraceFormat, TraceOptions};
use super::{Fault, Format};

/// The column names of a trace without a header row.
const IMPLICIT: [&str; 3] = ["time_s", "key", "cost"];

/// A CSV trace being read.
pub(super) struct CsvTrace {
    reader: ::csv::Reader<Input>,
    record: ::csv::StringRecord,
    /// The columns' names.
    names: Vec<String>,
    /// Positional `time_s,key[,cost]`, as before named columns existed.
    positional: bool,
    time_field: String,
    first: bool,
}

impl CsvTrace {
    /// Reads CSV rows from `input` as `options` say.
    pub(super) fn new(input: Input, options: &TraceOptions) -> CsvTrace {
        debug_assert_eq!(options.format, TraceFormat::Csv);
        let reader = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .comment(Some(b'#'))
            .from_reader(input);
        let positional = options.key.is_none()
            && options.cost_field.is_none()
            && options.time_field.is_none()
            && options.time_format.is_none();
        CsvTrace {
            reader,
            record: ::csv::StringRecord::new(),
            names: IMPLICIT.iter().map(|n| n.to_string()).collect(),
            positional,
            time_field: options.effective_time_field().to_string(),
            first: true,
        }
    }

    /// Whether the first row is a header: it names the columns instead of holding a
    /// request.
    fn is_header(&self) -> bool {
        if self.positional {
            self.record.get(0).map(str::trim) == Some("time_s")
        } else {
            self.fields().any(|f| f == self.time_field)
        }
    }

    /// The row's fields, trimmed. (Trimmed here, when read, rather than by the CSV
    /// reader, which would copy every row into a new record to trim it.)
    fn fields(&self) -> impl Iterator<Item = &str> {
        self.record.iter().map(str::trim)
    }
}

impl Format for CsvTrace {
    fn advance(&mut self) -> Result<Option<usize>, Fault> {
        loop {
            let more = match self.reader.read_record(&mut self.record) {
                Ok(more) => more,
                Err(e) => {
                    let line = e.position().map(|p| p.line() as usize);
                    let message = format!("unreadable row: {e}");
                    return Err(match (e.kind(), line) {
                        (::csv::ErrorKind::Io(_), _) | (_, None) => Fault::Fatal(line, message),
                        (_, Some(line)) => Fault::Bad(line, message),
                    });
                }
            };
            if !more {
                return Ok(None);
            }
            let line = self.record.position().map_or(0, |p| p.line() as usize);
            let first = std::mem::replace(&mut self.first, false);
            if first && self.is_header() {
                if !self.positional {
                    self.names = self.fields().map(str::to_string).collect();
                }
                continue;
            }
            if self.fields().all(str::is_empty) {
                continue; // a blank line
            }
            let n = self.record.len();
            if self.positional && !(2..=3).contains(&n) {
                let fields = if n == 1 { "field" } else { "fields" };
                let message = format!("expected `time_s,key[,cost]`, found {n} {fields}");
                return Err(Fault::Bad(line, message));
            }
            if !self.positional && n > self.names.len() {
                let message = format!(
                    "found {n} fields, more than the {} columns named ({})",
                    self.names.len(),
                    self.names.join(",")
                );
                return Err(Fault::Bad(line, message));
            }
            return Ok(Some(line));
        }
    }

    fn field(&self, name: &str) -> Result<Option<Cow<'_, str>>, String> {
        let column = self.names.iter().position(|n| n == name);
        Ok(column
            .and_then(|i| self.record.get(i))
            .map(|f| Cow::Borrowed(f.trim())))
    }
}
