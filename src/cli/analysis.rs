//! `ratesim worst-case` and `ratesim calibrate`: the flags they share (a limit, the
//! algorithms, the search effort) and their dispatch.
//!
//! Dispatch only: the searches are `sim::worst_case` and `sim::calibrate`, the tables
//! and files `report`'s; the search's defaults are [`SearchOptions`]'.

use std::path::{Path, PathBuf};

use clap::Args;
use ratesim::sim::calibrate;
use ratesim::sim::worst_case::{self, SearchOptions};
use ratesim::{Registry, Rule, report};

use super::{
    Failure, Format, algos_flag, input, machine_readable, parse_burst, parse_limit, parse_seed,
    print,
};

pub(super) const EXAMPLES_WORST_CASE: &str = "Examples:\n  ratesim worst-case --limit 100/60s\n  ratesim worst-case --limit 5/10s --burst 8 --algos token_bucket,gcra --format json";

pub(super) const EXAMPLES_CALIBRATE: &str = "Examples:\n  ratesim calibrate --limit 100/60s\n  ratesim calibrate --limit 10/1s --format csv";

// The flags of `worst-case` (its about text is on `Command::WorstCase`).
#[derive(Debug, Args)]
pub(super) struct WorstCaseArgs {
    #[command(flatten)]
    analysis: Analysis,
    /// Seed of the randomised search.
    #[arg(long, default_value_t = SearchOptions::default().seed, value_parser = parse_seed, allow_negative_numbers = true)]
    seed: u64,
    /// Where the winning streams go [default: output/worst-case/<MAX>-per-<WINDOW>,
    /// plus -burst-<B> with --burst: a search for another limit keeps its own folder].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Do not list the files written.
    #[arg(long, short)]
    quiet: bool,
}

// The flags of `calibrate` (its about text is on `Command::Calibrate`).
#[derive(Debug, Args)]
pub(super) struct CalibrateArgs {
    #[command(flatten)]
    analysis: Analysis,
    /// Seed of the randomised search and of the Poisson traffic.
    #[arg(long, default_value_t = SearchOptions::default().seed, value_parser = parse_seed, allow_negative_numbers = true)]
    seed: u64,
    /// Accepted for compatibility and ignored: calibrate writes no files.
    #[arg(long, short, hide = true)]
    quiet: bool,
}

/// Flags shared by `worst-case` and `calibrate`.
#[derive(Debug, Args)]
struct Analysis {
    /// The nominal limit, as MAX/WINDOW (e.g. 100/60s, 5/10s, 10/250ms).
    #[arg(long, value_name = "MAX/WINDOW", value_parser = parse_limit)]
    limit: Rule,
    /// Bucket capacity for token/leaky bucket and GCRA [default: MAX].
    #[arg(long, value_name = "B", value_parser = parse_burst)]
    burst: Option<u64>,
    /// Algorithms, comma-separated, or `all`.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "NAMES",
        default_value = "all"
    )]
    algos: Vec<String>,
    /// Randomised trials per algorithm, after the systematic constructions.
    #[arg(long, default_value_t = SearchOptions::default().trials)]
    trials: u32,
    /// How to print the results on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

impl Analysis {
    /// `--limit`, with `--burst` if given.
    fn rule(&self) -> Result<Rule, Failure> {
        match self.burst {
            Some(b) => self
                .limit
                .with_burst(b)
                .map_err(|e| input(anyhow::Error::new(e).context("--burst"))),
            None => Ok(self.limit),
        }
    }

    /// `--algos`, resolved against `registry` (`all` is every algorithm).
    fn algorithms(&self, registry: &Registry) -> Result<Vec<String>, Failure> {
        registry
            .resolve(algos_flag(&self.algos)?)
            .map_err(|e| input(anyhow::Error::new(e).context("--algos")))
    }

    fn search(&self, seed: u64) -> SearchOptions {
        SearchOptions {
            trials: self.trials,
            seed,
        }
    }
}

pub(super) fn worst_case(args: &WorstCaseArgs, registry: &Registry) -> Result<(), Failure> {
    let analysis = &args.analysis;
    let rule = analysis.rule()?;
    let algorithms = analysis.algorithms(registry)?;
    let out = match &args.out {
        Some(out) => out.clone(),
        None => Path::new("output")
            .join("worst-case")
            .join(limit_folder(&rule)),
    };
    let out = report::prepare_output_dir(&out)
        .map_err(|e| input(anyhow::Error::new(e).context("--out")))?;
    let mut cases = Vec::new();
    let mut written = Vec::new();
    for name in &algorithms {
        let case =
            worst_case::search(registry, name, rule, analysis.search(args.seed)).map_err(input)?;
        let files = report::write_worst_case(&out, &case, &rule)
            .map_err(|e| anyhow::Error::new(e).context("cannot write the results"))?;
        written.extend(files);
        cases.push(case);
    }
    if !args.quiet {
        for path in &written {
            eprintln!("wrote {}", path.display());
        }
    }
    let text = match analysis.format {
        Format::Table => {
            report::render_worst_cases(&rule, &cases, report::TableOptions::for_stdout())
        }
        Format::Csv | Format::Json => machine_readable(analysis.format, &cases)?,
    };
    print(&text)
}

pub(super) fn calibrate(args: &CalibrateArgs, registry: &Registry) -> Result<(), Failure> {
    let analysis = &args.analysis;
    let rule = analysis.rule()?;
    let mut rows = Vec::new();
    for name in analysis.algorithms(registry)? {
        let search = analysis.search(args.seed);
        rows.push(calibrate::calibrate(registry, &name, rule, search).map_err(input)?);
    }
    let text = match analysis.format {
        Format::Table => {
            report::render_calibrations(&rule, &rows, report::TableOptions::for_stdout())
        }
        Format::Csv | Format::Json => machine_readable(analysis.format, &rows)?,
    };
    print(&text)
}

/// The default folder of a worst-case search for `rule`: `5-per-10s`, and
/// `5-per-10s-burst-8` when the burst is not the limit.
fn limit_folder(rule: &Rule) -> String {
    let mut name = format!("{}-per-{}", rule.max_requests(), rule.window());
    if rule.burst() != rule.max_requests() {
        name.push_str(&format!("-burst-{}", rule.burst()));
    }
    name
}
