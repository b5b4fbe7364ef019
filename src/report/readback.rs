//! Reading a finished `decisions.csv` back, one client at a time: the one scan the
//! boundary zoom and the one-client timeline share.
//!
//! Streaming and bounded: rows are visited one by one and only the rows the caller
//! keeps are parsed (exact decimal seconds to integer ns). It reads a finished file;
//! it never runs the engine.

use std::path::Path;

use super::output::OutputError;
use crate::time::Nanos;

/// One decision read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadDecision {
    /// Its instant, exact.
    pub time: Nanos,
    /// Its cost.
    pub cost: u64,
    /// Admitted or not.
    pub allowed: bool,
}

/// Calls `visit(algorithm_index, decision)` for each row of `path` whose algorithm is
/// `wanted[i].0` and whose key is `wanted[i].1`, in file order.
pub fn scan_decisions(
    path: &Path,
    wanted: &[(&str, &str)],
    mut visit: impl FnMut(usize, ReadDecision),
) -> Result<(), OutputError> {
    let fail = |message: String| OutputError::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(message),
    };
    let mut reader = csv::Reader::from_path(path).map_err(|e| fail(e.to_string()))?;
    let headers = reader.headers().map_err(|e| fail(e.to_string()))?.clone();
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| fail(format!("no `{name}` column")))
    };
    let [algorithm, time, key, cost, allowed] =
        ["algorithm", "time_s", "key", "cost", "allowed"].map(column);
    let (algorithm, time, key, cost, allowed) = (algorithm?, time?, key?, cost?, allowed?);
    let mut record = csv::StringRecord::new();
    while reader
        .read_record(&mut record)
        .map_err(|e| fail(e.to_string()))?
    {
        let Some(index) = wanted
            .iter()
            .position(|&(a, k)| a == &record[algorithm] && k == &record[key])
        else {
            continue;
        };
        let decision = ReadDecision {
            time: Nanos::parse_decimal_secs(&record[time]).map_err(|e| fail(e.to_string()))?,
            cost: record[cost]
                .parse()
                .map_err(|_| fail(format!("bad cost `{}`", &record[cost])))?,
            allowed: &record[allowed] == "true",
        };
        visit(index, decision);
    }
    Ok(())
}
