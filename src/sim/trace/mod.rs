//! Trace files: request logs replayed as traffic, read one row at a time.
//!
//! A trace is read as a stream, never whole, and every row is checked as it is read:
//! its syntax, a key, a whole-number cost, and times sorted (the arrival merge relies on
//! it). Problems are [`TraceError`]s at `file:line:col`. This module knows nothing of
//! scenarios, arrival streams or algorithms; it turns bytes into [`TraceRow`]s and stops.
//!
//! Each log format is one file implementing [`Format`]; today there is one,
//! [`csv`] (`time_s,key[,cost]`). A new format is a new file here plus a way to pick it
//! in [`TraceReader`], not a change to the others.

mod csv;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::time::Nanos;

/// One row of a trace file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRow {
    /// When the request arrives.
    pub time: Nanos,
    /// Which client sent it.
    pub key: String,
    /// Its cost, if the row gives one.
    pub cost: Option<u64>,
}

/// A trace file that could not be read, or a row that is not valid.
///
/// Displays as `file:line:col: message`, or `file: message` when the problem has no
/// single position (for example, the file could not be opened). A scenario that
/// replays the trace reports it as a
/// [`ScenarioError`](crate::sim::ScenarioError) with the same fields and text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", .path.display(), Location(*.position))]
pub struct TraceError {
    /// The trace file.
    pub path: PathBuf,
    /// 1-based line and column, when the problem has a position.
    pub position: Option<(usize, usize)>,
    /// What was expected, and what was found.
    pub message: String,
}

impl TraceError {
    /// An error about the whole file, or about a line (at its first column).
    fn new(path: &Path, line: Option<usize>, message: String) -> TraceError {
        TraceError {
            path: path.to_path_buf(),
            position: line.map(|l| (l, 1)),
            message,
        }
    }
}

/// `:line:col` of a position, or nothing: how file errors show where they are.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Location(pub(crate) Option<(usize, usize)>);

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some((line, col)) => write!(f, ":{line}:{col}"),
            None => Ok(()),
        }
    }
}

/// One log format: its rows in file order, each checked as it is read.
///
/// A format reports every problem at the row's line, skips what the format says to
/// skip (headers, comments, blank lines), and rejects a row earlier than the one
/// before it (in its own words, naming the time as written).
trait Format: Send {
    /// The next row, or `None` at the end of the file.
    fn next_row(&mut self) -> Result<Option<TraceRow>, TraceError>;
}

/// Streams a trace file's rows, checking each.
///
/// The format is `time_s,key[,cost]` CSV: a header line starting with `time_s` is
/// skipped, as are blank lines and lines starting with `#`; times are exact decimal
/// seconds.
pub struct TraceReader {
    format: Box<dyn Format>,
}

impl TraceReader {
    /// Opens the trace at `path`.
    pub fn open(path: &Path) -> Result<TraceReader, TraceError> {
        let file = File::open(path)
            .map_err(|e| TraceError::new(path, None, format!("cannot open trace: {e}")))?;
        Ok(TraceReader::from_reader(path, BufReader::new(file)))
    }

    /// Reads a trace from `reader` (e.g. bytes in memory); `path` names it in errors.
    ///
    /// ```
    /// use std::path::Path;
    /// use ratesim::{Nanos, sim::TraceReader};
    /// let mut trace = TraceReader::from_reader(Path::new("t.csv"), &b"time_s,key\n0.5,alice\n"[..]);
    /// assert_eq!(trace.next_row()?.map(|r| r.time), Some(Nanos::from_millis(500)));
    /// assert_eq!(trace.next_row()?, None);
    /// # Ok::<(), ratesim::sim::ScenarioError>(())
    /// ```
    pub fn from_reader(path: &Path, reader: impl Read + Send + 'static) -> TraceReader {
        TraceReader {
            format: Box::new(csv::CsvTrace::new(path, reader)),
        }
    }

    /// The next row, or `None` at the end of the file.
    pub fn next_row(&mut self) -> Result<Option<TraceRow>, TraceError> {
        self.format.next_row()
    }
}

/// `text` as a whole number from 0 to `u64::MAX`, or why not, in the words the
/// scenario file uses for whole numbers: for numbers outside TOML, such as a trace's
/// cost or the CLI's `--limit` and `--burst`.
///
/// ```
/// use ratesim::sim::parse_whole;
/// assert_eq!(parse_whole("42"), Ok(42));
/// assert!(parse_whole("18446744073709551616").unwrap_err().contains("too large"));
/// assert!(parse_whole("-1").unwrap_err().contains("negative"));
/// ```
pub fn parse_whole(text: &str) -> Result<u64, String> {
    let expected = format!("expected a whole number from 0 to {}", u64::MAX);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u64>() {
        Ok(n) => Ok(n),
        Err(_) if digits(text.trim_start_matches('+')) => {
            Err(format!("`{text}` is too large (at most {})", u64::MAX))
        }
        Err(_) if text.strip_prefix('-').is_some_and(digits) => {
            Err(format!("`{text}` is negative; {expected}"))
        }
        Err(_) => Err(format!("`{text}` is not a whole number; {expected}")),
    }
}
