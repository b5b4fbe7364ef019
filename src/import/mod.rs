//! `ratesim import`: reading the rate limits of a real nginx, HAProxy or Envoy config
//! and writing each one as a scenario that runs the matching preset.
//!
//! One parser per config kind (`nginx.rs`, `haproxy.rs`, `envoy.rs` for both of Envoy's
//! YAML kinds, over the line-keeping tree of `yaml.rs`) turns the text into
//! [`ImportedLimit`]s: a preset name, the scenario's `[limit]` and, for nginx, its
//! `[preset.nginx]` table. [`render`] writes one as scenario TOML. Nothing here reads
//! a trace, builds a [`Scenario`](crate::sim::Scenario) or runs anything: a directive
//! the presets cannot model is an [`ImportError`] or a [`Warning`] at its `file:line`,
//! never a silent guess.

mod envoy;
mod haproxy;
mod nginx;
mod scenario;
mod yaml;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::time::Nanos;
pub use scenario::{Traffic, render};

/// The kinds of config `ratesim import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKind {
    /// An nginx config: `limit_req_zone` and `limit_req`.
    Nginx,
    /// An HAProxy config: a stick table storing `http_req_rate(period)` and the rule
    /// that denies on it.
    Haproxy,
    /// The envoyproxy/ratelimit service's YAML: a domain and its descriptors.
    Envoy,
    /// Envoy's local rate limit filter (`token_bucket`), anywhere in an Envoy config.
    EnvoyLocal,
}

impl ConfigKind {
    /// Every kind, in the order `--kind` lists them.
    pub const ALL: [ConfigKind; 4] = [
        ConfigKind::Nginx,
        ConfigKind::Haproxy,
        ConfigKind::Envoy,
        ConfigKind::EnvoyLocal,
    ];

    /// The kind's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ConfigKind::Nginx => "nginx",
            ConfigKind::Haproxy => "haproxy",
            ConfigKind::Envoy => "envoy",
            ConfigKind::EnvoyLocal => "envoy-local",
        }
    }

    /// Tells the kind of `text` from the directives it holds, or `None` when it holds
    /// the marks of no kind or of several (then the user names it).
    pub fn detect(text: &str) -> Option<ConfigKind> {
        let code: String = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let found: Vec<ConfigKind> = [
            (ConfigKind::Nginx, code.contains("limit_req")),
            (
                ConfigKind::Haproxy,
                code.contains("stick-table") || code.contains("http_req_rate"),
            ),
            (
                ConfigKind::Envoy,
                code.contains("requests_per_unit") && code.contains("descriptors"),
            ),
            (ConfigKind::EnvoyLocal, code.contains("token_bucket")),
        ]
        .into_iter()
        .filter_map(|(kind, marked)| marked.then_some(kind))
        .collect();
        match found.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }
}

impl fmt::Display for ConfigKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `[preset.nginx]`: what `limit_req` adds to the zone's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NginxOptions {
    /// `burst=` (nginx's default 0).
    pub burst: u64,
    /// `nodelay`: requests inside the burst pass at once instead of being delayed.
    pub nodelay: bool,
    /// `delay=` (nginx's default 0).
    pub delay: u64,
}

/// One rate limit found in a config: the scenario it becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedLimit {
    /// The scenario's name (letters, digits, `.`, `_`, `-`), unique in one import.
    pub name: String,
    /// The preset that models the peer (`nginx`, `haproxy`, `envoy`, `envoy_local`).
    pub preset: &'static str,
    /// `[limit].max_requests`.
    pub max_requests: u64,
    /// `[limit].window`.
    pub window: Nanos,
    /// `[limit].burst`, only where the preset reads it (`envoy_local`'s `max_tokens`).
    pub burst: Option<u64>,
    /// `[preset.nginx]`, for the `nginx` preset.
    pub nginx: Option<NginxOptions>,
    /// The combined-log field that stands for the peer's key (`ip` for nginx's
    /// `$binary_remote_addr` or HAProxy's `src`), when there is one.
    pub key: Option<&'static str>,
    /// Where it came from: `(line, what)`, one per directive read.
    pub sources: Vec<(usize, String)>,
}

/// Something imported with a caveat the user must see (it is printed on stderr and
/// kept as a comment in the scenario).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// 1-based line in the config.
    pub line: usize,
    /// What was not modelled, and what the import did instead.
    pub message: String,
}

/// Everything one config gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The kind it was read as.
    pub kind: ConfigKind,
    /// One per zone / table / descriptor / token bucket, in the config's order.
    pub limits: Vec<ImportedLimit>,
    /// Caveats, in the config's order.
    pub warnings: Vec<Warning>,
}

impl Imported {
    /// The warnings that concern `limit`: those at its own lines, and those at lines no
    /// imported limit comes from (they concern the whole file).
    pub fn warnings_for(&self, limit: &ImportedLimit) -> Vec<Warning> {
        let of = |l: &ImportedLimit, line: usize| l.sources.iter().any(|(at, _)| *at == line);
        self.warnings
            .iter()
            .filter(|w| of(limit, w.line) || !self.limits.iter().any(|l| of(l, w.line)))
            .cloned()
            .collect()
    }
}

/// A config that cannot be imported. Displays as `file:line: message` (or
/// `file: message` when no line is to blame).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", .path.display(), .line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ImportError {
    /// The config file.
    pub path: PathBuf,
    /// 1-based line, when one line is to blame.
    pub line: Option<usize>,
    /// What was expected, and what was found.
    pub message: String,
}

/// A parser's error before the file's path is attached.
#[derive(Debug)]
pub(crate) struct Fault {
    line: Option<usize>,
    message: String,
}

impl Fault {
    fn at(line: usize, message: impl Into<String>) -> Fault {
        Fault {
            line: Some(line),
            message: message.into(),
        }
    }

    fn whole(message: impl Into<String>) -> Fault {
        Fault {
            line: None,
            message: message.into(),
        }
    }
}

/// What a parser returns: the limits and the warnings.
type Parsed = Result<(Vec<ImportedLimit>, Vec<Warning>), Fault>;

/// Reads the config at `path` as `kind` (or the kind [`ConfigKind::detect`] finds).
pub fn import_file(path: &Path, kind: Option<ConfigKind>) -> Result<Imported, ImportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ImportError {
        path: path.to_path_buf(),
        line: None,
        message: format!("cannot read config: {e}"),
    })?;
    import_str(&text, path, kind)
}

/// Reads config `text` (from `path`, which names it in errors) as `kind`, or the kind
/// [`ConfigKind::detect`] finds.
pub fn import_str(
    text: &str,
    path: &Path,
    kind: Option<ConfigKind>,
) -> Result<Imported, ImportError> {
    let error = |f: Fault| ImportError {
        path: path.to_path_buf(),
        line: f.line,
        message: f.message,
    };
    let kind = kind.or_else(|| ConfigKind::detect(text)).ok_or_else(|| {
        error(Fault::whole(
            "cannot tell which kind of config this is (no limit_req, stick-table, \
             requests_per_unit or token_bucket found, or several of them); name it with \
             --kind nginx|haproxy|envoy|envoy-local",
        ))
    })?;
    let (limits, warnings) = match kind {
        ConfigKind::Nginx => nginx::parse(text),
        ConfigKind::Haproxy => haproxy::parse(text),
        ConfigKind::Envoy => envoy::parse_service(text),
        ConfigKind::EnvoyLocal => envoy::parse_local(text),
    }
    .map_err(error)?;
    if limits.is_empty() {
        return Err(error(Fault::whole(format!(
            "no rate limit found to import as {kind}{}",
            match warnings.first() {
                Some(w) => format!(" (line {}: {})", w.line, w.message),
                None => String::new(),
            }
        ))));
    }
    Ok(Imported {
        kind,
        limits: unique_names(limits),
        warnings,
    })
}

/// Makes each name a safe scenario name (anything but letters, digits, `.`, `_`, `-`
/// becomes `_`) and unique (`name_2`, `name_3`, … in order).
fn unique_names(mut limits: Vec<ImportedLimit>) -> Vec<ImportedLimit> {
    let mut seen: Vec<String> = Vec::new();
    for limit in &mut limits {
        let mut base: String = limit
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if base.is_empty() || base.chars().all(|c| c == '.') {
            base = limit.preset.to_string();
        }
        let mut name = base.clone();
        let mut n = 2;
        while seen.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        seen.push(name.clone());
        limit.name = name;
    }
    limits
}
