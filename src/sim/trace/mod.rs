//! Trace files: request logs replayed as traffic, read one line at a time.
//!
//! A trace is read as a stream, never whole (gzip included), and every line is checked
//! as it is read: its syntax, a key, a whole-number cost, and its time, which must be
//! sorted or at most `reorder` out of order. Problems are [`TraceError`]s at
//! `file:line:col`. This module knows nothing of scenarios, arrival streams or
//! algorithms; it turns bytes into [`TraceRow`]s and stops.
//!
//! Each log format is one file implementing [`Format`] ([`csv`], [`combined`],
//! [`jsonl`]): it says what a line's fields are, nothing more. What is shared lives
//! apart: [`input`] (gzip, bounded lines), [`extract`] (fields → time, key, cost,
//! status filters), [`timestamp`] (every time format, exact to the ns), [`order`]
//! (the reorder buffer, `same_second`, the origin) and [`options`] (what a scenario
//! can ask for). A new format is a new file here plus a name in [`TraceFormat`].

mod combined;
mod csv;
mod extract;
mod input;
mod jsonl;
mod options;
mod order;
mod timestamp;

use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::time::Nanos;
pub use combined::FIELDS as COMBINED_FIELDS;
pub use options::{KeyTemplate, SameSecond, StatusMatch, TimeFormat, TraceFormat, TraceOptions};
pub(crate) use timestamp::parse as parse_time;

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

/// What went wrong reading a line: a line that is not a request (skippable with
/// `skip_bad_lines`), or a problem that ends the reading (the file is unreadable).
enum Fault {
    /// The line is garbage, truncated, binary, or lacks a field: `(line, message)`.
    Bad(usize, String),
    /// Reading cannot go on (an I/O error, a corrupt gzip stream).
    Fatal(Option<usize>, String),
}

/// One log format: its lines, and the fields of the current one.
///
/// A format skips what it says to skip (headers, comments, blank lines) and reports a
/// line it cannot split into fields as [`Fault::Bad`]. What the fields mean (which is
/// the time, the key, the cost) is not its business.
trait Format: Send {
    /// Moves to the next line that may hold a request: its 1-based number, or `None`
    /// at the end of the file.
    fn advance(&mut self) -> Result<Option<usize>, Fault>;

    /// Field `name` of the current line as text, `None` when the line has no such
    /// field, or why the field is unusable (a JSON object where text was expected).
    fn field(&self, name: &str) -> Result<Option<Cow<'_, str>>, String>;

    /// Whether the current line holds bytes that are not UTF-8 in a field no one asked
    /// for (formats that refuse such lines whole never say so).
    fn lossy(&self) -> bool {
        false
    }
}

/// Lines that were not requests and were skipped (`skip_bad_lines = true`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkippedLines {
    /// How many.
    pub count: u64,
    /// The first one: its line number and why it was skipped.
    pub first: Option<(usize, String)>,
    /// Requests read from lines that hold bytes that are not UTF-8 in fields the
    /// scenario does not use (a user agent, say): kept, and counted here. Any
    /// `skip_bad_lines` setting.
    pub not_utf8: u64,
}

impl SkippedLines {
    /// What a run or `validate` says about the lines skipped in `trace`, as one line.
    ///
    /// ```
    /// use std::path::Path;
    /// use ratesim::sim::SkippedLines;
    /// let s = SkippedLines { count: 2, first: Some((7, "no [time]".into())), not_utf8: 0 };
    /// assert_eq!(
    ///     s.describe(Path::new("a.log")),
    ///     "a.log: skipped 2 lines that are not requests (skip_bad_lines = true); the first, line 7: no [time]"
    /// );
    /// ```
    pub fn describe(&self, trace: &Path) -> String {
        let mut text = self.describe_skipped(trace);
        if self.not_utf8 > 0 {
            let (n, s) = (self.not_utf8, if self.not_utf8 == 1 { "" } else { "s" });
            let read = format!(
                "read {n} request{s} from lines with bytes that are not UTF-8 text in \
                 fields the scenario does not use"
            );
            text = match self.count {
                0 => format!("{}: {read}", trace.display()),
                _ => format!("{text}; {read}"),
            };
        }
        text
    }

    /// The skipped lines' part of [`SkippedLines::describe`].
    fn describe_skipped(&self, trace: &Path) -> String {
        let lines = if self.count == 1 {
            "line that is not a request"
        } else {
            "lines that are not requests"
        };
        let first = self
            .first
            .as_ref()
            .map(|(line, why)| format!("; the first, line {line}: {why}"))
            .unwrap_or_default();
        format!(
            "{}: skipped {} {lines} (skip_bad_lines = true){first}",
            trace.display(),
            self.count
        )
    }
}

/// What the traces read to their end in this process skipped or read lossily, and not
/// yet taken: how a run says so without reading its traces a second time beforehand.
static REPORTS: std::sync::Mutex<Vec<(PathBuf, SkippedLines)>> = std::sync::Mutex::new(Vec::new());

/// Takes what the trace readers that reached their end since the last call skipped
/// (or read from lines with bytes that are not UTF-8): `(trace, what)`, once per trace
/// and report, in the order they ended. A run reads its traces once and then says what
/// [`Scenario::read_traces`](crate::sim::Scenario::read_traces) would have said.
pub fn take_skipped_reports() -> Vec<(PathBuf, SkippedLines)> {
    std::mem::take(&mut *REPORTS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Streams a trace file's rows, checking each.
///
/// By default ([`TraceOptions::default`]) the format is `time_s,key[,cost]` CSV: a
/// header line starting with `time_s` is skipped, as are blank lines and lines starting
/// with `#`; times are exact decimal seconds. Gzip is recognised and decompressed.
pub struct TraceReader {
    path: PathBuf,
    format: Box<dyn Format>,
    extractor: extract::Extractor,
    sorter: order::Sorter,
    origin: order::Origin,
    time_field: String,
    skip_bad_lines: bool,
    skipped: SkippedLines,
    /// Lines whose status the filters left out.
    filtered: u64,
    /// Rows returned so far.
    rows: u64,
    /// Whether what was skipped is in [`REPORTS`].
    reported: bool,
    done: bool,
}

impl TraceReader {
    /// Opens the `time_s,key[,cost]` CSV trace at `path`.
    pub fn open(path: &Path) -> Result<TraceReader, TraceError> {
        TraceReader::open_with(path, &TraceOptions::default())
    }

    /// Opens the trace at `path`, read as `options` say.
    pub fn open_with(path: &Path, options: &TraceOptions) -> Result<TraceReader, TraceError> {
        let file = File::open(path)
            .map_err(|e| TraceError::new(path, None, format!("cannot open trace: {e}")))?;
        Ok(TraceReader::from_reader_with(path, file, options))
    }

    /// Reads a CSV trace from `reader` (e.g. bytes in memory); `path` names it in errors.
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
        TraceReader::from_reader_with(path, reader, &TraceOptions::default())
    }

    /// Reads a trace from `reader` as `options` say; `path` names it in errors.
    ///
    /// ```
    /// use std::path::Path;
    /// use ratesim::{Nanos, sim::{TraceFormat, TraceOptions, TraceReader}};
    /// let line = "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl\"\n";
    /// let options = TraceOptions { format: TraceFormat::Combined, ..TraceOptions::default() };
    /// let mut trace = TraceReader::from_reader_with(Path::new("access.log"), line.as_bytes(), &options);
    /// let row = trace.next_row()?.expect("one request");
    /// assert_eq!((row.time, row.key.as_str()), (Nanos::ZERO, "10.0.0.1"));
    /// # Ok::<(), ratesim::sim::ScenarioError>(())
    /// ```
    pub fn from_reader_with(
        path: &Path,
        reader: impl Read + Send + 'static,
        options: &TraceOptions,
    ) -> TraceReader {
        let input = input::Input::new(reader);
        let format: Box<dyn Format> = match options.format {
            TraceFormat::Csv => Box::new(csv::CsvTrace::new(input, options)),
            TraceFormat::Combined => Box::new(combined::CombinedLog::new(input)),
            TraceFormat::Jsonl => Box::new(jsonl::JsonLines::new(input)),
        };
        let absolute = options.effective_time_format().is_absolute();
        TraceReader {
            path: path.to_path_buf(),
            format,
            extractor: extract::Extractor::new(options),
            sorter: order::Sorter::new(options.reorder, options.same_second, absolute),
            origin: order::Origin::new(options.origin, absolute),
            time_field: options.effective_time_field().to_string(),
            skip_bad_lines: options.skip_bad_lines,
            skipped: SkippedLines::default(),
            filtered: 0,
            rows: 0,
            reported: false,
            done: false,
        }
    }

    /// The next row in time order, or `None` at the end of the file.
    pub fn next_row(&mut self) -> Result<Option<TraceRow>, TraceError> {
        loop {
            if let Some(request) = self.sorter.pop() {
                let time = (self.origin)
                    .place(&request)
                    .map_err(|e| TraceError::new(&self.path, Some(request.line), e))?;
                self.rows += 1;
                return Ok(Some(TraceRow {
                    time,
                    key: request.key,
                    cost: request.cost,
                }));
            }
            if self.done {
                self.record_skipped();
                return match self.nothing_left() {
                    Some(why) => Err(TraceError::new(&self.path, None, why)),
                    None => Ok(None),
                };
            }
            match self.next_request()? {
                Some(request) => {
                    let line = request.line;
                    (self.sorter)
                        .push(request, &self.time_field)
                        .map_err(|e| TraceError::new(&self.path, Some(line), e))?;
                }
                None => {
                    self.sorter.finish();
                    self.done = true;
                }
            }
        }
    }

    /// At the end, leaves what was skipped or read lossily where
    /// [`take_skipped_reports`] finds it (once per reader).
    fn record_skipped(&mut self) {
        let s = &self.skipped;
        if !self.reported && (s.count > 0 || s.not_utf8 > 0) {
            let mut reports = REPORTS.lock().unwrap_or_else(|e| e.into_inner());
            let report = (self.path.clone(), s.clone());
            if !reports.contains(&report) {
                reports.push(report);
            }
        }
        self.reported = true;
    }

    /// At the end, why a trace whose lines were all skipped or filtered out is an error
    /// (a file with no line that could be a request at all is not).
    fn nothing_left(&self) -> Option<String> {
        if self.rows > 0 || (self.skipped.count == 0 && self.filtered == 0) {
            return None;
        }
        let mut why = vec![];
        if self.skipped.count > 0 {
            let first = (self.skipped.first.as_ref())
                .map(|(line, why)| format!(" (the first, line {line}: {why})"))
                .unwrap_or_default();
            let n = self.skipped.count;
            why.push(format!("{n} skipped as not requests{first}"));
        }
        if self.filtered > 0 {
            let n = self.filtered;
            why.push(format!("{n} left out by include_status / exclude_status"));
        }
        Some(format!(
            "no request left to replay: of its lines, {}; expected at least one request",
            why.join(", ")
        ))
    }

    /// The instant the trace's t = 0 stands for, in ns since the Unix epoch: its
    /// `origin`, or else its earliest request's instant once the first row has been
    /// read. `None` for times that are offsets from the start of the run (`seconds`),
    /// and before the first row of a trace without an `origin`.
    ///
    /// ```
    /// use std::path::Path;
    /// use ratesim::sim::{TimeFormat, TraceOptions, TraceReader};
    /// let options = TraceOptions { time_format: Some(TimeFormat::EpochS), ..TraceOptions::default() };
    /// let csv = &b"time_s,key\n1700000030.5,a\n1700000031,a\n"[..];
    /// let mut trace = TraceReader::from_reader_with(Path::new("t.csv"), csv, &options);
    /// assert_eq!(trace.origin(), None, "not read yet");
    /// trace.next_row()?;
    /// assert_eq!(trace.origin(), Some(1_700_000_030_500_000_000));
    /// # Ok::<(), ratesim::sim::ScenarioError>(())
    /// ```
    pub fn origin(&self) -> Option<i128> {
        self.origin.instant()
    }

    /// The lines skipped so far as not requests (always none without `skip_bad_lines`).
    pub fn skipped(&self) -> &SkippedLines {
        &self.skipped
    }

    /// The next request in file order (status filters applied, bad lines skipped if
    /// asked), or `None` at the end of the file.
    fn next_request(&mut self) -> Result<Option<extract::Request>, TraceError> {
        loop {
            let fault = match self.format.advance() {
                Ok(None) => return Ok(None),
                Ok(Some(line)) => match self.extractor.request(self.format.as_ref(), line) {
                    Ok(Some(request)) => {
                        self.skipped.not_utf8 += u64::from(self.format.lossy());
                        return Ok(Some(request));
                    }
                    Ok(None) => {
                        self.filtered += 1;
                        continue;
                    }
                    Err(message) => Fault::Bad(line, message),
                },
                Err(fault) => fault,
            };
            match fault {
                Fault::Bad(line, message) if self.skip_bad_lines => {
                    self.skipped.count += 1;
                    self.skipped.first.get_or_insert((line, message));
                }
                Fault::Bad(line, message) => {
                    return Err(TraceError::new(&self.path, Some(line), message));
                }
                Fault::Fatal(line, message) => {
                    return Err(TraceError::new(&self.path, line, message));
                }
            }
        }
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
    parse_whole_from(text, 0)
}

/// [`parse_whole`] for a number of at least `min` (the CLI's `--limit` MAX and
/// `--burst` take 1 and up): a smaller one is `too small`, and every message names the
/// range that is accepted.
///
/// ```
/// use ratesim::sim::parse_whole_from;
/// assert_eq!(parse_whole_from("3", 1), Ok(3));
/// assert!(parse_whole_from("0", 1).unwrap_err().contains("too small; expected a whole number from 1"));
/// ```
pub fn parse_whole_from(text: &str, min: u64) -> Result<u64, String> {
    let expected = || format!("expected a whole number from {min} to {}", u64::MAX);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u64>() {
        Ok(n) if n < min => Err(format!("`{text}` is too small; {}", expected())),
        Ok(n) => Ok(n),
        Err(_) if digits(text.trim_start_matches('+')) => {
            Err(format!("`{text}` is too large (at most {})", u64::MAX))
        }
        Err(_) if text.strip_prefix('-').is_some_and(digits) => {
            Err(format!("`{text}` is negative; {}", expected()))
        }
        Err(_) => Err(format!("`{text}` is not a whole number; {}", expected())),
    }
}
