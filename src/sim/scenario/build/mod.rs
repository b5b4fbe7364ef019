//! Validation and building: the raw schema, checked field by field, becomes a
//! [`Scenario`] with every default filled in.
//!
//! Each check reports the first problem at the position of the value to change. The
//! scenario-wide parts (name, duration, limits, algorithms, client) are here; the
//! `[[traffic]]` sources are built in [`sources`]. Nothing here reads a file or
//! generates traffic.

mod deployment;
mod sources;
mod trace;

use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use super::raw::{RawClient, RawLimit, RawScenario};
use super::{ClientModel, Scenario, ScenarioError};
use crate::presets::NginxParams;
use crate::registry::Registry;
use crate::rule::Rule;
use crate::time::Nanos;

/// Builds the [`Scenario`] that `raw` describes; `text` is the file's text (for
/// positions) and `origin` its path.
pub(super) fn build(
    raw: RawScenario,
    text: &str,
    origin: &Path,
    registry: &Registry,
) -> Result<Scenario, ScenarioError> {
    Builder {
        text,
        origin,
        registry,
    }
    .build(raw)
}

/// Turns the raw schema into a [`Scenario`], reporting the first problem found.
pub(super) struct Builder<'a> {
    text: &'a str,
    /// The scenario file: named in errors, and the folder trace paths resolve against.
    origin: &'a Path,
    /// The algorithms the scenario may name.
    registry: &'a Registry,
}

impl Builder<'_> {
    /// An error at `span` of the scenario's text.
    fn err(&self, span: Range<usize>, message: impl Into<String>) -> ScenarioError {
        ScenarioError::at(self.origin, self.text, Some(span), message.into())
    }

    fn build(&self, raw: RawScenario) -> Result<Scenario, ScenarioError> {
        let name = self.name(&raw.name)?;
        let duration = raw.duration.get_ref().0;
        if duration == Nanos::ZERO {
            return Err(self.err(raw.duration.span(), "expected a duration above zero"));
        }
        let mut limits = raw
            .limit
            .0
            .iter()
            .map(|l| self.rule(l))
            .collect::<Result<Vec<_>, _>>()?;
        let rule = limits.remove(0);
        let extra_limits = limits;
        let algorithms = match &raw.algorithms {
            None => self.registry.resolve(&["all"]).unwrap_or_default(),
            Some(list) => self.algorithms(list)?,
        };
        if raw.traffic.get_ref().is_empty() {
            return Err(self.err(
                raw.traffic.span(),
                "expected at least one [[traffic]] source",
            ));
        }
        let traffic = raw
            .traffic
            .get_ref()
            .iter()
            .map(|t| self.traffic(t, &rule, duration))
            .collect::<Result<Vec<_>, _>>()?;
        let client = match &raw.client {
            None => ClientModel::Open,
            Some(c) => self.client(c)?,
        };
        let deployment = match &raw.deployment {
            None => None,
            Some(d) => Some(self.deployment(d, &rule)?),
        };
        let mut scenario = Scenario {
            name,
            description: raw.description.trim().to_string(),
            seed: raw.seed.0,
            duration,
            rule,
            extra_limits,
            algorithms,
            traffic,
            client,
            deployment,
            path: self.origin.to_path_buf(),
            chart_key: None,
            nginx: raw.preset.and_then(|p| p.nginx).map(|n| NginxParams {
                burst: n.burst.map_or(0, |b| b.0),
                nodelay: n.nodelay.unwrap_or(false),
                delay: n.delay.map_or(0, |d| d.0),
            }),
            presets_left_out: Vec::new(),
        };
        if let Some(list) = &raw.algorithms {
            let names: Vec<&str> = list
                .get_ref()
                .iter()
                .map(|n| n.get_ref().as_str())
                .collect();
            scenario
                .screen_presets(&names)
                .map_err(|e| self.err(list.span(), e))?;
        }
        Ok(scenario)
    }

    /// The scenario's name, trimmed. It becomes a folder under output/: one path
    /// segment, nothing that could climb out of it or replace an absolute path.
    fn name(&self, raw: &Spanned<String>) -> Result<String, ScenarioError> {
        let name = raw.get_ref().trim().to_string();
        let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        let folder = "it names the output folder (output/<name>)";
        let why = match name.as_str() {
            "" => "empty name; expected letters, digits, '.', '_' and '-' (it names the output \
                   folder, output/<name>)"
                .to_string(),
            "." => format!("`.` cannot be a name: {folder}, and `.` means the current folder"),
            ".." => format!("`..` cannot be a name: {folder}, and `..` means the parent folder"),
            _ if !name.chars().all(safe) => format!(
                "`{name}` cannot be a name: {folder}, so it may hold only letters, digits, \
                 '.', '_' and '-'"
            ),
            _ => return Ok(name),
        };
        Err(self.err(raw.span(), why))
    }

    fn rule(&self, raw: &RawLimit) -> Result<Rule, ScenarioError> {
        let rule =
            Rule::new(raw.max_requests.get_ref().0, raw.window.get_ref().0).map_err(|e| {
                let span = match e {
                    crate::RuleError::ZeroWindow => raw.window.span(),
                    _ => raw.max_requests.span(),
                };
                self.err(span, format!("{e}"))
            })?;
        match &raw.burst {
            None => Ok(rule),
            Some(b) => rule
                .with_burst(b.get_ref().0)
                .map_err(|e| self.err(b.span(), e.to_string())),
        }
    }

    fn algorithms(
        &self,
        list: &Spanned<Vec<Spanned<String>>>,
    ) -> Result<Vec<String>, ScenarioError> {
        if list.get_ref().is_empty() {
            return Err(self.err(
                list.span(),
                "expected at least one algorithm name, or [\"all\"]",
            ));
        }
        // Resolve name by name so an unknown one is reported at its own position;
        // `all` expands in place and repeats are dropped, keeping the first.
        let mut resolved: Vec<String> = Vec::new();
        for name in list.get_ref() {
            let expanded = (self.registry)
                .resolve(&[name.get_ref()])
                .map_err(|e| self.err(name.span(), e.to_string()))?;
            for n in expanded {
                if !resolved.contains(&n) {
                    resolved.push(n);
                }
            }
        }
        Ok(resolved)
    }

    fn client(&self, raw: &RawClient) -> Result<ClientModel, ScenarioError> {
        let kind = raw.kind.as_ref().map_or("open", |k| k.get_ref().as_str());
        match kind {
            "open" => {
                if let Some(m) = &raw.max_retries {
                    return Err(
                        self.err(m.span(), "`max_retries` applies only to kind = \"retry\"")
                    );
                }
                if let Some(j) = &raw.jitter {
                    return Err(self.err(j.span(), "`jitter` applies only to kind = \"retry\""));
                }
                Ok(ClientModel::Open)
            }
            "retry" => Ok(ClientModel::Retry {
                max_retries: raw.max_retries.as_ref().map_or(3, |m| {
                    // Whole<u32::MAX> holds at most u32::MAX.
                    u32::try_from(m.get_ref().0).unwrap_or(u32::MAX)
                }),
                jitter: raw.jitter.as_ref().map_or(Nanos::ZERO, |j| j.get_ref().0),
            }),
            other => Err(self.err(
                raw.kind.as_ref().map(|k| k.span()).unwrap_or_default(),
                format!("unknown client kind `{other}`; expected \"open\" or \"retry\""),
            )),
        }
    }
}
