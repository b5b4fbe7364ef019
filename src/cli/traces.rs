//! How the commands that simulate handle a scenario's traces: read once (by the run
//! itself), what was skipped said afterwards, `--key` checked against the traces'
//! clients before running when the traces are the only source of clients, and no
//! output folder left behind by a run that failed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use ratesim::sim::{self, Scenario, SimError, SkippedLines, TraceReader, TrafficKind};

use super::{Failure, input};

/// Before a run: when `--key` names a client and every source of the scenario is a
/// trace, reads the traces (the only case where a run reads them twice) and refuses a
/// name none of them holds, before anything is written. Says what the reading skipped;
/// whether it read them.
pub(super) fn check_key(scenario: &Scenario) -> Result<bool, Failure> {
    let Some(key) = &scenario.chart_key else {
        return Ok(false);
    };
    let traces: Vec<_> = (scenario.traffic.iter())
        .map(|spec| match &spec.kind {
            TrafficKind::Trace { path, options } => Some((path, options)),
            _ => None,
        })
        .collect::<Option<_>>()
        .unwrap_or_default();
    if traces.is_empty() {
        return Ok(false);
    }
    let mut examples: Vec<String> = Vec::new();
    let mut found = false;
    for (path, options) in traces {
        let mut reader = TraceReader::open_with(path, options).map_err(input)?;
        while let Some(row) = reader.next_row().map_err(input)? {
            found |= row.key == *key;
            if examples.len() < 3 && !examples.contains(&row.key) {
                examples.push(row.key);
            }
        }
    }
    warn_skipped(sim::take_skipped_reports());
    if found {
        return Ok(true);
    }
    let names: Vec<String> = examples.iter().map(|n| format!("`{n}`")).collect();
    let hint = match names.is_empty() {
        true => "no client sent anything".to_string(),
        false => format!("the trace's clients are named like {}", names.join(", ")),
    };
    Err(super::sim_failure(SimError::UnknownKey {
        key: key.clone(),
        hint,
    }))
}

/// Says what the traces read so far skipped (or read lossily), once per trace.
pub(super) fn warn_skipped(reports: Vec<(PathBuf, SkippedLines)>) {
    let mut said = HashSet::new();
    for (trace, skipped) in reports {
        if said.insert((trace.clone(), skipped.count, skipped.not_utf8)) {
            eprintln!("ratesim: warning: {}", skipped.describe(&trace));
        }
    }
}

/// `out` as it was before a run: the outermost of its folders that did not exist yet.
pub(super) struct OutBefore {
    missing: Option<PathBuf>,
}

impl OutBefore {
    pub(super) fn look(dir: &Path) -> OutBefore {
        let missing = (dir.ancestors())
            .take_while(|p| !p.as_os_str().is_empty() && !p.exists())
            .last();
        OutBefore {
            missing: missing.map(Path::to_path_buf),
        }
    }

    /// After a run that failed: removes the folders the run made (whatever it left in
    /// them is its own, unfinished), so no empty output folder stays behind.
    pub(super) fn failed<T>(&self, result: Result<T, Failure>) -> Result<T, Failure> {
        if let (Err(_), Some(missing)) = (&result, &self.missing) {
            let _ = std::fs::remove_dir_all(missing);
        }
        result
    }
}
