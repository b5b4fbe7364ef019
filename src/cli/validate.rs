//! `ratesim validate`: its flags, and checking every file given so one run over
//! `scenarios/*.toml` reports them all.
//!
//! Dispatch only: loading and validating are `sim::Scenario`'s, the `ok:` line is
//! [`report::validation_summary`].

use std::path::{Path, PathBuf};

use clap::Args;
use ratesim::sim::{Scenario, ScenarioError};
use ratesim::{Registry, report};

use super::{Failure, input, print};

pub(super) const EXAMPLES: &str =
    "Examples:\n  ratesim validate scenarios/burst.toml\n  ratesim validate scenarios/*.toml";

// The flags of `validate` (its about text is on `Command::Validate`).
#[derive(Debug, Args)]
pub(super) struct ValidateArgs {
    /// The scenario files.
    #[arg(required = true)]
    pub(super) scenarios: Vec<PathBuf>,
}

/// Checks every file, printing `ok: …` on stdout for a good one and its error on
/// stderr for a bad one. Fails (exit 2) if any file is bad; with several files a last
/// line counts them.
pub(super) fn validate(files: &[PathBuf], registry: &Registry) -> Result<(), Failure> {
    let mut failures = Vec::new();
    for file in files {
        match validate_one(file, registry) {
            Ok(line) => print(&line)?,
            Err(e) => {
                if files.len() > 1 {
                    eprintln!("ratesim: error: {e}");
                }
                failures.push(e);
            }
        }
    }
    match failures.len() {
        0 => Ok(()),
        // One file: its error is the whole story, reported like any other error.
        _ if files.len() == 1 => Err(input(failures.remove(0))),
        n => Err(input(anyhow::anyhow!(
            "{n} of {} scenario files are invalid",
            files.len()
        ))),
    }
}

/// Loads and validates one scenario file; the `ok: …` line describing it.
fn validate_one(file: &Path, registry: &Registry) -> Result<String, ScenarioError> {
    let scenario = Scenario::load_with(file, registry)?;
    let skipped = scenario.read_traces()?;
    let mut text = report::validation_summary(file, &scenario);
    for (trace, s) in skipped {
        text += &format!("warning: {}\n", s.describe(&trace));
    }
    Ok(text)
}
