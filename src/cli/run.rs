//! `ratesim run`: its flags (and the ones `compare` shares), and running one validated
//! scenario into its output directory, which `compare` does once per scenario.
//!
//! Dispatch only: the simulation is `sim::run`, every file and table `report`'s.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use ratesim::report::charts::ChartFormat;
use ratesim::report::{
    self, DecisionParts, Progress, RunMetadata, ScenarioSource, TableOptions, WriteOptions,
};
use ratesim::sim::{self, DecisionSink, NoopSink, RunOptions, RunReport, Scenario, StateBackend};
use ratesim::{Registry, Rule};

use super::store::{RunStore, redacted_args};
use super::traces;
use super::{
    Failure, Format, algos_flag, input, parse_burst, parse_limit, parse_seed, print, sim_failure,
};

pub(super) const EXAMPLES: &str = "Examples:
  ratesim run scenarios/burst.toml
  ratesim run scenarios/poisson.toml --algos fixed_window,sliding_window_log --seed 3
  ratesim run scenarios/zipf_keys.toml --no-decisions --format json > summary.json
  ratesim run scenarios/nginx_log.toml --limit 200/10s --burst 400 --algos gcra";

// The flags of `run` (its about text is on `Command::Run`).
#[derive(Debug, Args)]
pub(super) struct RunArgs {
    /// The scenario file (TOML; see docs/scenarios.md).
    scenario: PathBuf,
    /// Output directory [default: output/<scenario>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

/// `--chart-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ChartFormatArg {
    /// PNG images.
    Png,
    /// SVG images.
    Svg,
}

impl From<ChartFormatArg> for ChartFormat {
    fn from(arg: ChartFormatArg) -> ChartFormat {
        match arg {
            ChartFormatArg::Png => ChartFormat::Png,
            ChartFormatArg::Svg => ChartFormat::Svg,
        }
    }
}

/// Flags shared by `run` and `compare`.
#[derive(Debug, Args)]
pub(super) struct Common {
    /// Algorithms to run, comma-separated, or `all` [default: the scenario's list].
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    algos: Option<Vec<String>>,
    /// Override the scenario's random seed.
    #[arg(long, value_parser = parse_seed, allow_negative_numbers = true)]
    seed: Option<u64>,
    /// Replace every limit of the scenario, as MAX/WINDOW (e.g. 100/60s, 5/10s,
    /// 10/250ms); boundary bursts of the old limit's size follow the new one.
    #[arg(long, value_name = "MAX/WINDOW", value_parser = parse_limit)]
    pub(super) limit: Option<Rule>,
    /// The client the keyed charts follow (window counts, the boundary zoom) [default:
    /// each algorithm's worst client]; a name no request used is an error.
    #[arg(long, value_name = "CLIENT")]
    key: Option<String>,
    /// With --limit, the bucket capacity of the token and leaky buckets and GCRA
    /// [default: the new limit's MAX].
    #[arg(long, value_name = "B", value_parser = parse_burst, requires = "limit")]
    burst: Option<u64>,
    /// How to print the summary on stdout (csv and json: the rows of summary.csv and
    /// summary.json).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub(super) format: Format,
    /// Skip the charts.
    #[arg(long)]
    pub(super) no_charts: bool,
    /// Also write window_slide.gif: the trailing window sliding across the window edge
    /// where the worst over-admission happened, each algorithm's count as a bar.
    #[arg(long)]
    gif: bool,
    /// The charts' image format: png, or svg for slides (scales without blurring).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = ChartFormatArg::Png)]
    pub(super) chart_format: ChartFormatArg,
    /// Skip decisions.csv (one row per decision: large for long runs).
    #[arg(long)]
    pub(super) no_decisions: bool,
    /// No progress bar and no list of written files (the summary still prints).
    #[arg(long, short)]
    pub(super) quiet: bool,
    /// Run even when decisions.csv is estimated larger than the free space of the
    /// output's disk or 100 GB (without it such a run is refused before it starts).
    #[arg(long)]
    pub(super) force: bool,
    /// Worker threads (algorithms run in parallel) [default: all cores].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Keep the algorithms' states in Redis instead of this process: every decision is
    /// a call of the Redis store's script at the simulated instant, and the reports
    /// equal the in-memory run's. URL: redis://[USER:PASSWORD@]HOST:PORT[/DB] or
    /// redis+unix:///PATH. The run's keys get a prefix of their own and are removed at
    /// the end, or on Ctrl-C/SIGTERM; each also expires 1 h after its last write (a
    /// killed run). A failure of Redis stops the run with an error (exit 1), never a
    /// report that differs from memory. Needs a build with `--features redis`.
    #[arg(long, value_name = "URL")]
    store: Option<String>,
}

impl Common {
    /// How to run: `RunOptions`' defaults, with `--threads` if given.
    fn run_options<'a>(
        &self,
        progress: &'a (dyn Fn(u64, u64) + Sync),
        registry: &'a Registry,
        store: &'a StateBackend,
    ) -> RunOptions<'a> {
        let defaults = RunOptions::default();
        RunOptions {
            threads: self.threads.map_or(defaults.threads, usize::from),
            progress: Some(progress),
            registry,
            store,
        }
    }
}

pub(super) fn run(args: &RunArgs, registry: &Registry) -> Result<(), Failure> {
    let mut scenario = Scenario::load_with(&args.scenario, registry).map_err(input)?;
    apply_overrides(&mut scenario, &args.common, registry, false)?;
    // The run reads its traces once, and checks them as it goes; only `--key` on a
    // scenario of traces reads them before.
    let prechecked = traces::check_key(&scenario)?;
    if let Some(warning) = report::size_warning(&scenario, !args.common.no_decisions) {
        eprintln!("ratesim: warning: {warning}");
    }
    for note in scenario.preset_notes() {
        eprintln!("ratesim: note: {note}");
    }
    let out = match &args.out {
        Some(out) => out.clone(),
        None => Path::new("output").join(&scenario.name),
    };
    refuse_oversized(&scenario, &out, &args.common)?;
    let source = source_of(&args.scenario)?;
    let before = traces::OutBefore::look(&out);
    let report = before.failed(simulate(&scenario, &out, &args.common, registry, source));
    let skipped = sim::take_skipped_reports();
    if !prechecked {
        traces::warn_skipped(skipped);
    }
    print_summary(&[report?], args.common.format)
}

/// Refuses, before anything is written, a run whose decisions.csv would not fit the
/// output's disk or the sane bound, unless `--force` or `--no-decisions`.
pub(super) fn refuse_oversized(
    scenario: &Scenario,
    out: &Path,
    common: &Common,
) -> Result<(), Failure> {
    if common.force {
        return Ok(());
    }
    let free = report::free_bytes(out);
    match report::size_refusal(scenario, !common.no_decisions, free) {
        Some(why) => Err(input(anyhow::anyhow!("{}: {why}", scenario.name))),
        None => Ok(()),
    }
}

/// Applies `--limit`, `--seed` and `--algos` to a loaded scenario (`built_in`: one of
/// the built-in suite, which has no file to point at).
pub(super) fn apply_overrides(
    scenario: &mut Scenario,
    common: &Common,
    registry: &Registry,
    built_in: bool,
) -> Result<(), Failure> {
    if let Some(rule) = common.limit {
        let rule = match common.burst {
            Some(b) => rule
                .with_burst(b)
                .map_err(|e| input(anyhow::Error::new(e).context("--burst")))?,
            None => rule,
        };
        set_limit(scenario, rule, built_in)?;
    }
    scenario.chart_key.clone_from(&common.key);
    set_seed_and_algos(scenario, common.seed, common.algos.as_deref(), registry)
}

/// Applies `--seed` and `--algos` (of `run`, `compare` or `sweep`) to a scenario.
pub(super) fn set_seed_and_algos(
    scenario: &mut Scenario,
    seed: Option<u64>,
    algos: Option<&[String]>,
    registry: &Registry,
) -> Result<(), Failure> {
    if let Some(seed) = seed {
        scenario.seed = seed;
    }
    if let Some(algos) = algos {
        scenario
            .set_algorithms(algos_flag(algos)?, registry)
            .map_err(|e| input(anyhow::Error::new(e).context("--algos")))?;
        scenario
            .screen_presets(algos)
            .map_err(|e| input(anyhow::anyhow!(e).context("--algos")))?;
    }
    Ok(())
}

/// Applies `--limit` to one scenario, warning when the run is too short to show it.
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

/// Runs one scenario (its traces are read, and checked, by the run), and writes every
/// output file into `out`. The output directory is the last input checked before
/// anything is written.
pub(super) fn simulate(
    scenario: &Scenario,
    out: &Path,
    common: &Common,
    registry: &Registry,
    source: ScenarioSource,
) -> Result<RunReport, Failure> {
    // The store first: an unreachable Redis fails before anything is written.
    let store = RunStore::open(common.store.as_deref())?;
    sim::check_store(scenario, registry, store.state()).map_err(sim_failure)?;
    let created = missing_dirs(out);
    let out = report::prepare_output_dir(out)
        .map_err(|e| input(anyhow::Error::new(e).context("--out")))?;
    let result = simulate_into(scenario, &out, common, registry, source, store);
    if result.is_err() {
        remove_empty_dirs(&created);
    }
    result
}

/// `dir` and those of its ancestors that do not exist yet, deepest first: what
/// `prepare_output_dir` will create.
fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    dir.ancestors()
        .filter(|d| !d.as_os_str().is_empty())
        .take_while(|d| std::fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect()
}

/// Removes the directories a failed run created, deepest first, as long as they are
/// empty (`remove_dir` never removes a file): a failed run leaves no empty `--out`.
fn remove_empty_dirs(created: &[PathBuf]) {
    for dir in created {
        if std::fs::remove_dir(dir).is_err() {
            break;
        }
    }
}

/// [`simulate`] once `out` exists.
fn simulate_into(
    scenario: &Scenario,
    out: &Path,
    common: &Common,
    registry: &Registry,
    source: ScenarioSource,
    store: RunStore,
) -> Result<RunReport, Failure> {
    let out = out.to_path_buf();
    let progress = Progress::new(
        sim::PROGRESS_STEPS * scenario.algorithms.len() as u64,
        common.quiet,
    );
    progress.set_message(scenario.name.clone());
    let on_progress = |done: u64, _total: u64| progress.set_position(done);
    let options = common.run_options(&on_progress, registry, store.state());
    let mut parts = (!common.no_decisions).then(|| DecisionParts::new(&out));
    let mut sinks = |_: &str| -> std::io::Result<Box<dyn DecisionSink>> {
        match parts.as_mut() {
            Some(parts) => parts.sink(),
            None => Ok(Box::new(NoopSink)),
        }
    };
    let result = sim::run(scenario, &options, &mut sinks);
    progress.finish();
    let too_long = store.check_duration();
    drop(store);
    too_long?;
    let report = result.map_err(sim_failure)?;
    let mut written = Vec::new();
    if let Some(parts) = parts {
        written.push(parts.finish().context("cannot write decisions.csv")?);
    }
    let decisions = written.first().cloned();
    let metadata = RunMetadata::new(&report, source, redacted_args());
    let options = WriteOptions {
        charts: !common.no_charts,
        registry,
        metadata: Some(&metadata),
        decisions: decisions.as_deref(),
        chart_format: common.chart_format.into(),
    };
    written.extend(report::write_run(&report, &out, options).context("cannot write the results")?);
    if common.gif
        && let Some(animation) = report::run::slide_animation(&report)
    {
        let path = out.join(report::WINDOW_SLIDE_GIF);
        let gif = report::charts::render_slide_gif(&animation, &path);
        written.push(gif.context("cannot write the animation")?);
    }
    list_written(&out, &written, common.quiet);
    Ok(report)
}

/// The scenario file `path` as run.json names it: the path given and its bytes' hash.
pub(super) fn source_of(path: &Path) -> Result<ScenarioSource, Failure> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("{}: cannot read", path.display()))
        .map_err(input)?;
    Ok(ScenarioSource::new(path.display().to_string(), &bytes))
}

/// Notes on stderr each of `names` in `dir` an earlier run left and this one did not
/// write (`written`): the one rule of [`report::stale`] for every command.
pub(super) fn note_stale(dir: &Path, names: &[&str], written: &[PathBuf]) {
    for path in report::stale::stale_files(dir, names, written) {
        eprintln!("{}", report::stale::stale_note(&path));
    }
}

/// Lists the files written on stderr (unless `quiet`), then notes any output file in
/// `out` this run did not write.
fn list_written(out: &Path, written: &[PathBuf], quiet: bool) {
    let mut err = std::io::stderr().lock();
    if !quiet {
        for path in written {
            let _ = writeln!(err, "wrote {}", path.display());
        }
    }
    // Files an earlier run left here (say, charts before this --no-charts run) would
    // otherwise pass for this run's results.
    for path in report::stale_outputs(out, written) {
        let _ = writeln!(err, "{}", report::stale::stale_note(&path));
    }
}

/// Prints the runs' summaries in the chosen format: one table per run (and a
/// comparison matrix when there are several), or the summary rows as CSV/JSON.
pub(super) fn print_summary(reports: &[RunReport], format: Format) -> Result<(), Failure> {
    let text = match format {
        Format::Table => report::render_runs(reports, TableOptions::for_stdout()),
        Format::Csv => report::summary_csv(reports).context("cannot format CSV")?,
        Format::Json => report::summary_json(reports).context("cannot format JSON")?,
    };
    print(&text)
}
