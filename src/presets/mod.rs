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

mod envoy;
mod governor;
mod limits;
mod nginx;
mod tower;

pub use envoy::{EnvoyRateLimit, EnvoyState};
pub use governor::{Governor, GovernorState};
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

/// What a run of `scenario` should tell its user about its presets: a rule that
/// `nginx` cannot write in its own units (`r/s`, `r/m`) and was rounded.
#[cfg(feature = "cli")]
pub fn notes(scenario: &crate::sim::Scenario) -> Vec<String> {
    if !scenario.algorithms.iter().any(|a| a == "nginx") {
        return Vec::new();
    }
    let params = scenario.nginx.unwrap_or_default();
    std::iter::once(&scenario.rule)
        .chain(&scenario.extra_limits)
        .filter_map(|rule| Nginx::new(*rule, params).rounding_note())
        .collect()
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
            "envoy",
            "envoyproxy/ratelimit: a window of W aligned to the epoch; refused requests are counted too.",
            |r| BoxedAlgorithm::new(EnvoyRateLimit::new(r)),
        )
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
        let mut expected: Vec<String> = entries().iter().map(|e| e.name().to_string()).collect();
        assert_eq!(&expected[..2], ["nginx", "tower"]);
        expected.push("fixed_window".into());
        assert_eq!(s.algorithms, expected);
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
        let notes = notes(&s);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("rate=23r/m"), "{}", notes[0]);
    }

    #[test]
    fn an_unknown_preset_key_is_an_error_at_its_line() {
        let text = format!("{SCENARIO}[preset.nginx]\nburts = 3\n");
        let err = Scenario::parse(&text, Path::new("s.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("burts") && msg.contains("s.toml:12"), "{msg}");
    }
}
