//! The `time_s,key[,cost]` CSV trace format.
//!
//! A header line starting with `time_s` is skipped, as are blank lines and lines
//! starting with `#`; fields are trimmed. Times are exact decimal seconds (`1.5`, no
//! unit), never floats. This file only reads rows; it opens no file.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Format, TraceError, TraceRow, parse_whole};
use crate::time::{Nanos, ParseTimeError};

/// A CSV trace being read.
pub(super) struct CsvTrace {
    path: PathBuf,
    reader: ::csv::Reader<Box<dyn Read + Send>>,
    record: ::csv::StringRecord,
    last: Nanos,
    first: bool,
}

impl CsvTrace {
    /// Reads CSV rows from `reader`; `path` names it in errors.
    pub(super) fn new(path: &Path, reader: impl Read + Send + 'static) -> CsvTrace {
        let reader = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(::csv::Trim::All)
            .comment(Some(b'#'))
            .from_reader(Box::new(reader) as Box<dyn Read + Send>);
        CsvTrace {
            path: path.to_path_buf(),
            reader,
            record: ::csv::StringRecord::new(),
            last: Nanos::ZERO,
            first: true,
        }
    }
}

impl Format for CsvTrace {
    fn next_row(&mut self) -> Result<Option<TraceRow>, TraceError> {
        loop {
            let more = self.reader.read_record(&mut self.record).map_err(|e| {
                let line = e.position().map(|p| p.line() as usize);
                TraceError::new(&self.path, line, format!("unreadable row: {e}"))
            })?;
            if !more {
                return Ok(None);
            }
            let line = self.record.position().map(|p| p.line() as usize);
            let fail = |msg: String| TraceError::new(&self.path, line, msg);
            let first = std::mem::replace(&mut self.first, false);
            if first && self.record.get(0) == Some("time_s") {
                continue;
            }
            if self.record.iter().all(str::is_empty) {
                continue; // a blank line
            }
            if !(2..=3).contains(&self.record.len()) {
                let n = self.record.len();
                let fields = if n == 1 { "field" } else { "fields" };
                return Err(fail(format!(
                    "expected `time_s,key[,cost]`, found {n} {fields}"
                )));
            }
            let time_text = &self.record[0];
            let time = parse_time_s(time_text).map_err(fail)?;
            if time < self.last {
                return Err(fail(format!(
                    "time_s {time_text} is earlier than the previous row's {}; \
                     expected rows sorted by time",
                    self.last.to_decimal_secs()
                )));
            }
            let key = self.record[1].to_string();
            if key.is_empty() {
                return Err(fail("expected a key in the second field".to_string()));
            }
            let cost = match self.record.get(2) {
                None | Some("") => None,
                Some(text) => Some(parse_whole(text).map_err(|e| fail(format!("bad cost: {e}")))?),
            };
            self.last = time;
            return Ok(Some(TraceRow { time, key, cost }));
        }
    }
}

/// A `time_s` field as exact decimal seconds, or why not.
fn parse_time_s(text: &str) -> Result<Nanos, String> {
    Nanos::parse_decimal_secs(text).map_err(|e| {
        // Decimal seconds only: the duration hints ("10s") do not apply here.
        let seconds = "expected decimal seconds like 1.5 (no unit)";
        match e {
            ParseTimeError::Invalid(t) | ParseTimeError::UnknownUnit(t) => {
                format!("bad time_s: `{t}` is not a number; {seconds}")
            }
            ParseTimeError::Empty => format!("bad time_s: empty; {seconds}"),
            other => format!("bad time_s: {other}"),
        }
    })
}
