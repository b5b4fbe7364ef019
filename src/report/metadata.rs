//! `run.json`: what produced an output folder — the scenario (its name, its file and a
//! hash of that file's bytes), its limits, seed, duration, algorithms and client, the
//! command line and the ratesim version — so a folder of CSVs and charts says what it
//! is without the shell history that made it.
//!
//! Pure data plus one writer. It must not run anything; the caller supplies the command
//! line and the scenario's bytes.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::csvout::json_string;
use super::output::{OutputError, write_text};
use crate::fnv::fnv1a64;
use crate::sim::{DeploymentReport, RuleReport, RunReport};
use crate::time::Nanos;

/// Where a run's scenario came from: a file name and a hash of its exact bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScenarioSource {
    /// The file as given (`scenarios/burst.toml`), or the built-in's name.
    pub file: String,
    /// FNV-1a (64-bit) of the file's bytes, in hex: tells two versions of a file apart.
    /// Not a cryptographic hash.
    pub fnv1a64: String,
}

impl ScenarioSource {
    /// The source `file` with contents `bytes`.
    pub fn new(file: impl Into<String>, bytes: &[u8]) -> ScenarioSource {
        ScenarioSource {
            file: file.into(),
            fnv1a64: format!("{:016x}", fnv1a64(bytes)),
        }
    }
}

/// The contents of `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunMetadata {
    /// The ratesim that wrote the folder.
    pub ratesim_version: String,
    /// The command line, program name first.
    pub command: Vec<String>,
    /// The scenario's name.
    pub scenario: String,
    /// Its file and hash.
    pub source: ScenarioSource,
    /// Every limit the run enforced, the first being the one the metrics measure.
    pub limits: Vec<RuleReport>,
    /// The seed of the random traffic.
    pub seed: u64,
    /// Simulated time, in nanoseconds.
    pub duration_ns: u64,
    /// The algorithms, in the order of the reports.
    pub algorithms: Vec<String>,
    /// `open` or `retry`.
    pub client: String,
    /// The scenario's `[deployment]`; absent for one server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<DeploymentReport>,
}

impl RunMetadata {
    /// The metadata of the finished `report`, run from `source` by `command`.
    pub fn new(report: &RunReport, source: ScenarioSource, command: Vec<String>) -> RunMetadata {
        RunMetadata {
            ratesim_version: env!("CARGO_PKG_VERSION").to_string(),
            command,
            scenario: report.scenario.clone(),
            source,
            limits: std::iter::once(report.rule)
                .chain(report.extra_limits.iter().copied())
                .collect(),
            seed: report.seed,
            duration_ns: Nanos::as_u64(report.duration),
            algorithms: report.algorithms.iter().map(|a| a.name.clone()).collect(),
            client: report.client.clone(),
            deployment: report.deployment.clone(),
        }
    }
}

/// Writes `meta` as `run.json` in `dir` (atomically, like every output file).
pub fn write_run_json(dir: &Path, meta: &RunMetadata) -> Result<PathBuf, OutputError> {
    let path = dir.join(super::RUN_JSON);
    let text = json_string(meta).map_err(|e| OutputError::Write {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    write_text(&path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_source_carries_its_fnv1a64_in_hex() {
        assert_eq!(ScenarioSource::new("x", b"a").fnv1a64, "af63dc4c8601ec8c");
    }
}
