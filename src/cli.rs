//! The clap front end: parse arguments, call `sim` and `report`, print, and map errors
//! to exit codes (0 ok, 1 failure, 2 bad input). No rate-limiting or reporting logic.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use ratesim::report::{self, DecisionParts, Progress, TableOptions, WriteOptions};
use ratesim::sim::worst_case::{self, SearchOptions};
use ratesim::sim::{
    self, DecisionSink, NoopSink, RunOptions, RunReport, Scenario, ScenarioError, SimError,
    calibrate,
};
use ratesim::{Nanos, Registry, Rule, bundled};

const EXAMPLES_RUN: &str = "Examples:
  ratesim run scenarios/burst.toml
  ratesim run scenarios/poisson.toml --algos fixed_window,sliding_window_log --seed 3
  ratesim run scenarios/zipf_keys.toml --no-decisions --format json > summary.json";

const EXAMPLES_COMPARE: &str = "Examples:
  ratesim compare --algos all
  ratesim compare --limit 100/10s
  ratesim compare --scenario scenarios/on_off.toml --scenario scenarios/zipf_keys.toml";

/// Exact rate-limiter algorithms, simulated side by side on identical traffic.
///
/// ratesim drives token bucket, leaky bucket, fixed window, sliding window log, sliding
/// window counter and GCRA with the same fake-clock arrival stream and measures, exactly,
/// how far each strays from the limit: the most requests admitted in any window, false
/// allows and denies against the exact sliding log, and whether `retry_after` is honest.
#[derive(Debug, Parser)]
#[command(name = "ratesim", version, propagate_version = true)]
#[command(
    after_help = "Start with `ratesim run scenarios/burst.toml`, then look at output/burst/."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Simulate one scenario file and write tables, CSVs and charts.
    ///
    /// Writes decisions.csv, window_counts.csv, summary.csv, summary.json and three PNG
    /// charts to output/<scenario>/ (or --out), and prints the summary on stdout.
    #[command(after_help = EXAMPLES_RUN)]
    Run {
        /// The scenario file (TOML; see docs/scenarios.md).
        scenario: PathBuf,
        /// Output directory [default: output/<scenario>].
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Run several scenarios and compare the algorithms' over-admission side by side.
    ///
    /// Without --scenario, runs the built-in suite: uniform, Poisson and boundary-burst
    /// traffic. Each scenario's files go to <out>/<scenario>/ (default output/).
    #[command(after_help = EXAMPLES_COMPARE)]
    Compare {
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
    },
    /// Search for the most each algorithm can be made to admit in one window.
    ///
    /// Adversarial streams (a burst just before a boundary, then a request the moment
    /// retry_after allows) plus a randomised search over burst phase, size and cost.
    /// Prints the count found beside the analytic bound, and writes each winning stream
    /// as a replayable trace CSV plus a scenario file under --out.
    #[command(
        after_help = "Examples:\n  ratesim worst-case --limit 100/60s\n  ratesim worst-case --limit 5/10s --burst 8 --algos token_bucket,gcra --format json"
    )]
    WorstCase {
        #[command(flatten)]
        analysis: Analysis,
        /// Seed of the randomised search.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where the winning streams go [default: output/worst-case].
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Do not list the files written.
        #[arg(long, short)]
        quiet: bool,
    },
    /// What "N per W" really admits with each algorithm, and a strict setting that never
    /// exceeds N in any window (verified by the worst-case search).
    #[command(
        after_help = "Examples:\n  ratesim calibrate --limit 100/60s\n  ratesim calibrate --limit 10/1s --format csv"
    )]
    Calibrate {
        #[command(flatten)]
        analysis: Analysis,
        /// Seed of the randomised search and of the Poisson traffic.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Accepted for compatibility and ignored: calibrate writes no files.
        #[arg(long, short, hide = true)]
        quiet: bool,
    },
    /// Check scenario files without running them (also reads any trace through).
    ///
    /// Prints one `ok:` line per good file on stdout and each bad file's error on
    /// stderr; exits 2 if any file is bad.
    #[command(
        after_help = "Examples:\n  ratesim validate scenarios/burst.toml\n  ratesim validate scenarios/*.toml"
    )]
    Validate {
        /// The scenario files.
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
    },
    /// List the algorithms (with their worst case in any window) and bundled scenarios.
    List,
    /// Print the seed's deterministic demo: 5 requests / 10 s on every algorithm.
    Demo,
}

/// Flags shared by `run` and `compare`.
#[derive(Debug, Args)]
struct Common {
    /// Algorithms to run, comma-separated, or `all` [default: the scenario's list].
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    algos: Option<Vec<String>>,
    /// Override the scenario's random seed.
    #[arg(long)]
    seed: Option<u64>,
    /// How to print the summary on stdout (csv and json: the rows of summary.csv and
    /// summary.json).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Skip the PNG charts.
    #[arg(long)]
    no_charts: bool,
    /// Skip decisions.csv (one row per decision: large for long runs).
    #[arg(long)]
    no_decisions: bool,
    /// No progress bar and no list of written files (the summary still prints).
    #[arg(long, short)]
    quiet: bool,
    /// Worker threads (algorithms run in parallel) [default: all cores].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
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
    #[arg(long, default_value_t = 300)]
    trials: u32,
    /// How to print the results on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

impl Analysis {
    fn rule(&self) -> Result<Rule, Failure> {
        match self.burst {
            Some(b) => self
                .limit
                .with_burst(b)
                .map_err(|e| input(anyhow::Error::new(e).context("--burst"))),
            None => Ok(self.limit),
        }
    }

    fn algorithms(&self) -> Result<Vec<String>, Failure> {
        Registry::default()
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A table for people.
    Table,
    /// One CSV row per algorithm.
    Csv,
    /// A JSON array, one object per algorithm.
    Json,
}

/// A failure, classified for the exit code.
enum Failure {
    /// Bad input: usage, a scenario or trace, an unknown algorithm, an unusable --out.
    Input(anyhow::Error),
    /// Anything else (an I/O error while writing results, ...).
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Failure {
        Failure::Other(e)
    }
}

fn input(e: impl Into<anyhow::Error>) -> Failure {
    Failure::Input(e.into())
}

/// Runs the CLI and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // --help and --version are not errors.
            let code = if err.use_stderr() { 2 } else { 0 };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    match dispatch(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(e)) => report_error(&e, 2),
        Err(Failure::Other(e)) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS; // `ratesim ... | head`: the reader left
            }
            report_error(&e, 1)
        }
    }
}

fn report_error(e: &anyhow::Error, code: u8) -> ExitCode {
    eprintln!("ratesim: error: {}", one_line(e));
    ExitCode::from(code)
}

/// The error and its causes as one `: `-separated line, skipping a cause whose text
/// the message already carries (many errors print their source themselves).
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
    }
    line
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

fn dispatch(command: Command) -> Result<(), Failure> {
    match command {
        Command::Run {
            scenario,
            out,
            common,
        } => {
            let mut scenario = Scenario::load(&scenario).map_err(input)?;
            apply_overrides(&mut scenario, &common)?;
            scenario.validate().map_err(input)?;
            if let Some(warning) = size_warning(&scenario, !common.no_decisions) {
                eprintln!("ratesim: warning: {warning}");
            }
            let out = out.unwrap_or_else(|| Path::new("output").join(&scenario.name));
            let report = simulate(&scenario, &out, &common)?;
            print_summary(&[report], common.format)
        }
        Command::Compare {
            scenarios,
            limit,
            out,
            common,
        } => compare(&scenarios, limit, out, &common),
        Command::WorstCase {
            analysis,
            seed,
            out,
            quiet,
        } => worst_case(&analysis, seed, out, quiet),
        Command::Calibrate {
            analysis,
            seed,
            quiet: _,
        } => calibrate(&analysis, seed),
        Command::Validate { scenarios } => validate(&scenarios),
        Command::List => print(&list_text()),
        Command::Demo => print(&ratesim::demo::demo_text()),
    }
}

fn apply_overrides(scenario: &mut Scenario, common: &Common) -> Result<(), Failure> {
    if let Some(seed) = common.seed {
        scenario.seed = seed;
    }
    if let Some(algos) = &common.algos {
        scenario
            .set_algorithms(algos_flag(algos)?)
            .map_err(|e| input(anyhow::Error::new(e).context("--algos")))?;
    }
    Ok(())
}

/// The names given to `--algos`, refusing an empty one: `--algos gcra,` splits into
/// `gcra` and an empty name, most likely a stray comma.
fn algos_flag(names: &[String]) -> Result<&[String], Failure> {
    if names.iter().any(|n| n.trim().is_empty()) {
        return Err(input(anyhow::anyhow!(
            "--algos: empty algorithm name (a trailing comma?)"
        )));
    }
    Ok(names)
}

/// Runs one scenario, already validated (its traces read through), and writes every
/// output file into `out`. The output directory is the last input checked before
/// anything is written.
fn simulate(scenario: &Scenario, out: &Path, common: &Common) -> Result<RunReport, Failure> {
    let out = report::prepare_output_dir(out)
        .map_err(|e| input(anyhow::Error::new(e).context("--out")))?;
    let progress = Progress::new(
        sim::PROGRESS_STEPS * scenario.algorithms.len() as u64,
        common.quiet,
    );
    progress.set_message(scenario.name.clone());
    let on_progress = |done: u64, _total: u64| progress.set_position(done);
    let options = RunOptions {
        threads: common.threads.map_or_else(default_threads, usize::from),
        progress: Some(&on_progress),
    };
    let mut parts = (!common.no_decisions).then(|| DecisionParts::new(&out));
    let mut sinks = |_: &str| -> std::io::Result<Box<dyn DecisionSink>> {
        match parts.as_mut() {
            Some(parts) => parts.sink(),
            None => Ok(Box::new(NoopSink)),
        }
    };
    let result = sim::run(scenario, &options, &mut sinks);
    progress.finish();
    let report = result.map_err(|e| match e {
        SimError::Sink { .. } => Failure::Other(e.into()),
        _ => input(e),
    })?;
    let mut written = Vec::new();
    if let Some(parts) = parts {
        written.push(parts.finish().context("cannot write decisions.csv")?);
    }
    let charts = !common.no_charts;
    written.extend(
        report::write_run(&report, &out, WriteOptions { charts })
            .context("cannot write the results")?,
    );
    let mut err = std::io::stderr().lock();
    if !common.quiet {
        for path in &written {
            let _ = writeln!(err, "wrote {}", path.display());
        }
    }
    // Files an earlier run left here (say, charts before this --no-charts run) would
    // otherwise pass for this run's results.
    for path in report::stale_outputs(&out, &written) {
        let _ = writeln!(
            err,
            "note: {} is from an earlier run (this run did not write it)",
            path.display()
        );
    }
    Ok(report)
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn compare(
    files: &[PathBuf],
    limit: Option<Rule>,
    out: Option<PathBuf>,
    common: &Common,
) -> Result<(), Failure> {
    // Load everything first so a bad file fails before any run.
    let mut scenarios = Vec::new();
    if files.is_empty() {
        for file in bundled::COMPARE_SUITE {
            let text = bundled::scenario(file).context("the built-in suite is incomplete")?;
            let origin = Path::new("scenarios").join(file);
            scenarios.push(Scenario::parse(text, &origin).map_err(input)?);
        }
    } else {
        for file in files {
            scenarios.push(Scenario::load(file).map_err(input)?);
        }
    }
    for scenario in &mut scenarios {
        if let Some(rule) = limit {
            scenario.set_rule(rule).map_err(|e| {
                // A built-in scenario has no file the user could open: name it instead.
                let e = if files.is_empty() {
                    anyhow::anyhow!("the built-in {} scenario: {}", scenario.name, e.message)
                } else {
                    e.into()
                };
                input(e.context("--limit"))
            })?;
            // Over-admission shows across window boundaries: a run shorter than two
            // windows of the new limit cannot show it, whatever the algorithm.
            let windows = scenario.duration.as_u64() / rule.window().as_u64();
            if windows < 2 {
                eprintln!(
                    "ratesim: warning: {}: the run lasts {}, less than two windows of \
                     --limit {rule}, so no algorithm can be seen to over-admit; give the \
                     scenario a longer `duration`",
                    scenario.name, scenario.duration
                );
            }
        }
        apply_overrides(scenario, common)?;
        // Every trace is read through before the first run writes anything.
        scenario.validate().map_err(input)?;
        if let Some(warning) = size_warning(scenario, !common.no_decisions) {
            eprintln!("ratesim: warning: {}: {warning}", scenario.name);
        }
    }
    let mut names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    if let Some(pair) = names.windows(2).find(|p| p[0] == p[1]) {
        return Err(input(anyhow::anyhow!(
            "two scenarios are named `{}`; their outputs would overwrite each other",
            pair[0]
        )));
    }
    let root = out.unwrap_or_else(|| PathBuf::from("output"));
    let mut reports = Vec::new();
    for scenario in &scenarios {
        reports.push(simulate(scenario, &root.join(&scenario.name), common)?);
    }
    print_summary(&reports, common.format)
}

fn worst_case(
    analysis: &Analysis,
    seed: u64,
    out: Option<PathBuf>,
    quiet: bool,
) -> Result<(), Failure> {
    let rule = analysis.rule()?;
    let algorithms = analysis.algorithms()?;
    let out = out.unwrap_or_else(|| Path::new("output").join("worst-case"));
    let out = report::prepare_output_dir(&out)
        .map_err(|e| input(anyhow::Error::new(e).context("--out")))?;
    let mut cases = Vec::new();
    let mut written = Vec::new();
    for name in &algorithms {
        let case = worst_case::search(name, rule, analysis.search(seed)).map_err(input)?;
        let trace = out.join(format!("{name}.csv"));
        written.push(write_text(&trace, &worst_case::trace_csv(&case))?);
        let scenario = worst_case::replay_scenario(&case, &rule, &format!("{name}.csv"));
        written.push(write_text(&out.join(format!("{name}.toml")), &scenario)?);
        cases.push(case);
    }
    if !quiet {
        for path in &written {
            eprintln!("wrote {}", path.display());
        }
    }
    let text = match analysis.format {
        Format::Table => {
            let rows: Vec<Vec<String>> = cases
                .iter()
                .map(|c| {
                    let analytic = c
                        .analytic
                        .map_or_else(|| "?".to_string(), |a| a.to_string());
                    let verdict = match c.analytic {
                        Some(a) if c.max_in_window == a => "reached",
                        Some(a) if c.max_in_window > a => "EXCEEDED",
                        Some(_) => "below",
                        None => "",
                    };
                    vec![
                        c.algorithm.clone(),
                        analytic,
                        c.max_in_window.to_string(),
                        report::format_ratio(c.over_admission),
                        verdict.to_string(),
                    ]
                })
                .collect();
            let headers = ["algorithm", "analytic bound", "found", "÷ limit", "bound"];
            format!(
                "Most admitted in any window of {} (limit {}, burst {}):\n{}\n",
                rule.window(),
                rule.max_requests(),
                rule.burst(),
                report::render_rows(&headers, &rows, TableOptions::for_stdout())
            )
        }
        Format::Csv | Format::Json => machine_readable(analysis.format, &cases)?,
    };
    print(&text)
}

/// `rows` as CSV or pretty JSON, for `--format csv|json`.
fn machine_readable<T: serde::Serialize>(format: Format, rows: &[T]) -> Result<String, Failure> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(rows).context("cannot format JSON")? + "\n",
        _ => String::from_utf8(
            report::write_csv_rows_to(Vec::new(), rows).context("cannot format CSV")?,
        )
        .context("CSV is UTF-8")?,
    })
}

fn calibrate(analysis: &Analysis, seed: u64) -> Result<(), Failure> {
    let rule = analysis.rule()?;
    let mut rows = Vec::new();
    for name in analysis.algorithms()? {
        rows.push(calibrate::calibrate(&name, rule, analysis.search(seed)).map_err(input)?);
    }
    let text = match analysis.format {
        Format::Table => {
            let opt = |v: Option<u64>| v.map_or_else(|| "–".to_string(), |n| n.to_string());
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|c| {
                    vec![
                        c.algorithm.clone(),
                        format!("{} (analytic {})", c.nominal_worst, opt(c.nominal_analytic)),
                        c.poisson_1x.to_string(),
                        c.poisson_2x.to_string(),
                        if c.strict.is_empty() {
                            "none exists".to_string()
                        } else {
                            c.strict.clone()
                        },
                        opt(c.strict_worst),
                    ]
                })
                .collect();
            let headers = [
                "algorithm",
                "nominal: worst case",
                "Poisson 1×",
                "Poisson 2×",
                "strict setting",
                "strict: worst case",
            ];
            format!(
                "What {rule} admits in one window (most requests of one client), and a setting that never exceeds {}:\n{}\n",
                rule.max_requests(),
                report::render_rows(&headers, &cells, TableOptions::for_stdout())
            )
        }
        Format::Csv | Format::Json => machine_readable(analysis.format, &rows)?,
    };
    print(&text)
}

/// Writes `text` to `path` atomically.
fn write_text(path: &Path, text: &str) -> Result<PathBuf, Failure> {
    let mut file = report::AtomicFile::create(path).context("cannot write the results")?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(file.finish().context("cannot write the results")?)
}

/// Checks every file, printing `ok: …` on stdout for a good one and its error on
/// stderr for a bad one, so one run over `scenarios/*.toml` reports them all. Fails
/// (exit 2) if any file is bad; with several files a last line counts them.
fn validate(files: &[PathBuf]) -> Result<(), Failure> {
    let mut failures = Vec::new();
    for file in files {
        match validate_one(file) {
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
fn validate_one(file: &Path) -> Result<String, ScenarioError> {
    let scenario = Scenario::load(file)?;
    scenario.validate()?;
    let warning = size_warning(&scenario, true)
        .map(|w| format!("warning: {}: {w}\n", file.display()))
        .unwrap_or_default();
    Ok(format!(
        "ok: {} ({}: {} traffic source{}, {} algorithm{}, {} client, limit {}{})\n",
        file.display(),
        scenario.name,
        scenario.traffic.len(),
        plural(scenario.traffic.len()),
        scenario.algorithms.len(),
        plural(scenario.algorithms.len()),
        scenario.client.name(),
        scenario.rule,
        scenario
            .extra_limits
            .iter()
            .map(|l| format!(" and {l}"))
            .collect::<String>(),
    ) + &warning)
}

/// Above this many expected arrivals, `validate`, `run` and `compare` warn.
const ENORMOUS_RUN: u128 = 1_000_000_000;

/// A warning for a scenario expected to generate more than [`ENORMOUS_RUN`] requests:
/// the estimate and, if `decisions` (decisions.csv would be written), that file's
/// approximate size. `None` for an ordinary run.
fn size_warning(scenario: &Scenario, decisions: bool) -> Option<String> {
    let arrivals = scenario.expected_arrivals();
    if arrivals <= ENORMOUS_RUN {
        return None;
    }
    let mut text = format!("about {} requests to simulate", grouped(arrivals));
    if decisions {
        let algorithms = scenario.algorithms.len();
        let rows = arrivals.saturating_mul(algorithms as u128);
        // A row is about 50 bytes plus the digits of its seq and of its time in
        // whole seconds (measured on the bundled scenarios).
        let digits = |n: u128| n.checked_ilog10().map_or(1, |d| d + 1);
        let row_bytes =
            50 + digits(arrivals) + digits(u128::from(scenario.duration.as_u64() / 1_000_000_000));
        let some = match scenario.client {
            sim::ClientModel::Open => "about",
            sim::ClientModel::Retry { .. } => "at least",
        };
        text.push_str(&format!(
            "; decisions.csv would hold {some} {} rows ({algorithms} algorithm{}), about {} \
             (--no-decisions skips it)",
            grouped(rows),
            plural(algorithms),
            bytes(rows.saturating_mul(u128::from(row_bytes))),
        ));
    }
    Some(text)
}

/// `n` with thousands separators: `86,400,000,000,000`.
fn grouped(n: u128) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count in decimal units, two significant figures: `36 PB`, `1.2 GB`.
fn bytes(n: u128) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 999.5 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if value < 9.95 && unit > 0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Prints the runs' summaries in the chosen format: one table per run (and a
/// comparison matrix when there are several), or the summary rows as CSV/JSON.
fn print_summary(reports: &[RunReport], format: Format) -> Result<(), Failure> {
    let text = match format {
        Format::Table => {
            let options = TableOptions::for_stdout();
            let mut text = String::new();
            for r in reports {
                let also: String = r
                    .extra_limits
                    .iter()
                    .map(|l| format!(" and {} per {}", l.max_requests, l.window))
                    .collect();
                let measured = if also.is_empty() {
                    ""
                } else {
                    " (metrics against the first)"
                };
                text.push_str(&format!(
                    "{} — limit {} per {}{also}{measured}\n",
                    r.scenario, r.rule.max_requests, r.rule.window
                ));
                let rows = report::summary_rows(r);
                text.push_str(&report::render_summary_table(&rows, options));
                if let Some(retry) = report::render_retry_outcomes(&rows, options) {
                    text.push_str("\n\n");
                    text.push_str(&retry);
                }
                text.push_str("\n\n");
            }
            if reports.len() > 1 {
                text.push_str("Over-admission (most admitted in any window ÷ limit; the sliding log is exact):\n");
                text.push_str(&comparison_matrix(reports, options));
                text.push('\n');
            }
            text
        }
        Format::Csv => summary_csv(reports).context("cannot format CSV")?,
        Format::Json => {
            let rows = summary_records(reports);
            serde_json::to_string_pretty(&rows).context("cannot format JSON")? + "\n"
        }
    };
    print(&text)
}

/// summary.csv for every run; with several runs a first `scenario` column says which
/// run each row belongs to, so the output stays one tidy table.
fn summary_csv(reports: &[RunReport]) -> anyhow::Result<String> {
    let mut out = csv::Writer::from_writer(Vec::new());
    let labelled = reports.len() > 1;
    for (i, r) in reports.iter().enumerate() {
        let metrics: Vec<_> = r.algorithms.iter().map(|a| &a.metrics).collect();
        let one = report::write_csv_rows_to(Vec::new(), &metrics)?;
        let mut reader = csv::Reader::from_reader(one.as_slice());
        if i == 0 {
            let header = reader.headers()?.clone();
            let label = labelled.then_some("scenario");
            out.write_record(label.into_iter().chain(header.iter()))?;
        }
        for record in reader.records() {
            let record = record?;
            let label = labelled.then_some(r.scenario.as_str());
            out.write_record(label.into_iter().chain(record.iter()))?;
        }
    }
    Ok(String::from_utf8(out.into_inner()?)?)
}

/// summary.json's rows for every run; with several runs each row also names its
/// scenario (first field).
fn summary_records(reports: &[RunReport]) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    for r in reports {
        for a in &r.algorithms {
            let metrics = serde_json::to_value(&a.metrics).unwrap_or_default();
            if reports.len() == 1 {
                rows.push(metrics);
                continue;
            }
            let mut row = serde_json::Map::new();
            row.insert("scenario".into(), r.scenario.clone().into());
            if let serde_json::Value::Object(fields) = metrics {
                row.extend(fields);
            }
            rows.push(serde_json::Value::Object(row));
        }
    }
    rows
}

fn comparison_matrix(reports: &[RunReport], options: TableOptions) -> String {
    let columns: Vec<String> = reports.iter().map(|r| r.scenario.clone()).collect();
    let mut algorithms: Vec<&str> = Vec::new();
    for r in reports {
        for a in &r.algorithms {
            if !algorithms.contains(&a.name.as_str()) {
                algorithms.push(&a.name);
            }
        }
    }
    let rows: Vec<(String, Vec<f64>)> = algorithms
        .iter()
        .map(|&name| {
            let ratios = reports
                .iter()
                .map(|r| {
                    r.algorithms
                        .iter()
                        .find(|a| a.name == name)
                        .map_or(f64::NAN, |a| a.metrics.over_admission)
                })
                .collect();
            (name.to_string(), ratios)
        })
        .collect();
    report::render_ratio_matrix("algorithm", &columns, &rows, options)
}

fn list_text() -> String {
    let registry = Registry::default();
    let width = registry.names().map(str::len).max().unwrap_or(0);
    let mut out = String::from(
        "Algorithms (worst case: most admitted in any window of length W, for N per W, burst B;\nless when W is under 2N ns):\n",
    );
    for name in registry.names() {
        let description = registry.description(name).unwrap_or_default();
        let worst = worst_case::analytic_formula(name).unwrap_or("?");
        out.push_str(&format!("  {name:<width$}  {worst:<9}  {description}\n"));
    }
    out.push_str("\nBundled scenarios (scenarios/*.toml; `ratesim run scenarios/<file>`):\n");
    let width = bundled::SCENARIOS
        .iter()
        .map(|(f, _)| f.len())
        .max()
        .unwrap_or(0);
    for (file, text) in bundled::SCENARIOS {
        let summary = match Scenario::parse(text, &Path::new("scenarios").join(file)) {
            Ok(s) => first_sentence(&s.description),
            Err(e) => format!("(does not parse: {e})"),
        };
        out.push_str(&format!("  {file:<width$}  {summary}\n"));
    }
    out
}

fn first_sentence(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.find(". ") {
        Some(i) => flat[..=i].to_string(),
        None => flat,
    }
}

/// Parses `--limit MAX/WINDOW`, e.g. `100/60s`.
fn parse_limit(text: &str) -> Result<Rule, String> {
    let (max, window) = text
        .split_once('/')
        .ok_or_else(|| format!("expected MAX/WINDOW like 100/60s, found `{text}`"))?;
    let max = sim::parse_whole(max.trim())?;
    let window = Nanos::parse_duration(window).map_err(|e| e.to_string())?;
    Rule::new(max, window).map_err(|e| e.to_string())
}

/// Parses `--burst B`: a whole number of at least 1.
fn parse_burst(text: &str) -> Result<u64, String> {
    match sim::parse_whole(text)? {
        0 => Err("the burst must be at least 1".to_string()),
        burst => Ok(burst),
    }
}

/// Writes to stdout; a closed pipe (`ratesim demo | head`) ends quietly.
fn print(text: &str) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("cannot write to stdout")?;
    Ok(())
}
