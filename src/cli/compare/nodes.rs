//! `ratesim compare --nodes 1,2,4 --scenario FILE`: one scenario on each number of
//! servers, each run in its own folder, then the long table and the chart across them.
//!
//! Dispatch only: each run is [`run::simulate`](crate::cli::run::simulate); the table
//! and chart are the report layer's. A mode of `compare`, so it lives under it.

use std::path::Path;

use anyhow::Context;
use ratesim::{Registry, report};

use super::{CompareArgs, load};
use crate::cli::run::{apply_overrides, note_stale, print_summary, simulate};
use crate::cli::{Failure, input};

pub(super) fn compare_nodes(
    args: &CompareArgs,
    nodes: &[u32],
    registry: &Registry,
) -> Result<(), Failure> {
    if args.scenarios.len() != 1 {
        return Err(input(anyhow::anyhow!(
            "--nodes runs one scenario on each number of servers; give exactly one \
             --scenario FILE (found {})",
            args.scenarios.len()
        )));
    }
    let (scenarios, sources) = load(&args.scenarios, registry)?;
    let (mut base, source) = (scenarios[0].clone(), sources[0].clone());
    apply_overrides(&mut base, &args.common, registry, false)?;
    for (trace, skipped) in base.read_traces().map_err(input)? {
        eprintln!("ratesim: warning: {}", skipped.describe(&trace));
    }
    let mut counts = nodes.to_vec();
    counts.sort_unstable();
    counts.dedup();
    // Every count is checked before the first run writes anything.
    let mut variants = Vec::new();
    for &n in &counts {
        let mut scenario = base.clone();
        scenario.set_nodes(n).map_err(input)?;
        scenario.name = format!("{}-{n}-nodes", base.name);
        variants.push((n, scenario));
    }
    let root = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("output").join("compare"));
    for (_, scenario) in &variants {
        crate::cli::run::refuse_oversized(scenario, &root.join(&scenario.name), &args.common)?;
    }
    let mut runs = Vec::new();
    for (n, scenario) in &variants {
        let out = root.join(&scenario.name);
        let report = simulate(scenario, &out, &args.common, registry, source.clone())?;
        runs.push((*n, report));
    }
    let store = variants[0].1.deployment.map_or("local", |d| d.store.name());
    let cmp = report::NodesComparison {
        scenario: &base.name,
        store,
        runs: &runs,
    };
    let written = report::write_nodes_comparison(&cmp, &root, !args.common.no_charts, registry)
        .context("cannot write the comparison across node counts")?;
    if !args.common.quiet {
        for path in &written {
            eprintln!("wrote {}", path.display());
        }
    }
    let files = [
        report::OVER_ADMISSION_VS_NODES_CSV,
        report::OVER_ADMISSION_VS_NODES_PNG,
    ];
    note_stale(&root, &files, &written);
    let reports: Vec<_> = runs.into_iter().map(|(_, r)| r).collect();
    print_summary(&reports, args.common.format)
}
