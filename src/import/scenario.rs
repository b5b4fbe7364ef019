//! Writing one [`ImportedLimit`] as scenario TOML: `algorithms = ["<preset>"]`,
//! `[limit]` (with `burst` where the preset reads it), `[preset.nginx]` for nginx, and
//! the traffic: Poisson arrivals at twice the limit, or a trace to replay.
//!
//! The text starts with comments saying where each value came from (file:line and the
//! directive) and every warning, so a scenario read later still tells its origin.

use std::fmt::Write;
use std::path::Path;

use super::{ImportedLimit, Warning};
use crate::time::Nanos;

/// The traffic an imported scenario runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Traffic {
    /// Ten clients, each sending Poisson arrivals at twice the limit's rate, for
    /// `duration` (default: ten windows).
    Poisson {
        /// How long to simulate; `None` for ten windows.
        duration: Option<Nanos>,
    },
    /// A log replayed as it was recorded.
    Trace {
        /// The trace's path as the scenario writes it (relative paths resolve against
        /// the scenario file's folder).
        path: String,
        /// The trace format's name (`combined`, `csv`, `jsonl`).
        format: String,
        /// The key field; `None` for the limit's own (or the format's default).
        key: Option<String>,
        /// How long to simulate.
        duration: Nanos,
    },
}

/// The scenario TOML for `limit`, read from `config`; `warnings` are kept as comments.
pub fn render(
    limit: &ImportedLimit,
    traffic: &Traffic,
    config: &Path,
    warnings: &[Warning],
) -> String {
    let mut t = String::new();
    let file = config.display().to_string();
    let _ = writeln!(
        t,
        "# Imported by `ratesim import` from {}:",
        one_line(&file)
    );
    for (line, what) in &limit.sources {
        let _ = writeln!(t, "#   line {line}: {}", one_line(what));
    }
    if !warnings.is_empty() {
        t.push_str("# Warnings:\n");
        for w in warnings {
            let _ = writeln!(t, "#   line {}: {}", w.line, one_line(&w.message));
        }
    }
    let window = duration_text(limit.window);
    let description = format!(
        "The {} preset for `{}` from {}: {} requests per {}{}.",
        limit.preset,
        limit.name,
        config
            .file_name()
            .map_or(file.clone(), |f| f.to_string_lossy().into_owned()),
        limit.max_requests,
        window,
        match (limit.burst, limit.nginx) {
            (_, Some(n)) => format!(
                ", burst={}{}",
                n.burst,
                if n.nodelay {
                    " nodelay".to_string()
                } else if n.delay > 0 {
                    format!(" delay={}", n.delay)
                } else {
                    String::new()
                }
            ),
            (Some(b), None) => format!(", burst {b}"),
            (None, None) => String::new(),
        },
    );
    let duration = match traffic {
        Traffic::Poisson { duration } => duration.unwrap_or(Nanos::saturating_from_u128(
            limit.window.as_u64() as u128 * 10,
        )),
        Traffic::Trace { duration, .. } => *duration,
    };
    let _ = writeln!(t, "name = {}", quoted(&limit.name));
    let _ = writeln!(t, "description = {}", quoted(&description));
    t.push_str("seed = 0\n");
    let _ = writeln!(t, "duration = {}", quoted(&duration_text(duration)));
    let _ = writeln!(t, "algorithms = [{}]", quoted(limit.preset));
    t.push_str("\n[limit]\n");
    let _ = writeln!(t, "max_requests = {}", limit.max_requests);
    let _ = writeln!(t, "window = {}", quoted(&window));
    if let Some(burst) = limit.burst {
        let _ = writeln!(t, "burst = {burst}");
    }
    if let Some(n) = limit.nginx {
        t.push_str("\n# limit_req's own parameters ([limit].burst is not read by nginx).\n");
        t.push_str("[preset.nginx]\n");
        let _ = writeln!(t, "burst = {}", n.burst);
        let _ = writeln!(t, "nodelay = {}", n.nodelay);
        let _ = writeln!(t, "delay = {}", n.delay);
    }
    t.push_str("\n[[traffic]]\n");
    match traffic {
        Traffic::Poisson { .. } => {
            t.push_str("# No log given (--trace): ten clients at twice the limit's rate.\n");
            t.push_str("kind = \"poisson\"\nrate = \"2x\"\nkeys = 10\n");
        }
        Traffic::Trace {
            path, format, key, ..
        } => {
            t.push_str("kind = \"trace\"\n");
            let _ = writeln!(t, "path = {}", quoted(path));
            let _ = writeln!(t, "format = {}", quoted(format));
            let key = key
                .as_deref()
                .or(limit.key.filter(|_| format == "combined"));
            if let Some(key) = key {
                let _ = writeln!(t, "key = {}", quoted(key));
            }
            if format == "combined" {
                t.push_str(
                    "# A combined log has whole seconds: spread each second's requests over \
                     it;\n# lines are written when responses end, so allow 2s of disorder.\n",
                );
                t.push_str("same_second = \"spread\"\nreorder = \"2s\"\n");
            }
        }
    }
    t
}

/// A TOML basic string holding `text`.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// `text` with line breaks replaced, for a comment.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// A duration as a scenario writes it: exact decimal seconds (`1s`, `0.5s`, `60s`).
pub(crate) fn duration_text(d: Nanos) -> String {
    format!("{}s", d.to_decimal_secs())
}
