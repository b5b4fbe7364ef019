//! `ratesim compare`: its flags, loading the scenarios (the built-in suite or the
//! files given), checking them all before the first run, and running each.
//!
//! Dispatch only: each run is [`run::simulate`](super::run::simulate), the printed
//! summary [`run::print_summary`](super::run::print_summary).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use ratesim::sim::Scenario;
use ratesim::{Registry, Rule, bundled, report};

use super::run::{Common, apply_overrides, print_summary, simulate};
use super::{Failure, input, parse_limit};

pub(super) const EXAMPLES: &str = "Examples:
  ratesim compare --algos all
  ratesim compare --limit 100/10s
  ratesim compare --scenario scenarios/on_off.toml --scenario scenarios/zipf_keys.toml";

// The flags of `compare` (its about text is on `Command::Compare`).
#[derive(Debug, Args)]
pub(super) struct CompareArgs {
    /// A scenario file to include (repeat for several). Default: the built-in suite.
    #[arg(long = "scenario", value_name = "FILE")]
    scenarios: Vec<PathBuf>,
    /// Replace every scenario's limit, as MAX/WINDOW (e.g. 100/60s, 5/10s, 10/250ms).
    #[arg(long, value_name = "MAX/WINDOW", value_parser = parse_limit)]
    limit: Option<Rule>,
    /// Output root: each scenario's files go to <DIR>/<scenario>/ [default: output].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

pub(super) fn compare(args: &CompareArgs, registry: &Registry) -> Result<(), Failure> {
    // Load and check everything first so a bad file fails before any run.
    let mut scenarios = load(&args.scenarios, registry)?;
    for scenario in &mut scenarios {
        if let Some(rule) = args.limit {
            set_limit(scenario, rule, args.scenarios.is_empty())?;
        }
        apply_overrides(scenario, &args.common, registry)?;
        // Every trace is read through before the first run writes anything.
        for (trace, skipped) in scenario.read_traces().map_err(input)? {
            eprintln!("ratesim: warning: {}", skipped.describe(&trace));
        }
        if let Some(warning) = report::size_warning(scenario, !args.common.no_decisions) {
            eprintln!("ratesim: warning: {}: {warning}", scenario.name);
        }
    }
    refuse_duplicate_names(&scenarios)?;
    let root = args.out.clone().unwrap_or_else(|| PathBuf::from("output"));
    let mut reports = Vec::new();
    for scenario in &scenarios {
        reports.push(simulate(
            scenario,
            &root.join(&scenario.name),
            &args.common,
            registry,
        )?);
    }
    print_summary(&reports, args.common.format)
}

/// The scenario `files`, or the built-in suite when there are none.
fn load(files: &[PathBuf], registry: &Registry) -> Result<Vec<Scenario>, Failure> {
    let mut scenarios = Vec::new();
    if files.is_empty() {
        for file in bundled::COMPARE_SUITE {
            let text = bundled::scenario(file).context("the built-in suite is incomplete")?;
            let origin = Path::new("scenarios").join(file);
            scenarios.push(Scenario::parse_with(text, &origin, registry).map_err(input)?);
        }
    } else {
        for file in files {
            scenarios.push(Scenario::load_with(file, registry).map_err(input)?);
        }
    }
    Ok(scenarios)
}

/// Applies `--limit` to one scenario (`built_in`: one of the built-in suite), warning
/// when the run is too short to show it.
fn set_limit(scenario: &mut Scenario, rule: Rule, built_in: bool) -> Result<(), Failure> {
    scenario.set_rule(rule).map_err(|e| {
        // A built-in scenario has no file the user could open: name it instead.
        let e = if built_in {
            anyhow::anyhow!("the built-in {} scenario: {}", scenario.name, e.message)
        } else {
            e.into()
        };
        input(e.context("--limit"))
    })?;
    if let Some(warning) = report::short_run_warning(scenario, rule) {
        eprintln!("ratesim: warning: {warning}");
    }
    Ok(())
}

/// Refuses two scenarios of one name: their outputs would overwrite each other.
fn refuse_duplicate_names(scenarios: &[Scenario]) -> Result<(), Failure> {
    let mut names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    match names.windows(2).find(|p| p[0] == p[1]) {
        Some(pair) => Err(input(anyhow::anyhow!(
            "two scenarios are named `{}`; their outputs would overwrite each other",
            pair[0]
        ))),
        None => Ok(()),
    }
}
