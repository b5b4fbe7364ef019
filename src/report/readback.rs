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
    /// Under a `[deployment]`, the server that decided it (the `node` column); `None`
    /// without one, or in a file written before the column existed.
    pub node: Option<u32>,
    /// How long a shaper held it back (`delay_s`): it passed at `time + delay`. Zero
    /// for an immediate admission, a denial, or a file without the column.
    pub delay: Nanos,
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
    // Later columns: read when present.
    let node = headers.iter().position(|h| h == "node");
    let delay = headers.iter().position(|h| h == "delay_s");
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
            node: match node.map(|i| &record[i]) {
                None | Some("") => None,
                Some(n) => Some(n.parse().map_err(|_| fail(format!("bad node `{n}`")))?),
            },
            delay: match delay.map(|i| &record[i]) {
                None | Some("") => Nanos::ZERO,
                Some(d) => Nanos::parse_decimal_secs(d).map_err(|e| fail(e.to_string()))?,
            },
        };
        visit(index, decision);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_and_delay_columns_are_read_back_and_optional() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.csv");
        std::fs::write(
            &path,
            "algorithm,seq,time_s,key,cost,allowed,delay_s,node\n\
             nginx,0,1.5,k,1,true,0.25,2\nnginx,1,2,k,1,false,0,\n",
        )
        .unwrap();
        let mut seen = Vec::new();
        scan_decisions(&path, &[("nginx", "k")], |_, d| seen.push(d)).unwrap();
        assert_eq!(seen[0].node, Some(2));
        assert_eq!(seen[0].delay, Nanos::from_millis(250));
        assert_eq!((seen[1].node, seen[1].delay), (None, Nanos::ZERO));
        // A file from before these columns: still read.
        std::fs::write(
            &path,
            "algorithm,time_s,key,cost,allowed\nnginx,1,k,1,true\n",
        )
        .unwrap();
        let mut old = Vec::new();
        scan_decisions(&path, &[("nginx", "k")], |_, d| old.push(d)).unwrap();
        assert_eq!((old[0].node, old[0].delay), (None, Nanos::ZERO));
    }
}
