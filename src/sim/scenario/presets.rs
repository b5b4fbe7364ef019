//! What a scenario's presets need from the scenario: the registry that builds them with
//! the scenario's parameters (`[preset.nginx]`, where t = 0 lies on the wall clock), the
//! notes a run prints about them (a limit a peer could only write rounded, a preset left
//! out) and the screen that leaves out, or refuses, a preset whose peer could not write
//! the scenario's limits. The presets themselves ([`crate::presets`]) know nothing of
//! scenarios.

use std::borrow::Cow;
use std::path::Path;

use super::{Scenario, ScenarioError, TrafficKind};
use crate::presets::{
    ALIGNED, EnvoyLocal, EpochOffset, Haproxy, Nginx, aligned_entries, nginx_entry, refusal,
};
use crate::registry::Registry;
use crate::rule::Rule;
use crate::sim::trace::TraceReader;

impl Scenario {
    /// The registry to build this scenario's algorithms from: `base`, with `nginx` built
    /// with the scenario's `[preset.nginx]` when it has one, and, when the scenario runs
    /// a preset whose peer reads the wall clock ([`ALIGNED`]), those presets built for
    /// where this run's t = 0 lies on it ([`Scenario::epoch_offset`]). Only then does it
    /// read anything: the head of each trace of absolute times without an `origin`, and
    /// a trace that cannot be read is that trace's error.
    pub fn registry<'r>(&self, base: &'r Registry) -> Result<Cow<'r, Registry>, ScenarioError> {
        let is_preset = |name: &str| base.entry(name).is_ok_and(|e| e.is_preset());
        let mut over = Vec::new();
        if let Some(params) = self.nginx
            && is_preset("nginx")
        {
            over.push(nginx_entry(params));
        }
        let aligned =
            (self.algorithms.iter()).any(|a| ALIGNED.contains(&a.as_str()) && is_preset(a));
        if aligned && let Some(origin) = self.epoch_offset()? {
            over.extend(
                aligned_entries(origin)
                    .into_iter()
                    .filter(|e| is_preset(e.name())),
            );
        }
        if over.is_empty() {
            return Ok(Cow::Borrowed(base));
        }
        let mut registry = base.clone();
        for entry in over {
            registry.add(entry);
        }
        Ok(Cow::Owned(registry))
    }

    /// Where this run's t = 0 lies on the wall clock, when a `trace` source has absolute
    /// times: that trace's `origin`, or else its earliest request's instant (read from
    /// the head of the file). `None` when no source has absolute times: generated
    /// traffic and `seconds` traces, whose t = 0 stands for an instant on every grid of
    /// the epoch. Two such traces whose t = 0 are different instants are an error: a
    /// run has one clock, and the traces are each replayed from their own t = 0.
    pub fn epoch_offset(&self) -> Result<Option<EpochOffset>, ScenarioError> {
        let mut found: Option<(i128, &Path)> = None;
        for spec in &self.traffic {
            let TrafficKind::Trace { path, options } = &spec.kind else {
                continue;
            };
            if !options.effective_time_format().is_absolute() {
                continue;
            }
            let at = match options.origin {
                Some(at) => Some(at),
                None => {
                    let mut reader = TraceReader::open_with(path, options)?;
                    reader.next_row()?;
                    reader.origin()
                }
            };
            match (at, found) {
                (Some(at), None) => found = Some((at, path)),
                (Some(at), Some((first, first_path))) if at != first => {
                    return Err(ScenarioError::file(
                        path,
                        format!(
                            "its t = 0 is not that of {}: each trace of absolute times is                              replayed from its own earliest request, and a preset whose                              peer reads the wall clock ({}) needs one t = 0 for the run;                              give every trace the same `origin`",
                            first_path.display(),
                            ALIGNED.join(", ")
                        ),
                    ));
                }
                _ => {}
            }
        }
        Ok(found.map(|(at, _)| EpochOffset::from_nanos(at)))
    }

    /// Every limit of the scenario, the first rule first.
    fn all_rules(&self) -> Vec<Rule> {
        std::iter::once(self.rule)
            .chain(self.extra_limits.iter().copied())
            .collect()
    }

    /// What a run should tell its user about its presets: a rule that a peer cannot
    /// write in its own units and was rounded (`nginx`'s `r/s` and `r/m`, HAProxy's and
    /// Envoy's milliseconds), a preset left out of the group `presets` because its peer
    /// would refuse the rule ([`Scenario::screen_presets`]), or one kept although it
    /// would.
    pub fn preset_notes(&self) -> Vec<String> {
        let rules = self.all_rules();
        let mut notes: Vec<String> = self
            .presets_left_out
            .iter()
            .filter_map(|name| {
                let why = rules.iter().find_map(|r| refusal(name, r))?;
                Some(format!("{name} left out of `presets`: {why}"))
            })
            .collect();
        for name in &self.algorithms {
            for rule in &rules {
                let note = match name.as_str() {
                    "nginx" => Nginx::new(*rule, self.nginx.unwrap_or_default()).rounding_note(),
                    "haproxy" => Haproxy::new(*rule).rounding_note(),
                    "envoy_local" => EnvoyLocal::new(*rule).interval_note(),
                    "envoy" => refusal("envoy", rule).map(|why| {
                        format!(
                            "{why}; modelled as an epoch-aligned window of {}",
                            rule.window()
                        )
                    }),
                    _ => None,
                };
                notes.extend(note.filter(|n| !notes.contains(n)));
            }
        }
        notes
    }

    /// Checks the presets against the limits once the algorithm list is set from
    /// `requested` (the names as written, groups unexpanded). A preset whose peer would
    /// refuse a limit ([`refusal`]) is an error when named on its own, and is left out
    /// (recorded in `presets_left_out`, which [`Scenario::preset_notes`] reports) when
    /// only the group `presets` brought it in.
    pub fn screen_presets<S: AsRef<str>>(&mut self, requested: &[S]) -> Result<(), String> {
        let rules = self.all_rules();
        let named = |n: &str| requested.iter().any(|r| r.as_ref().trim() == n);
        let mut left_out = Vec::new();
        for name in &self.algorithms {
            if let Some(why) = rules.iter().find_map(|r| refusal(name, r)) {
                if named(name) {
                    return Err(format!("{why} (leave {name} out, or change the limit)"));
                }
                left_out.push(name.clone());
            }
        }
        self.algorithms.retain(|a| !left_out.contains(a));
        self.presets_left_out = left_out;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Nanos;
    use std::path::Path;

    const SCENARIO: &str = r#"
name = "s"
duration = "10s"
algorithms = ["presets", "fixed_window"]
[limit]
max_requests = 5
window = "1s"
[[traffic]]
kind = "uniform"
rate = 1.0
"#;

    #[test]
    fn envoy_on_a_window_the_service_cannot_write_is_left_out_of_the_group_or_refused() {
        let ten = SCENARIO.replace("window = \"1s\"", "window = \"10s\"");
        let s = Scenario::parse(&ten, Path::new("s.toml")).unwrap();
        assert!(
            !s.algorithms.iter().any(|a| a == "envoy"),
            "{:?}",
            s.algorithms
        );
        assert!(s.algorithms.iter().any(|a| a == "envoy_local"));
        assert_eq!(s.presets_left_out, ["envoy"]);
        let notes = s.preset_notes();
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("envoy left out") && n.contains("10s")),
            "{notes:?}"
        );
        let named = ten.replace("[\"presets\", ", "[\"envoy\", ");
        let err = Scenario::parse(&named, Path::new("s.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("s.toml:4") && msg.contains("cannot limit per 10s"),
            "{msg}"
        );
        let mut s = s;
        s.set_rule(Rule::new(5, Nanos::from_secs(60)).unwrap())
            .unwrap();
        assert!(
            s.algorithms.iter().any(|a| a == "envoy"),
            "a new limit it can write"
        );
        assert!(s.presets_left_out.is_empty());
        let minute = ten.replace("\"10s\"", "\"1m\"");
        let s = Scenario::parse(
            &minute.replace("[\"presets\", ", "[\"envoy\", "),
            Path::new("s.toml"),
        );
        assert_eq!(s.unwrap().algorithms, ["envoy", "fixed_window"]);
    }

    #[test]
    fn envoy_local_under_50ms_is_refused_as_envoy_refuses_it() {
        let fast = SCENARIO.replace("window = \"1s\"", "window = \"20ms\"");
        let named = fast.replace("[\"presets\", ", "[\"envoy_local\", ");
        let err = Scenario::parse(&named, Path::new("s.toml")).unwrap_err();
        assert!(err.to_string().contains(">= 50ms"), "{err}");
        let s = Scenario::parse(&fast, Path::new("s.toml")).unwrap();
        assert_eq!(s.presets_left_out, ["envoy", "envoy_local"]);
    }

    /// HAProxy counts refused requests, so a key's earliest passing instant moves with
    /// each denial: the simulator must probe again rather than remember it (a debug
    /// run asserts every remembered answer), and still judge every advice exact.
    #[test]
    fn a_run_of_denials_that_count_is_probed_afresh_and_every_retry_after_is_exact() {
        use crate::sim::{self, NoopSink, RunOptions};
        let text = SCENARIO
            .replace(
                "[\"presets\", \"fixed_window\"]",
                "[\"haproxy\", \"limits_fixed_window\"]",
            )
            .replace(
                "kind = \"uniform\"\nrate = 1.0",
                "kind = \"uniform\"\nrate = 40.0",
            );
        let s = Scenario::parse(&text, Path::new("s.toml")).unwrap();
        let report = sim::run(&s, &RunOptions::default(), &mut |_| Ok(Box::new(NoopSink))).unwrap();
        let haproxy = &report.algorithms[0].metrics;
        assert!(haproxy.denied > 100, "{}", haproxy.denied);
        assert_eq!(haproxy.retry_after_exact, haproxy.denied);
    }
}
