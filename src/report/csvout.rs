//! Tidy CSV and JSON writers: `decisions.csv`, `window_counts.csv`, `summary.csv/json`.
//!
//! Times are written as exact decimal seconds computed from integer nanoseconds (the
//! same text as [`Nanos::to_decimal_secs`], without its allocations), never through a
//! float. Quoting is the `csv` crate's. This module formats rows; it must not compute
//! metrics or decide which rows exist.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::output::{AtomicFile, OutputError};
use crate::time::{NANOS_PER_SEC, Nanos};

/// The exact header of `decisions.csv` (docs/design.md §7, plus the retry `attempt`
/// column, a shaper's `delay_s`, the deployment's `node` and the rule a denial came
/// from, `denied_by`). The columns are the same in every run; a cell that does not
/// apply is empty (`node` without a deployment, `denied_by` on an admission).
pub const DECISIONS_HEADER: [&str; 12] = [
    "algorithm",
    "seq",
    "time_s",
    "key",
    "cost",
    "allowed",
    "remaining",
    "retry_after_s",
    "attempt",
    "delay_s",
    "node",
    "denied_by",
];

/// The exact header of `window_counts.csv`.
pub const WINDOW_COUNTS_HEADER: [&str; 4] = ["algorithm", "key", "time_s", "count"];

/// One row of `decisions.csv`: the simulator's own decision row, so the engine's
/// sinks and this writer share one definition.
pub type DecisionRecord<'a> = crate::sim::DecisionRow<'a>;

/// One row of `window_counts.csv`: the trailing-window admitted count of one key at
/// one instant, what the window-count chart plots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowCountRecord<'a> {
    /// Registry name of the algorithm.
    pub algorithm: &'a str,
    /// The client key.
    pub key: &'a str,
    /// The instant.
    pub time: Nanos,
    /// Admitted units (by cost) in the half-open window `(time − W, time]`.
    pub count: u64,
}

/// Appends `n` in decimal to `out`, without allocating.
fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends exact decimal seconds, byte-for-byte what [`Nanos::to_decimal_secs`] returns.
pub fn push_decimal_secs(out: &mut Vec<u8>, time: Nanos) {
    let ns = time.as_u64();
    push_u64(out, ns / NANOS_PER_SEC);
    let mut frac = ns % NANOS_PER_SEC;
    if frac == 0 {
        return;
    }
    let mut digits = [b'0'; 9];
    for d in digits.iter_mut().rev() {
        *d = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    let len = digits.iter().rposition(|&d| d != b'0').map_or(0, |p| p + 1);
    out.push(b'.');
    out.extend_from_slice(&digits[..len]);
}

/// A scratch buffer holding one row's fields back to back, reused for every row.
#[derive(Debug, Default)]
struct RowScratch {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl RowScratch {
    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
    fn end_field(&mut self) {
        self.ends.push(self.bytes.len());
    }
    fn str(&mut self, s: &str) {
        self.bytes.extend_from_slice(s.as_bytes());
        self.end_field();
    }
    fn u64(&mut self, n: u64) {
        push_u64(&mut self.bytes, n);
        self.end_field();
    }
    fn secs(&mut self, t: Nanos) {
        push_decimal_secs(&mut self.bytes, t);
        self.end_field();
    }
    fn fields(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let field = &self.bytes[start..end];
            start = end;
            field
        })
    }
}

/// A streaming CSV writer over any `Write`, with the path it reports in errors.
#[derive(Debug)]
struct RowWriter<W: Write> {
    csv: csv::Writer<W>,
    scratch: RowScratch,
    rows: u64,
    path: PathBuf,
}

impl<W: Write> RowWriter<W> {
    fn new(inner: W, path: PathBuf, header: &[&str]) -> Result<Self, OutputError> {
        let mut csv = csv::WriterBuilder::new()
            .buffer_capacity(64 * 1024)
            .from_writer(inner);
        csv.write_record(header)
            .map_err(|source| OutputError::Csv {
                path: path.clone(),
                source,
            })?;
        Ok(RowWriter {
            csv,
            scratch: RowScratch::default(),
            rows: 0,
            path,
        })
    }

    fn emit(&mut self) -> Result<(), OutputError> {
        self.csv
            .write_record(self.scratch.fields())
            .map_err(|source| OutputError::Csv {
                path: self.path.clone(),
                source,
            })?;
        self.rows += 1;
        Ok(())
    }

    fn into_inner(self) -> Result<W, OutputError> {
        let path = self.path;
        self.csv.into_inner().map_err(|e| OutputError::Write {
            path,
            source: e.into_error(),
        })
    }
}

macro_rules! file_methods {
    ($ty:ident) => {
        impl $ty<AtomicFile> {
            /// Starts writing `path` atomically (under a temporary name) and writes the
            /// header.
            pub fn create(path: &Path) -> Result<Self, OutputError> {
                let file = AtomicFile::create(path)?;
                Self::with_path(file, path.to_path_buf())
            }

            /// Flushes and renames the file into place; returns its final path.
            pub fn finish(self) -> Result<PathBuf, OutputError> {
                self.inner.into_inner()?.finish()
            }
        }

        impl<W: Write> $ty<W> {
            /// Writes the header to `inner` (any writer: stdout, a `Vec<u8>`, …).
            pub fn from_writer(inner: W) -> Result<Self, OutputError> {
                Self::with_path(inner, PathBuf::from("<stream>"))
            }

            /// Number of data rows written so far (the header excluded).
            pub fn rows(&self) -> u64 {
                self.inner.rows
            }

            /// Flushes the CSV buffer and returns the underlying writer.
            pub fn into_inner(self) -> Result<W, OutputError> {
                self.inner.into_inner()
            }
        }
    };
}

/// Streams `decisions.csv` rows with the exact [`DECISIONS_HEADER`].
///
/// Fields are formatted into one reused buffer (no allocation per row); only the key
/// can need quoting and the `csv` crate decides that.
#[derive(Debug)]
pub struct DecisionCsvWriter<W: Write> {
    inner: RowWriter<W>,
}

impl<W: Write> DecisionCsvWriter<W> {
    fn with_path(inner: W, path: PathBuf) -> Result<Self, OutputError> {
        Ok(DecisionCsvWriter {
            inner: RowWriter::new(inner, path, &DECISIONS_HEADER)?,
        })
    }

    /// Writes one decision row.
    pub fn write(&mut self, record: &DecisionRecord<'_>) -> Result<(), OutputError> {
        let s = &mut self.inner.scratch;
        s.clear();
        s.str(record.algorithm);
        s.u64(record.seq);
        s.secs(record.time);
        s.str(record.key);
        s.u64(record.cost);
        s.str(if record.allowed { "true" } else { "false" });
        s.u64(record.remaining);
        // A cost above the capacity can never pass: no wait would help, so the cell is
        // empty rather than a 584-year number a notebook would average in.
        match record.retry_after {
            Some(wait) => s.secs(wait),
            None => s.str(""),
        }
        s.u64(u64::from(record.attempt));
        s.secs(record.delay);
        match record.node {
            Some(node) => s.u64(u64::from(node)),
            None => s.str(""),
        }
        s.str(record.denied_by.unwrap_or(""));
        self.inner.emit()
    }
}

file_methods!(DecisionCsvWriter);

/// Streams `window_counts.csv` rows with the exact [`WINDOW_COUNTS_HEADER`].
#[derive(Debug)]
pub struct WindowCountsCsvWriter<W: Write> {
    inner: RowWriter<W>,
}

impl<W: Write> WindowCountsCsvWriter<W> {
    fn with_path(inner: W, path: PathBuf) -> Result<Self, OutputError> {
        Ok(WindowCountsCsvWriter {
            inner: RowWriter::new(inner, path, &WINDOW_COUNTS_HEADER)?,
        })
    }

    /// Writes one window-count row.
    pub fn write(&mut self, record: &WindowCountRecord<'_>) -> Result<(), OutputError> {
        let s = &mut self.inner.scratch;
        s.clear();
        s.str(record.algorithm);
        s.str(record.key);
        s.secs(record.time);
        s.u64(record.count);
        self.inner.emit()
    }
}

file_methods!(WindowCountsCsvWriter);

/// Writes `rows` as CSV (header from the field names) to any writer, e.g. stdout for
/// `--format csv`. Zero rows write nothing, not even a header (serde derives the
/// header from the first row).
pub fn write_csv_rows_to<W: Write, T: Serialize>(inner: W, rows: &[T]) -> Result<W, csv::Error> {
    let mut csv = csv::Writer::from_writer(inner);
    for row in rows {
        csv.serialize(row)?;
    }
    csv.into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))
}

/// `rows` as CSV text (header from the field names), e.g. for `--format csv` on
/// stdout. See [`write_csv_rows_to`].
pub fn csv_string<T: Serialize>(rows: &[T]) -> Result<String, csv::Error> {
    let bytes = write_csv_rows_to(Vec::new(), rows)?;
    String::from_utf8(bytes).map_err(|e| csv::Error::from(std::io::Error::other(e)))
}

/// Any value as pretty JSON text with a final newline, the same text [`write_json`]
/// writes to a file.
pub fn json_string<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

/// Writes `rows` as a CSV file atomically. See [`write_csv_rows_to`].
pub fn write_csv_rows<T: Serialize>(path: &Path, rows: &[T]) -> Result<PathBuf, OutputError> {
    let file = AtomicFile::create(path)?;
    let file = write_csv_rows_to(file, rows).map_err(|source| OutputError::Csv {
        path: path.to_path_buf(),
        source,
    })?;
    file.finish()
}

/// Writes any value as pretty JSON (with a final newline) atomically.
pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<PathBuf, OutputError> {
    let mut file = AtomicFile::create(path)?;
    serde_json::to_writer_pretty(&mut file, value).map_err(|source| OutputError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    file.write_all(b"\n").map_err(|source| OutputError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    file.finish()
}

/// Writes `summary.csv` and `summary.json` (a JSON array of the same rows) into `dir`.
///
/// Both come from one `Serialize` impl, so they agree field for field; use
/// `Option` (not NaN) for missing numbers: CSV writes an empty field, JSON `null`.
pub fn write_summary<T: Serialize>(
    dir: &Path,
    rows: &[T],
) -> Result<(PathBuf, PathBuf), OutputError> {
    let csv = write_csv_rows(&dir.join(super::SUMMARY_CSV), rows)?;
    let json = write_json(&dir.join(super::SUMMARY_JSON), rows)?;
    Ok((csv, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(ns: u64) -> String {
        let mut out = Vec::new();
        push_decimal_secs(&mut out, Nanos::new(ns));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn decimal_seconds_match_nanos_to_decimal_secs_exactly() {
        for ns in [
            0,
            1,
            10,
            999_999_999,
            1_000_000_000,
            1_000_000_001,
            2_500_000_000,
            10_000_000_000,
            9_950_000_000,
            123_456_789_012,
            u64::MAX,
            u64::MAX - 1,
        ] {
            assert_eq!(secs(ns), Nanos::new(ns).to_decimal_secs(), "ns = {ns}");
        }
    }

    #[test]
    fn integers_format_like_display() {
        for n in [0, 7, 10, 12345, u64::MAX] {
            let mut out = Vec::new();
            push_u64(&mut out, n);
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
    }

    proptest::proptest! {
        #[test]
        fn decimal_seconds_agree_with_the_library_for_any_instant(ns in proptest::num::u64::ANY) {
            proptest::prop_assert_eq!(secs(ns), Nanos::new(ns).to_decimal_secs());
        }
    }
}
