//! Every documented semantic choice tested where it and its nearest wrong neighbours
//! disagree (issue 32): a node count that is not a power of two, a skew that does not
//! divide evenly, a tie between rows that differ only in burst, a window edge hit to
//! the nanosecond. Each test names the alternatives it rules out; docs/testing.md
//! keeps the list (choice → where documented → test → alternatives).
//!
//! Black-box where possible: scenarios in, reports, decisions or the command's output
//! out, so the tests outlive a rewrite of what is behind them.

#[path = "../sim_support/mod.rs"]
mod sim_support;

mod deployment;
mod import;
mod metrics;
mod presets;
mod scenario;
mod sweep;

use std::path::Path;

use ratesim::Nanos;
use ratesim::sim::RunReport;
use sim_support::{Row, parse_at, run_capturing};

/// `rows` (`(ns, key, cost)`) replayed as a CSV trace for `duration`, with `body` (the
/// rest of the scenario: top-level keys first, then `[limit]`, `[client]`,
/// `[deployment]`, as TOML lines) and `algorithms`; the report and every decision, per algorithm.
pub fn replay(
    rows: &[(u64, &str, u64)],
    duration: &str,
    algorithms: &[&str],
    body: &str,
) -> (RunReport, Vec<Vec<Row>>) {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("time_s,key,cost\n");
    for (t, key, cost) in rows {
        csv.push_str(&format!(
            "{},{key},{cost}\n",
            Nanos::new(*t).to_decimal_secs()
        ));
    }
    std::fs::write(dir.path().join("t.csv"), csv).unwrap();
    let names: Vec<String> = algorithms.iter().map(|a| format!("\"{a}\"")).collect();
    let text = format!(
        "name = \"edge\"\nduration = \"{duration}\"\nalgorithms = [{}]\n{body}\n\
         [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n",
        names.join(", ")
    );
    run_capturing(&parse_at(&text, &dir.path().join("edge.toml")), 1)
}

/// A scenario from its TOML text (read as if from `edge.toml`), run with every decision.
pub fn run_text(text: &str) -> (RunReport, Vec<Vec<Row>>) {
    run_capturing(&parse_at(text, Path::new("edge.toml")), 1)
}

/// One second, in nanoseconds.
pub const S: u64 = 1_000_000_000;
