//! `ratesim compare`: its flags, loading the scenarios (the built-in suite or the
//! files given), checking them all before the first run, and running each.
//!
//! Dispatch only: each run is [`run::simulate`](super::run::simulate), the printed
//! summary [`run::print_summary`](super::run::print_summary).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use ratesim::report::ScenarioSource;
use ratesim::report::charts::{AnyChart, render_chart};
use ratesim::sim::Scenario;
use ratesim::{Registry, bundled, report};

use super::run::{Common, apply_overrides, note_stale, print_summary, simulate, source_of};
use super::{Failure, input};

mod nodes;

pub(super) const EXAMPLES: &str = "Examples:
  ratesim compare --algos all
  ratesim compare --limit 100/10s
  ratesim compare --scenario scenarios/on_off.toml --scenario scenarios/zipf_keys.toml
  ratesim compare --nodes 1,2,4,8,16 --scenario scenarios/nodes_local.toml";

// The flags of `compare` (its about text is on `Command::Compare`).
#[derive(Debug, Args)]
pub(super) struct CompareArgs {
    /// A scenario file to include (repeat for several). Default: the built-in suite.
    #[arg(long = "scenario", value_name = "FILE")]
    pub(super) scenarios: Vec<PathBuf>,
    /// Output root: each scenario's files go to <DIR>/<scenario>/, the over-admission
    /// matrix to <DIR>/over_admission_matrix.csv and .png [default: output/compare].
    #[arg(long, value_name = "DIR")]
    pub(super) out: Option<PathBuf>,
    /// Run the one --scenario on each of these numbers of servers (its [deployment],
    /// or local limiters behind round robin), e.g. 1,2,4,8,16; writes
    /// over_admission_vs_nodes.csv and .png under --out.
    #[arg(long, value_delimiter = ',', value_name = "N,N,...",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(super) nodes: Option<Vec<u32>>,
    #[command(flatten)]
    pub(super) common: Common,
}

pub(super) fn compare(args: &CompareArgs, registry: &Registry) -> Result<(), Failure> {
    if let Some(nodes) = &args.nodes {
        return nodes::compare_nodes(args, nodes, registry);
    }
    // Load and check everything first so a bad file fails before any run.
    let (mut scenarios, sources) = load(&args.scenarios, registry)?;
    for scenario in &mut scenarios {
        apply_overrides(scenario, &args.common, registry, args.scenarios.is_empty())?;
        // Every trace is read through before the first run writes anything.
        for (trace, skipped) in scenario.read_traces().map_err(input)? {
            eprintln!("ratesim: warning: {}", skipped.describe(&trace));
        }
        if let Some(warning) = report::size_warning(scenario, !args.common.no_decisions) {
            eprintln!("ratesim: warning: {}: {warning}", scenario.name);
        }
        for note in scenario.preset_notes() {
            eprintln!("ratesim: note: {}: {note}", scenario.name);
        }
    }
    refuse_duplicate_names(&scenarios)?;
    let root = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join("compare"));
    let mut reports = Vec::new();
    for scenario in &scenarios {
        super::run::refuse_oversized(scenario, &root.join(&scenario.name), &args.common)?;
    }
    for (scenario, source) in scenarios.iter().zip(sources) {
        let out = root.join(&scenario.name);
        reports.push(simulate(scenario, &out, &args.common, registry, source)?);
    }
    let matrix = report::comparison_csv(&reports).context("cannot format the matrix")?;
    let written = report::write_text(&root.join(report::OVER_ADMISSION_MATRIX_CSV), &matrix)
        .context("cannot write the results")?;
    let mut written = vec![written];
    if !args.common.no_charts {
        let chart = report::comparison_chart(&reports);
        let path = root.join(report::OVER_ADMISSION_MATRIX_PNG);
        let format = args.common.chart_format.into();
        let drawn = render_chart(AnyChart::Matrix(&chart), &path, format);
        written.push(drawn.context("cannot draw the matrix")?);
    }
    if !args.common.quiet {
        for path in &written {
            eprintln!("wrote {}", path.display());
        }
    }
    let matrix_files = [
        report::OVER_ADMISSION_MATRIX_CSV,
        report::OVER_ADMISSION_MATRIX_PNG,
    ];
    note_stale(&root, &matrix_files, &written);
    print_summary(&reports, args.common.format)
}

/// The scenario `files`, or the built-in suite when there are none, each with where it
/// came from (for `run.json`).
pub(super) fn load(
    files: &[PathBuf],
    registry: &Registry,
) -> Result<(Vec<Scenario>, Vec<ScenarioSource>), Failure> {
    let (mut scenarios, mut sources) = (Vec::new(), Vec::new());
    if files.is_empty() {
        for file in bundled::COMPARE_SUITE {
            let text = bundled::scenario(file).context("the built-in suite is incomplete")?;
            let origin = Path::new("scenarios").join(file);
            scenarios.push(Scenario::parse_with(text, &origin, registry).map_err(input)?);
            let name = format!("{} (built in)", origin.display());
            sources.push(ScenarioSource::new(name, text.as_bytes()));
        }
    } else {
        for file in files {
            scenarios.push(Scenario::load_with(file, registry).map_err(input)?);
            sources.push(source_of(file)?);
        }
    }
    Ok((scenarios, sources))
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
