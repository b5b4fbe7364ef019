//! `ratesim import`: its flags, the traffic choice (`--trace` or Poisson), and writing
//! each imported scenario to stdout or `--out DIR`.
//!
//! Dispatch only: reading configs is [`ratesim::import`], rendering the TOML
//! [`ratesim::import::render`]; the trace is read here only to measure its length.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};
use ratesim::Nanos;
use ratesim::import::{self, ConfigKind, Imported, Traffic};
use ratesim::sim::{SameSecond, TraceFormat, TraceOptions, TraceReader};

use super::{Failure, input, print};

pub(super) const EXAMPLES: &str = "Examples:
  ratesim import scenarios/configs/nginx.conf --trace scenarios/traces/nginx-access.log.gz > imported.toml
  ratesim run imported.toml
  ratesim import haproxy.cfg                      # Poisson traffic at twice the limit
  ratesim import ratelimit.yaml --out imported/   # one file per descriptor
  ratesim import envoy.yaml --kind envoy-local --only http_local_rate_limiter

What it reads (one scenario per zone, table, descriptor or token bucket):
  nginx        limit_req_zone KEY zone=NAME:SIZE rate=Nr/s|Nr/m, and
               limit_req zone=NAME [burst=B] [nodelay|delay=D]      -> preset nginx
  haproxy      stick-table ... store http_req_rate(PERIOD), track-scN KEY, and
               http-request deny if { sc_http_req_rate(N) gt MAX }  -> preset haproxy
  envoy        the ratelimit service's domain/descriptors with
               rate_limit: {unit, requests_per_unit}                -> preset envoy
  envoy-local  token_bucket: {max_tokens, tokens_per_fill, fill_interval} -> envoy_local
Anything it cannot model is an error or a warning naming file:line, never a guess.";

// The flags of `import` (its about text is on `Command::Import`).
#[derive(Debug, Args)]
pub(super) struct ImportArgs {
    /// The config file: nginx.conf, haproxy.cfg, a ratelimit service YAML or an Envoy
    /// YAML with a local rate limit.
    pub(super) config: PathBuf,
    /// What kind of config it is [default: told from its directives].
    #[arg(long, value_enum)]
    pub(super) kind: Option<KindArg>,
    /// Write one <name>.toml per scenario into DIR (created if missing) instead of
    /// printing the one scenario on stdout.
    #[arg(long, value_name = "DIR")]
    pub(super) out: Option<PathBuf>,
    /// Import only the scenario of this zone / table / descriptor name.
    #[arg(long, value_name = "NAME")]
    pub(super) only: Option<String>,
    /// Replay this log as the traffic, instead of ten Poisson clients at twice the limit.
    /// Read through once to measure its length. A relative path is written as given on
    /// stdout (save the scenario in the current folder) and made absolute with --out.
    #[arg(long, value_name = "LOG")]
    pub(super) trace: Option<PathBuf>,
    /// The log's format [default: csv for *.csv, jsonl for *.jsonl, else combined].
    #[arg(long, value_name = "FORMAT", requires = "trace",
          value_parser = clap::builder::PossibleValuesParser::new(["csv", "combined", "jsonl"]))]
    pub(super) trace_format: Option<String>,
    /// The log field that keys clients [default: the config's key where a combined log
    /// has it, e.g. ip for $binary_remote_addr or src; else the format's default].
    #[arg(long, value_name = "FIELD", requires = "trace")]
    pub(super) key: Option<String>,
    /// How long to simulate [default: ten windows, or the whole --trace].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(super) duration: Option<Nanos>,
}

/// `--kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum KindArg {
    /// nginx.conf: limit_req_zone / limit_req.
    Nginx,
    /// haproxy.cfg: stick-table with http_req_rate and its deny rule.
    Haproxy,
    /// envoyproxy/ratelimit's YAML: domain and descriptors.
    Envoy,
    /// Envoy's local_ratelimit filter: token_bucket.
    EnvoyLocal,
}

impl From<KindArg> for ConfigKind {
    fn from(k: KindArg) -> ConfigKind {
        match k {
            KindArg::Nginx => ConfigKind::Nginx,
            KindArg::Haproxy => ConfigKind::Haproxy,
            KindArg::Envoy => ConfigKind::Envoy,
            KindArg::EnvoyLocal => ConfigKind::EnvoyLocal,
        }
    }
}

fn parse_duration(text: &str) -> Result<Nanos, String> {
    match Nanos::parse_duration(text) {
        Ok(d) if d > Nanos::ZERO => Ok(d),
        Ok(_) => Err("a duration of 0 simulates nothing".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

pub(super) fn import(args: &ImportArgs) -> Result<(), Failure> {
    let imported =
        import::import_file(&args.config, args.kind.map(ConfigKind::from)).map_err(input)?;
    for w in &imported.warnings {
        eprintln!(
            "ratesim: warning: {}:{}: {}",
            args.config.display(),
            w.line,
            w.message
        );
    }
    let limits = chosen(&imported, args)?;
    let traffic = traffic(args)?;
    match &args.out {
        None => {
            let [one] = limits.as_slice() else {
                let names: Vec<&str> = limits.iter().map(|l| l.name.as_str()).collect();
                return Err(input(anyhow::anyhow!(
                    "{} gives {} scenarios ({}): pass --out DIR to write them all, or \
                     --only NAME for one",
                    args.config.display(),
                    limits.len(),
                    names.join(", ")
                )));
            };
            print(&import::render(
                one,
                &traffic,
                &args.config,
                &imported.warnings_for(one),
            ))
        }
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create --out {}", dir.display()))
                .map_err(input)?;
            for limit in limits {
                let file = dir.join(format!("{}.toml", limit.name));
                let text =
                    import::render(limit, &traffic, &args.config, &imported.warnings_for(limit));
                std::fs::write(&file, text)
                    .with_context(|| format!("cannot write {}", file.display()))?;
                print(&format!(
                    "wrote {} ({} preset)\n",
                    file.display(),
                    limit.preset
                ))?;
            }
            Ok(())
        }
    }
}

/// The limits `--only` keeps (all without it).
fn chosen<'a>(
    imported: &'a Imported,
    args: &ImportArgs,
) -> Result<Vec<&'a import::ImportedLimit>, Failure> {
    let all: Vec<_> = imported.limits.iter().collect();
    let Some(only) = &args.only else {
        return Ok(all);
    };
    let kept: Vec<_> = all.iter().copied().filter(|l| &l.name == only).collect();
    if kept.is_empty() {
        let names: Vec<&str> = all.iter().map(|l| l.name.as_str()).collect();
        return Err(input(anyhow::anyhow!(
            "--only {only}: no such scenario in {}; it has {}",
            args.config.display(),
            names.join(", ")
        )));
    }
    Ok(kept)
}

/// The traffic the flags ask for; a trace is read through to measure its length.
fn traffic(args: &ImportArgs) -> Result<Traffic, Failure> {
    let Some(trace) = &args.trace else {
        return Ok(Traffic::Poisson {
            duration: args.duration,
        });
    };
    let name = trace.to_string_lossy();
    let format = args.trace_format.clone().unwrap_or_else(|| {
        let bare = name.strip_suffix(".gz").unwrap_or(&name);
        if bare.ends_with(".csv") {
            "csv".to_string()
        } else if bare.ends_with(".jsonl") {
            "jsonl".to_string()
        } else {
            "combined".to_string()
        }
    });
    let duration = match args.duration {
        Some(d) => d,
        None => trace_length(trace, &format).map_err(input)?,
    };
    let path = match &args.out {
        Some(_) if trace.is_relative() => std::fs::canonicalize(trace)
            .with_context(|| format!("--trace {}", trace.display()))
            .map_err(input)?
            .to_string_lossy()
            .into_owned(),
        _ => name.into_owned(),
    };
    Ok(Traffic::Trace {
        path,
        format,
        key: args.key.clone(),
        duration,
    })
}

/// The whole seconds that hold every request of `trace` (its last instant, rounded up
/// past it), read as the imported scenario will read it.
fn trace_length(trace: &Path, format: &str) -> anyhow::Result<Nanos> {
    let format = TraceFormat::from_name(format).context("unknown trace format")?;
    let combined = format == TraceFormat::Combined;
    let options = TraceOptions {
        format,
        same_second: if combined {
            SameSecond::Spread
        } else {
            SameSecond::default()
        },
        reorder: if combined {
            Nanos::from_secs(2)
        } else {
            Nanos::ZERO
        },
        ..TraceOptions::default()
    };
    let mut reader = TraceReader::open_with(trace, &options)?;
    let mut last = None;
    while let Some(row) = reader.next_row()? {
        last = Some(row.time);
    }
    let last = last.with_context(|| format!("--trace {}: no requests in it", trace.display()))?;
    Ok(Nanos::from_secs(last.as_u64() / 1_000_000_000 + 1))
}
