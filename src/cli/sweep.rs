//! `ratesim sweep`: its flags, reading `--set FIELD=V1,V2,…` into the configurations
//! to try, and one sweep into its output directory.
//!
//! Dispatch only: the fan-out is `sim::sweep`, the rows, table, goals and chart are
//! `report::sweep`'s.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use ratesim::report::sweep::{self, Goal, SweepHeading};
use ratesim::report::{self, Progress, RunMetadata, TableOptions};
use ratesim::sim::{self, RuleReport, RunOptions, Scenario};
use ratesim::{Nanos, Registry, Rule};

use super::{Failure, Format, input, parse_positive, parse_seed, print};

pub(super) const EXAMPLES: &str = "Examples:
  ratesim sweep scenarios/nginx_log.toml --set max_requests=50,100,200 --set window=10s,60s
  ratesim sweep scenarios/nginx_log.toml --set max_requests=100,200 --set burst=100,200,400 \\
      --algos token_bucket,gcra --goal 'over_admission<=1.5' --goal 'clients_denied<=1'
  ratesim sweep scenarios/poisson.toml --set window=1s,10s,1m --format csv > sweep.csv

Every combination of the --set values is one configuration; each runs every algorithm,
all on one stream (the scenario's traffic, generated or read once). A field not set keeps
the scenario's value; burst, when not set, is each configuration's max_requests unless the
scenario sets a burst other than its own max_requests. Each row of sweep.csv is exactly the summary.csv row of
`ratesim run SCENARIO --limit MAX/WINDOW --burst B --algos ALGO`.

Goals: METRIC then <=, <, >= or > then a number, judged exactly; several --goal must all
hold. Metrics: over_admission, clients_denied, requests_denied_share, false_allow,
false_deny, excess, max_in_window, denied, allow_rate. The least restrictive row meeting
the goals has the fewest clients denied, then the fewest requests denied, then the
highest rate (max_requests ÷ window), then the largest burst; rows equal on all four keep
sweep.csv's order, and the first of them is named. Without --goal, or when no row meets
it, no row is named to run.";

/// At most this many configurations: each runs every algorithm at once, in memory.
const MAX_CONFIGS: usize = 1_000;

/// The fields `--set` can sweep.
const FIELDS: [&str; 3] = ["max_requests", "window", "burst"];

// The flags of `sweep` (its about text is on `Command::Sweep`).
#[derive(Debug, Args)]
pub(super) struct SweepArgs {
    /// The scenario file (TOML; see docs/scenarios.md): its traffic, seed and client.
    scenario: PathBuf,
    /// A field of the limit and the values to try, as FIELD=V1,V2,… (fields:
    /// max_requests, window, burst); repeat for each field.
    #[arg(long = "set", value_name = "FIELD=VALUES", value_parser = parse_set)]
    sets: Vec<SetFlag>,
    /// A condition rows should meet, as METRIC<=VALUE (or <, >=, >), e.g.
    /// over_admission<=1.0; repeatable, all must hold.
    #[arg(long = "goal", value_name = "METRIC<=VALUE", value_parser = parse_goal)]
    goals: Vec<Goal>,
    /// Algorithms to run, comma-separated, or `all` [default: the scenario's list].
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    algos: Option<Vec<String>>,
    /// Override the scenario's random seed.
    #[arg(long, value_parser = parse_seed, allow_negative_numbers = true)]
    seed: Option<u64>,
    /// Output directory [default: output/sweep/<scenario>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// How to print the rows on stdout (csv and json: sweep.csv and sweep.json).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Rows the table shows, in its order (0: all).
    #[arg(long, value_name = "N", default_value_t = 20)]
    top: usize,
    /// Skip frontier.png.
    #[arg(long)]
    no_charts: bool,
    /// No progress bar and no list of written files.
    #[arg(long, short)]
    quiet: bool,
    /// Worker threads [default: all cores]; results are identical for any N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
}

/// One `--set`: a field and its values, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum SetFlag {
    MaxRequests(Vec<u64>),
    Window(Vec<Nanos>),
    Burst(Vec<u64>),
}

/// Parses `FIELD=V1,V2,…`; every message names the field and the value.
fn parse_set(text: &str) -> Result<SetFlag, String> {
    let (field, values) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}`: expected FIELD=V1,V2,… such as window=10s,60s"))?;
    let field = field.trim();
    if !FIELDS.contains(&field) {
        return Err(format!(
            "unknown field `{field}`; expected one of {}",
            FIELDS.join(", ")
        ));
    }
    if values.trim().is_empty() {
        return Err(format!("{field}: no values; expected {field}=V1,V2,…"));
    }
    let values: Vec<&str> = values.split(',').map(str::trim).collect();
    for (i, v) in values.iter().enumerate() {
        if v.is_empty() {
            return Err(format!("{field}: an empty value (a stray comma?)"));
        }
        if values[..i].contains(v) {
            return Err(format!("{field}: `{v}` is listed twice"));
        }
    }
    let whole = |v: &&str| parse_positive(v).map_err(|e| format!("{field}={v}: {e}"));
    Ok(match field {
        "max_requests" => SetFlag::MaxRequests(values.iter().map(whole).collect::<Result<_, _>>()?),
        "burst" => SetFlag::Burst(values.iter().map(whole).collect::<Result<_, _>>()?),
        _ => SetFlag::Window(
            values
                .iter()
                .map(|v| match Nanos::parse_duration(v) {
                    Ok(w) if w > Nanos::ZERO => Ok(w),
                    Ok(_) => Err(format!("{field}={v}: a window must be longer than 0")),
                    Err(e) => Err(format!("{field}={v}: {e}")),
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

fn parse_goal(text: &str) -> Result<Goal, String> {
    Goal::parse(text).map_err(|e| e.to_string())
}

/// Every combination of the `--set` values (max_requests slowest, burst fastest), the
/// scenario's own value for a field not set.
fn configurations(sets: &[SetFlag], scenario: &Rule) -> Result<Vec<Rule>, Failure> {
    let (mut maxes, mut windows, mut bursts) = (None, None, None);
    for set in sets {
        let (name, seen) = match set {
            SetFlag::MaxRequests(v) => ("max_requests", maxes.replace(v.clone()).is_some()),
            SetFlag::Window(v) => ("window", windows.replace(v.clone()).is_some()),
            SetFlag::Burst(v) => ("burst", bursts.replace(v.clone()).is_some()),
        };
        if seen {
            return Err(input(anyhow::anyhow!(
                "--set {name} is given twice; list every value once: {name}=V1,V2,…"
            )));
        }
    }
    let maxes = maxes.unwrap_or_else(|| vec![scenario.max_requests()]);
    let windows = windows.unwrap_or_else(|| vec![scenario.window()]);
    // A scenario's own burst is kept; its default (the limit) follows each max.
    let own_burst = (scenario.burst() != scenario.max_requests()).then(|| scenario.burst());
    let bursts: Vec<Option<u64>> = match bursts {
        Some(b) => b.into_iter().map(Some).collect(),
        None => vec![own_burst],
    };
    let count = maxes.len() * windows.len() * bursts.len();
    if count > MAX_CONFIGS {
        return Err(input(anyhow::anyhow!(
            "--set: {count} configurations is more than {MAX_CONFIGS}; sweep fewer values"
        )));
    }
    let mut rules = Vec::with_capacity(count);
    for &max in &maxes {
        for &window in &windows {
            for &burst in &bursts {
                let rule = Rule::new(max, window)
                    .and_then(|r| r.with_burst(burst.unwrap_or(max)))
                    .map_err(|e| input(anyhow::Error::new(e).context("--set")))?;
                rules.push(rule);
            }
        }
    }
    Ok(rules)
}

pub(super) fn sweep(args: &SweepArgs, registry: &Registry) -> Result<(), Failure> {
    let mut scenario = Scenario::load_with(&args.scenario, registry).map_err(input)?;
    sim::check_sweepable(&scenario).map_err(super::sim_failure)?;
    super::run::set_seed_and_algos(&mut scenario, args.seed, args.algos.as_deref(), registry)?;
    let rules = configurations(&args.sets, &scenario.rule)?;
    for (trace, skipped) in scenario.read_traces().map_err(input)? {
        eprintln!("ratesim: warning: {}", skipped.describe(&trace));
    }
    warn_about_limits(&scenario);
    let out = match &args.out {
        Some(out) => out.clone(),
        None => Path::new("output").join("sweep").join(&scenario.name),
    };
    let source = super::run::source_of(&args.scenario)?;
    let out = report::prepare_output_dir(&out)
        .map_err(|e| input(anyhow::Error::new(e).context("--out")))?;
    let reports = run_sweep(&scenario, &rules, args, registry)?;
    let rows = report::sweep_rows(&reports, &args.goals, registry);
    let title = format!(
        "{}: {} limits × {} algorithms, clients denied against over-admission",
        scenario.name,
        rules.len(),
        scenario.algorithms.len()
    );
    let mut written =
        report::write_sweep(&out, &title, &rows, &args.goals, !args.no_charts, registry)
            .context("cannot write the results")?;
    if let Some(first) = reports.first() {
        let mut meta = RunMetadata::new(first, source, super::store::redacted_args());
        meta.limits = std::iter::once(&scenario.rule)
            .chain(&scenario.extra_limits)
            .map(RuleReport::from)
            .collect();
        written.push(
            sweep::write_sweep_metadata(&out, &meta, &reports).context("cannot write run.json")?,
        );
    }
    if !args.quiet {
        for path in &written {
            eprintln!("wrote {}", path.display());
        }
    }
    let files = [
        sweep::SWEEP_CSV,
        sweep::SWEEP_JSON,
        sweep::FRONTIER_PNG,
        report::RUN_JSON,
    ];
    super::run::note_stale(&out, &files, &written);
    print_rows(&rows, &scenario, rules.len(), args)
}

/// What a sweep changes that a reader might not expect: extra limits replaced by one,
/// traffic that follows the limit held at the scenario's own.
fn warn_about_limits(scenario: &Scenario) {
    if !scenario.extra_limits.is_empty() {
        eprintln!(
            "ratesim: warning: each configuration replaces all {} limits of the scenario \
             with one",
            scenario.extra_limits.len() + 1
        );
    }
    if scenario.traffic_follows_the_limit() {
        eprintln!(
            "ratesim: note: this traffic follows the limit (a boundary burst without \
             `period`, or a rate such as \"2x\"); a sweep keeps the stream the scenario's \
             own limit of {} makes, so every configuration sees the same requests",
            scenario.rule
        );
    }
}

fn run_sweep(
    scenario: &Scenario,
    rules: &[Rule],
    args: &SweepArgs,
    registry: &Registry,
) -> Result<Vec<sim::RunReport>, Failure> {
    let runs = rules.len() as u64 * scenario.algorithms.len() as u64;
    let progress = Progress::new(sim::PROGRESS_STEPS * runs, args.quiet);
    progress.set_message(format!(
        "{} × {} configurations",
        scenario.name,
        rules.len()
    ));
    let on_progress = |done: u64, _total: u64| progress.set_position(done);
    let defaults = RunOptions::default();
    let options = RunOptions {
        threads: args.threads.map_or(defaults.threads, usize::from),
        progress: Some(&on_progress),
        registry,
        ..defaults
    };
    let result = sim::sweep(scenario, rules, &options);
    progress.finish();
    result.map_err(super::sim_failure)
}

/// The rows on stdout: the table with the goals' verdict (and how to run the least
/// restrictive row), or sweep.csv / sweep.json's text.
fn print_rows(
    rows: &[sweep::SweepRow],
    scenario: &Scenario,
    configs: usize,
    args: &SweepArgs,
) -> Result<(), Failure> {
    let text = match args.format {
        Format::Csv => sweep::sweep_csv(rows).context("cannot format CSV")?,
        Format::Json => sweep::sweep_json(rows).context("cannot format JSON")?,
        Format::Table => {
            let heading = SweepHeading {
                scenario: &scenario.name,
                configs,
                goals: Some(&args.goals),
                top: args.top,
            };
            let mut text = report::render_sweep(rows, heading, TableOptions::for_stdout());
            if let Some(best) = sweep::least_restrictive(rows) {
                let c = best.config;
                let burst = if best.uses_burst && c.burst != c.max_requests {
                    format!(" --burst {}", c.burst)
                } else {
                    String::new()
                };
                text.push_str(&format!(
                    "run it: ratesim run {} --limit {}/{}{burst} --algos {}\n",
                    args.scenario.display(),
                    c.max_requests,
                    c.window,
                    best.metrics.algorithm
                ));
            }
            text
        }
    };
    print(&text)
}
