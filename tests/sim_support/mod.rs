//! Helpers shared by the simulator tests: scenario building, capturing sinks.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ratesim::Nanos;
use ratesim::sim::{self, DecisionRow, DecisionSink, NoopSink, RunOptions, RunReport, Scenario};

/// An owned copy of a [`DecisionRow`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub algorithm: String,
    pub seq: u64,
    pub attempt: u32,
    pub time: Nanos,
    pub key: String,
    pub cost: u64,
    pub allowed: bool,
    pub remaining: u64,
    pub retry_after: Option<Nanos>,
    /// The label of the rule that denied it (`None` when admitted).
    pub denied_by: Option<String>,
}

struct Capture(Arc<Mutex<Vec<Row>>>);

impl DecisionSink for Capture {
    fn record(&mut self, r: &DecisionRow<'_>) -> std::io::Result<()> {
        self.0.lock().unwrap().push(Row {
            algorithm: r.algorithm.to_string(),
            seq: r.seq,
            attempt: r.attempt,
            time: r.time,
            key: r.key.to_string(),
            cost: r.cost,
            allowed: r.allowed,
            remaining: r.remaining,
            retry_after: r.retry_after,
            denied_by: r.denied_by.map(str::to_owned),
        });
        Ok(())
    }
}

/// Runs `scenario` and returns the report plus every decision, per algorithm in order.
pub fn run_capturing(scenario: &Scenario, threads: usize) -> (RunReport, Vec<Vec<Row>>) {
    let mut parts: Vec<Arc<Mutex<Vec<Row>>>> = Vec::new();
    let options = RunOptions {
        threads,
        ..RunOptions::default()
    };
    let report = sim::run(scenario, &options, &mut |_| {
        let part = Arc::new(Mutex::new(Vec::new()));
        parts.push(part.clone());
        Ok(Box::new(Capture(part)))
    })
    .unwrap_or_else(|e| panic!("{} failed: {e}", scenario.name));
    let rows = parts
        .into_iter()
        .map(|p| std::mem::take(&mut *p.lock().unwrap()))
        .collect();
    (report, rows)
}

/// Runs `scenario` with no decision output.
pub fn run_quiet(scenario: &Scenario) -> RunReport {
    sim::run(scenario, &RunOptions::default(), &mut |_| {
        Ok(Box::new(NoopSink))
    })
    .unwrap_or_else(|e| panic!("{} failed: {e}", scenario.name))
}

/// The bundled scenario files.
pub fn bundled() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

pub fn load(path: &Path) -> Scenario {
    Scenario::load(path).unwrap_or_else(|e| panic!("{e}"))
}

/// A scenario from a header (limit etc.) and a body, parsed as if read from `origin`.
pub fn parse_at(text: &str, origin: &Path) -> Scenario {
    Scenario::parse(text, origin).unwrap_or_else(|e| panic!("{e}\n---\n{text}"))
}
