//! The clap front end: parse arguments, call `sim` and `report`, print, and map errors
//! to exit codes (0 ok, 1 failure, 2 bad input). No rate-limiting or reporting logic.
//!
//! This file holds the top-level parser, the `--format` choice, the error → exit-code
//! mapping and stdout. Each command's flags and its dispatch live in their own file
//! (`run` also serves `compare`; `analysis` serves `worst-case` and `calibrate`); every
//! table, message text and file writer they use comes from `ratesim::report`, and
//! every default from the settings type that owns it (`RunOptions`, `SearchOptions`).

mod analysis;
mod compare;
mod import;
mod run;
mod store;
mod sweep;
mod traces;
mod validate;

pub use store::remove_interrupted_run_keys;

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use ratesim::sim::{SimError, StoreUnsupported};
use ratesim::{Nanos, Registry, Rule, bundled, report, sim};

/// Set by the interrupt handler before it does anything else.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The process is being interrupted (Ctrl-C, SIGTERM or SIGHUP): called first by the
/// handler, which then cleans up and exits with 130.
pub fn note_interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Once interrupted, the handler owns the exit: the command's own outcome is not
/// reported. It is often an error the handler caused itself: stopping a `--store`
/// run's Redis store fails the run's next call. Reported, that error would be printed
/// and the process would exit 1, racing the handler's cleanup and its 130. This
/// thread waits for the handler's exit instead.
fn yield_to_interrupt() {
    while INTERRUPTED.load(Ordering::SeqCst) {
        std::thread::park();
    }
}

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
    /// Writes decisions.csv, window_counts.csv, summary.csv, summary.json, four PNG
    /// charts (timeline, timeline_zoom, window_counts, over_admission) and report.html
    /// to output/<scenario>/ (or --out), and prints the summary on stdout.
    #[command(after_help = run::EXAMPLES)]
    Run(run::RunArgs),
    /// Run several scenarios and compare the algorithms' over-admission side by side.
    ///
    /// Without --scenario, runs the built-in suite: uniform, Poisson and boundary-burst
    /// traffic. Each scenario's files go to <out>/<scenario>/ (default output/compare/),
    /// beside over_admission_matrix.csv.
    #[command(after_help = compare::EXAMPLES)]
    Compare(compare::CompareArgs),
    /// Try many limits on one scenario's traffic: every combination of --set values,
    /// with every algorithm, on one stream.
    ///
    /// Writes sweep.csv and sweep.json (one row per configuration and algorithm: the
    /// configuration, then exactly the run's summary columns) and frontier.png (clients
    /// denied against over-admission, the Pareto front labelled) to
    /// output/sweep/<scenario>/ (or --out), and prints the rows least restrictive first.
    #[command(after_help = sweep::EXAMPLES)]
    Sweep(sweep::SweepArgs),
    /// Search for the most each algorithm can be made to admit in one window.
    ///
    /// Adversarial streams (a burst just before a boundary, then a request the moment
    /// retry_after allows) plus a randomised search over burst phase, size and cost.
    /// Prints the count found beside the analytic bound, and writes each winning stream
    /// as a replayable trace CSV plus a scenario file under --out.
    #[command(after_help = analysis::EXAMPLES_WORST_CASE)]
    WorstCase(analysis::WorstCaseArgs),
    /// What "N per W" really admits with each algorithm, and a strict setting that never
    /// exceeds N in any window (verified by the worst-case search).
    #[command(after_help = analysis::EXAMPLES_CALIBRATE)]
    Calibrate(analysis::CalibrateArgs),
    /// Check scenario files without running them (also reads any trace through).
    ///
    /// Prints one `ok:` line per good file on stdout and each bad file's error on
    /// stderr; exits 2 if any file is bad.
    #[command(after_help = validate::EXAMPLES)]
    Validate(validate::ValidateArgs),
    /// Turn an nginx, HAProxy or Envoy rate-limit config into scenarios of its presets.
    ///
    /// One scenario per zone, stick table, descriptor or token bucket. Prints the scenario TOML on stdout (or writes <name>.toml files into --out);
    /// what cannot be modelled is an error or a warning naming file:line.
    #[command(after_help = import::EXAMPLES)]
    Import(import::ImportArgs),
    /// List the algorithms (with their worst case in any window) and bundled scenarios.
    List,
    /// Print the original design's deterministic demo: 5 requests / 10 s on every algorithm.
    Demo,
}

/// How a command prints its results on stdout (`--format`).
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

/// A simulator error as the command line says it: the flag it concerns named first
/// (`--key:`, `--store:`; the library's messages name no flag), the way out only the
/// CLI knows (`ratesim compare --nodes`), and the exit code (a store that failed
/// mid-run, or a sink that could not write, is not bad input).
fn sim_failure(e: SimError) -> Failure {
    match &e {
        SimError::Sink { .. } | SimError::Store(_) => Failure::Other(e.into()),
        SimError::UnknownKey { .. } => input(anyhow::Error::new(e).context("--key")),
        SimError::StoreUnsupported(StoreUnsupported::Deployment { .. }) => {
            input(anyhow::anyhow!("--store: {e}; run it without --store"))
        }
        SimError::StoreUnsupported(StoreUnsupported::Sweep) => input(e),
        SimError::StoreUnsupported(_) => input(anyhow::Error::new(e).context("--store")),
        SimError::SweepDeployment { .. } => input(anyhow::anyhow!(
            "{e}, or compare server counts with `ratesim compare --nodes 1,2,4 --scenario FILE`"
        )),
        _ => input(e),
    }
}

/// Runs the CLI and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // --help and --version are not errors.
            if !err.use_stderr() {
                let _ = err.print();
                return ExitCode::SUCCESS;
            }
            eprintln!(
                "ratesim: error: {}",
                clap_one_line(&err.render().to_string())
            );
            return ExitCode::from(2);
        }
    };
    let result = dispatch(cli.command);
    yield_to_interrupt();
    match result {
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

/// clap's several-line usage error as one line, like every other error: the message,
/// its indented details and tips, then the usage, e.g. `unexpected argument '--limt'
/// found (a similar argument exists: '--limit'); usage: ratesim run <SCENARIO>; see --help`.
fn clap_one_line(text: &str) -> String {
    let mut line = String::new();
    let mut tips = Vec::new();
    let mut usage = None;
    for raw in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(u) = raw.strip_prefix("Usage:") {
            usage = Some(u.trim().to_string());
        } else if let Some(tip) = raw.strip_prefix("tip:") {
            tips.push(tip.trim().to_string());
        } else if raw.starts_with("For more information") {
            continue;
        } else if let Some(msg) = raw.strip_prefix("error:") {
            line.push_str(msg.trim());
        } else if usage.is_none() {
            // An indented detail (a missing argument's name) or a continuation.
            let sep = if line.ends_with(':') { " " } else { ", " };
            line.push_str(sep);
            line.push_str(raw);
        }
    }
    if !tips.is_empty() {
        line.push_str(&format!(" ({})", tips.join("; ")));
    }
    if let Some(u) = usage {
        line.push_str(&format!("; usage: {u}"));
    }
    line.push_str("; see --help");
    line
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
    // The one registry of algorithms every command names, builds and describes from.
    let registry = Registry::standard();
    match command {
        Command::Run(args) => run::run(&args, registry),
        Command::Compare(args) => compare::compare(&args, registry),
        Command::Sweep(args) => sweep::sweep(&args, registry),
        Command::WorstCase(args) => analysis::worst_case(&args, registry),
        Command::Calibrate(args) => analysis::calibrate(&args, registry),
        Command::Validate(args) => validate::validate(&args.scenarios, registry),
        Command::Import(args) => import::import(&args),
        Command::List => print(&report::render_listing(
            registry,
            bundled::SCENARIOS,
            report::TableOptions::for_stdout().width,
        )),
        Command::Demo => print(&ratesim::demo::demo_text()),
    }
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

/// Parses `--limit MAX/WINDOW`, e.g. `100/60s`.
fn parse_limit(text: &str) -> Result<Rule, String> {
    let (max, window) = text
        .split_once('/')
        .ok_or_else(|| format!("expected MAX/WINDOW like 100/60s, found `{text}`"))?;
    let max = parse_positive(max.trim())?;
    let window = Nanos::parse_duration(window).map_err(|e| e.to_string())?;
    Rule::new(max, window).map_err(|e| e.to_string())
}

/// Parses `--burst B`: a whole number of at least 1.
fn parse_burst(text: &str) -> Result<u64, String> {
    parse_positive(text)
}

/// Parses `--seed`: any whole number from 0 (`-1` is read as a value, so the error
/// says what a seed is rather than suggesting `-- -1`).
fn parse_seed(text: &str) -> Result<u64, String> {
    sim::parse_whole(text)
}

/// A whole number of at least 1 (`--limit`'s MAX, `--burst`), or why not.
fn parse_positive(text: &str) -> Result<u64, String> {
    sim::parse_whole_from(text, 1)
}

/// `rows` as CSV or pretty JSON, for `--format csv|json`.
fn machine_readable<T: serde::Serialize>(format: Format, rows: &[T]) -> Result<String, Failure> {
    Ok(match format {
        Format::Json => report::json_string(rows).context("cannot format JSON")?,
        _ => report::csv_string(rows).context("cannot format CSV")?,
    })
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
