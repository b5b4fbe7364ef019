//! Presets: the rate limiters people run, modelled decision for decision.
//!
//! A preset is an ordinary [`Algorithm`](crate::Algorithm) (exact integer math over a
//! per-key state) whose behaviour is that of a real limiter, rounding included, rather
//! than a textbook algorithm's: where its peer departs from the textbook (a millisecond
//! clock, a period floored to whole nanoseconds, a delay instead of a refusal) that
//! departure is the model. Each takes its parameters from the scenario's `[limit]`
//! (`max_requests` N, `window` W, `burst` B) as docs/presets.md says; `nginx` also reads
//! a scenario's `[preset.nginx]`. Presets live in [`Registry::standard`], after the six
//! built-ins; the group name `presets` selects every preset, as `all` selects the six.
//!
//! Each preset is checked against the real peer in a differential test
//! (`tests/preset_*.rs`, `tests/presets_*.rs`).
//!
//! [`Registry::standard`]: crate::Registry::standard

use crate::algorithm::BoxedAlgorithm;
use crate::registry::Entry;
use crate::rule::Rule;
use crate::time::Nanos;

mod envoy;
mod envoy_local;
mod governor;
mod haproxy;
mod limits;
mod nginx;
mod tower;

pub use envoy::{EnvoyRateLimit, EnvoyState, unit_of};
pub use envoy_local::{EnvoyLocal, EnvoyLocalState};
pub use governor::{Governor, GovernorState};
pub use haproxy::{Haproxy, HaproxyState};
pub use limits::{
    LimitsCounterState, LimitsFixedWindow, LimitsLogState, LimitsMovingWindow,
    LimitsSlidingWindowCounter, LimitsWindowState,
};
pub use nginx::{Nginx, NginxParams, NginxRate, NginxState};
pub use tower::{Tower, TowerState};

/// The group name that selects every preset (like `all` for the built-ins).
pub const GROUP: &str = "presets";

/// The registry entry of `nginx` with `limit_req` parameters `params` (a scenario's
/// `[preset.nginx]`; [`NginxParams::default`] without one).
pub fn nginx_entry(params: NginxParams) -> Entry {
    Entry::new(
        "nginx",
        "nginx limit_req: leaky bucket on a ms clock, excess in 1/1000 request; delays within burst unless nodelay.",
        move |r| BoxedAlgorithm::new(Nginx::new(r, params)),
    )
    .as_preset()
}

/// The registry entry of `tower`.
pub fn tower_entry() -> Entry {
    Entry::new(
        "tower",
        "tower RateLimit: window opens at the first call after the last ended; waits (delay), never refuses.",
        |r| BoxedAlgorithm::new(Tower::new(r)),
    )
    .as_preset()
}

/// What a run of `scenario` should tell its user about its presets: a rule that a
/// peer cannot write in its own units and was rounded (`nginx`'s `r/s` and `r/m`,
/// HAProxy's and Envoy's milliseconds), a preset left out of the group `presets`
/// because its peer would refuse the rule ([`screen`]), or one kept although it would.
#[cfg(feature = "cli")]
pub fn notes(scenario: &crate::sim::Scenario) -> Vec<String> {
    let rules: Vec<Rule> = std::iter::once(scenario.rule)
        .chain(scenario.extra_limits.iter().copied())
        .collect();
    let mut notes: Vec<String> = scenario
        .presets_left_out
        .iter()
        .filter_map(|name| {
            let why = rules.iter().find_map(|r| refusal(name, r))?;
            Some(format!("{name} left out of `presets`: {why}"))
        })
        .collect();
    for name in &scenario.algorithms {
        for rule in &rules {
            let note = match name.as_str() {
                "nginx" => Nginx::new(*rule, scenario.nginx.unwrap_or_default()).rounding_note(),
                "haproxy" => Haproxy::new(*rule).rounding_note(),
                "envoy_local" => EnvoyLocal::new(*rule).interval_note(),
                "envoy" => envoy::refusal(rule.window()).map(|why| {
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

/// Why preset `name` cannot stand for `rule`: its peer's configuration cannot say it
/// and the peer would refuse the nearest one. `None` when it can (perhaps rounded, which
/// the run's notes say).
pub fn refusal(name: &str, rule: &Rule) -> Option<String> {
    match name {
        "envoy" => envoy::refusal(rule.window()),
        "envoy_local" => (rule.window() < Nanos::from_millis(envoy_local::MIN_FILL_INTERVAL_MS))
            .then(|| EnvoyLocal::new(*rule).interval_note())
            .flatten(),
        _ => None,
    }
}

/// Checks `scenario`'s presets against its limits once its algorithm list is set from
/// `requested` (the names as written, groups unexpanded). A preset whose peer would
/// refuse a limit ([`refusal`]) is an error when named on its own, and is left out
/// (recorded in `presets_left_out`, which [`notes`] reports) when only the group
/// `presets` brought it in.
#[cfg(feature = "cli")]
pub fn screen<S: AsRef<str>>(
    requested: &[S],
    scenario: &mut crate::sim::Scenario,
) -> Result<(), String> {
    let rules: Vec<Rule> = std::iter::once(scenario.rule)
        .chain(scenario.extra_limits.iter().copied())
        .collect();
    let named = |n: &str| requested.iter().any(|r| r.as_ref().trim() == n);
    let mut left_out = Vec::new();
    for name in &scenario.algorithms {
        if let Some(why) = rules.iter().find_map(|r| refusal(name, r)) {
            if named(name) {
                return Err(format!("{why} (leave {name} out, or change the limit)"));
            }
            left_out.push(name.clone());
        }
    }
    scenario.algorithms.retain(|a| !left_out.contains(a));
    scenario.presets_left_out = left_out;
    Ok(())
}

/// Every preset, as registry entries in display order (`nginx` with its default
/// `limit_req` parameters).
pub(crate) fn entries() -> Vec<Entry> {
    vec![
        nginx_entry(NginxParams::default()),
        tower_entry(),
        Entry::new(
            "governor",
            "governor 0.10's GCRA: period floor(W/N) ns, so waits run short and a window can hold one more.",
            |r| BoxedAlgorithm::new(Governor::new(r)),
        )
        .with_burst()
        .as_preset(),
        Entry::new(
            "limits_fixed_window",
            "Python limits 5.x fixed window: starts at the key's first hit, and denied hits are counted too.",
            |r| BoxedAlgorithm::new(LimitsFixedWindow::new(r)),
        )
        .counting_denials()
        .as_preset(),
        Entry::new(
            "limits_moving_window",
            "Python limits 5.x moving window: a log over the closed interval [t - W, t], one ns stricter.",
            |r| BoxedAlgorithm::new(LimitsMovingWindow::new(r)),
        )
        .as_preset(),
        Entry::new(
            "limits_sliding_window_counter",
            "Python limits 5.x counter: floor(estimate) + cost <= N; double-counts before the first window ends.",
            |r| BoxedAlgorithm::new(LimitsSlidingWindowCounter::new(r)),
        )
        .as_preset(),
        Entry::new(
            "haproxy",
            "HAProxy http_req_rate: this period plus the last weighted by what is left (ms ticks); refusals count.",
            |r| BoxedAlgorithm::new(Haproxy::new(r)),
        )
        .counting_denials()
        .as_preset(),
        Entry::new(
            "envoy",
            "envoyproxy/ratelimit: a window of W aligned to the epoch; refused requests are counted too.",
            |r| BoxedAlgorithm::new(EnvoyRateLimit::new(r)),
        )
        .counting_denials()
        .as_preset(),
        Entry::new(
            "envoy_local",
            "Envoy local_ratelimit (timer): N tokens added every W on a fixed timer, up to B; no refill between.",
            |r| BoxedAlgorithm::new(EnvoyLocal::new(r)),
        )
        .with_burst()
        .as_preset(),
    ]
}

#[cfg(all(test, feature = "cli"))]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::sim::Scenario;
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
    fn the_presets_group_names_the_presets_and_all_keeps_the_six() {
        let s = Scenario::parse(SCENARIO, Path::new("s.toml")).unwrap();
        let presets = [
            "nginx",
            "tower",
            "governor",
            "limits_fixed_window",
            "limits_moving_window",
            "limits_sliding_window_counter",
            "haproxy",
            "envoy",
            "envoy_local",
        ];
        assert_eq!(s.algorithms[..presets.len()], presets);
        assert_eq!(s.algorithms[presets.len()..], ["fixed_window"]);
        let all = Registry::standard().resolve(&["all"]).unwrap();
        assert_eq!(all.len(), 6);
        assert!(!all.iter().any(|n| n == "nginx" || n == "tower"));
        assert_eq!(s.nginx, None);
    }

    #[test]
    fn a_preset_nginx_table_sets_limit_req_parameters_for_the_run() {
        let text = format!("{SCENARIO}[preset.nginx]\nburst = 3\nnodelay = true\n");
        let s = Scenario::parse(&text, Path::new("s.toml")).unwrap();
        let params = NginxParams {
            burst: 3,
            nodelay: true,
            delay: 0,
        };
        assert_eq!(s.nginx, Some(params));
        let registry = s.registry(Registry::standard());
        let nginx = registry.create("nginx", s.rule).unwrap();
        use crate::Algorithm;
        assert_eq!(nginx.capacity(), 4, "burst 3 + the free first request");
        let plain = Registry::standard().create("nginx", s.rule).unwrap();
        assert_eq!(plain.capacity(), 1, "nginx's default burst is 0");
    }

    #[test]
    fn a_rate_nginx_cannot_write_is_rounded_and_the_run_is_told() {
        let s = Scenario::parse(SCENARIO, Path::new("s.toml")).unwrap();
        assert!(notes(&s).is_empty(), "5 per 1s is 5r/s");
        let odd = SCENARIO.replace("window = \"1s\"", "window = \"13s\"");
        let s = Scenario::parse(&odd, Path::new("s.toml")).unwrap();
        let notes: Vec<String> = notes(&s)
            .into_iter()
            .filter(|n| n.starts_with("nginx"))
            .collect();
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("rate=23r/m"), "{}", notes[0]);
    }

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
        let notes = notes(&s);
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

    #[test]
    fn an_unknown_preset_key_is_an_error_at_its_line() {
        let text = format!("{SCENARIO}[preset.nginx]\nburts = 3\n");
        let err = Scenario::parse(&text, Path::new("s.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("burts") && msg.contains("s.toml:12"), "{msg}");
    }
}
