//! An algorithm registered from outside the crate reaches every layer: a scenario names
//! it, `sim::run` runs it, the summary, the CSVs and the window chart show it under its
//! registered name and colour, `list` describes it and the worst-case search checks the
//! bound it was registered with. This is the seed's `RateLimiterFactory.register`,
//! carried all the way through.

use std::path::Path;

use ratesim::registry::Entry;
use ratesim::report::charts::{algorithm_color, render_window_counts_rgb};
use ratesim::report::run::window_count_chart;
use ratesim::report::{self, DecisionParts, TableOptions, WriteOptions};
use ratesim::sim::calibrate::calibrate;
use ratesim::sim::worst_case::{SearchOptions, search};
use ratesim::sim::{self, DecisionSink, RunOptions, Scenario};
use ratesim::{Algorithm, BoxedAlgorithm, Nanos, Registry, Rule};

/// A fixed window with an off-by-one bug: it admits `max_requests + 1` per window.
/// Deliberately leaky, so the simulator has something to catch.
#[derive(Debug, Clone)]
struct OffByOne {
    rule: Rule,
}

/// Which aligned window the state counts, and how much it admitted there.
#[derive(Debug, Clone, Default)]
struct Count {
    window: u64,
    admitted: u64,
}

impl OffByOne {
    fn quota(&self) -> u64 {
        self.rule.max_requests() + 1
    }

    /// The count at `now`: zero once `now` is in a later window.
    fn count(&self, state: &Count, now: Nanos) -> (u64, u64) {
        let window = now.as_u64() / self.rule.window().as_u64();
        if window > state.window {
            (window, 0)
        } else {
            (state.window, state.admitted)
        }
    }
}

impl Algorithm for OffByOne {
    type State = Count;

    fn name(&self) -> &str {
        "off_by_one" // what the type calls itself; the run reports the registered name
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.quota()
    }

    fn new_state(&self, _now: Nanos) -> Count {
        Count::default()
    }

    fn try_acquire(&self, state: &mut Count, now: Nanos, cost: u64) -> bool {
        let (window, admitted) = self.count(state, now);
        let allowed = admitted + cost <= self.quota();
        *state = Count {
            window,
            admitted: if allowed { admitted + cost } else { admitted },
        };
        allowed
    }

    fn remaining(&self, state: &Count, now: Nanos) -> u64 {
        self.quota() - self.count(state, now).1
    }

    fn retry_after(&self, state: &Count, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost > self.quota() {
            return None;
        }
        let (window, admitted) = self.count(state, now);
        if admitted + cost <= self.quota() {
            return Some(Nanos::ZERO);
        }
        let next = (window + 1) * self.rule.window().as_u64();
        Some(Nanos::new(next.saturating_sub(now.as_u64())))
    }

    fn reset_after(&self, state: &Count, now: Nanos) -> Nanos {
        match self.count(state, now).1 {
            0 => Nanos::ZERO,
            _ => self
                .retry_after(state, now, self.quota())
                .unwrap_or(Nanos::ZERO),
        }
    }
}

const NAME: &str = "fixed_window_plus_one";

fn registry() -> Registry {
    let mut registry = Registry::default();
    registry.add(
        Entry::new(
            NAME,
            "A fixed window that admits one request too many (a test's deliberate bug).",
            |rule| BoxedAlgorithm::new(OffByOne { rule }),
        )
        .with_worst_case("2N + 2", |rule: &Rule| 2 * rule.max_requests() + 2),
    );
    registry
}

/// 5 per 10 s; one client asking every 500 ms for a minute: 20 requests a window.
const SCENARIO: &str = r#"
    name = "plugin"
    duration = "60s"
    algorithms = ["fixed_window_plus_one", "sliding_window_log"]
    [limit]
    max_requests = 5
    window = "10s"
    [[traffic]]
    kind = "uniform"
    rate = 2
"#;

#[test]
fn a_registered_algorithm_runs_through_the_simulator_the_reports_and_a_chart() {
    let registry = registry();
    let scenario = Scenario::parse_with(SCENARIO, Path::new("plugin.toml"), &registry).unwrap();
    assert_eq!(scenario.algorithms, [NAME, "sliding_window_log"]);

    let dir = tempfile::tempdir().unwrap();
    let mut parts = DecisionParts::new(dir.path());
    let options = RunOptions {
        registry: &registry,
        ..RunOptions::default()
    };
    let mut sinks = |_: &str| -> std::io::Result<Box<dyn DecisionSink>> { parts.sink() };
    let run = sim::run(&scenario, &options, &mut sinks).unwrap();
    parts.finish().unwrap();

    // The simulator measured the bug: 6 of every window's 20 requests, against 5.
    let plugin = &run.algorithms[0];
    assert_eq!(plugin.name, NAME, "reported under its registered name");
    assert_eq!(plugin.metrics.allowed, 36);
    assert_eq!(plugin.metrics.max_in_window, 6);
    assert_eq!(plugin.metrics.over_admission, 1.2);
    assert!(plugin.metrics.excess > 0, "{:?}", plugin.metrics);
    assert!(
        plugin.metrics.false_allow.is_some_and(|n| n > 0),
        "compared with the sliding log: {:?}",
        plugin.metrics
    );
    assert_eq!(run.algorithms[1].metrics.max_in_window, 5);

    // The summary and every CSV carry it.
    let written = report::write_run(
        &run,
        dir.path(),
        WriteOptions {
            charts: true,
            registry: &registry,
            metadata: None,
            decisions: None,
            chart_format: Default::default(),
        },
    )
    .unwrap();
    let read = |file: &str| std::fs::read_to_string(dir.path().join(file)).unwrap();
    let decisions = read("decisions.csv");
    let plugin_rows = decisions.lines().filter(|l| l.starts_with(NAME)).count();
    assert_eq!(plugin_rows, 120, "one row per request");
    let summary = read("summary.csv");
    let row = summary.lines().find(|l| l.starts_with(NAME)).unwrap();
    assert!(row.starts_with(&format!("{NAME},120,120,36,84,")), "{row}");
    assert!(read("summary.json").contains(&format!("\"algorithm\": \"{NAME}\"")));
    assert!(
        read("window_counts.csv")
            .lines()
            .any(|l| l.starts_with(NAME))
    );
    let table = report::render_summary_table(&report::summary_rows(&run), TableOptions::plain());
    assert!(table.contains(NAME) && table.contains("1.20×"), "{table}");

    // The chart draws it in the colour after the six built-ins' (its place in the
    // registry), a colour no built-in has.
    assert!(written.iter().any(|p| p.ends_with("window_counts.png")));
    assert_eq!(registry.position(NAME), Some(6));
    let chart = window_count_chart(&run, &registry);
    let image = render_window_counts_rgb(&chart).unwrap();
    let colour = algorithm_color(6);
    let drawn = image
        .pixels
        .chunks_exact(3)
        .filter(|p| (p[0], p[1], p[2]) == (colour.0, colour.1, colour.2))
        .count();
    assert!(drawn > 100, "{drawn} pixels of its colour");
    for builtin in 0..6 {
        assert_ne!(algorithm_color(builtin), colour);
    }
}

#[test]
fn list_describes_it_and_the_worst_case_search_reaches_its_registered_bound() {
    let registry = registry();
    let listing = report::render_listing(&registry, &[], None);
    let line = listing
        .lines()
        .find(|l| l.trim_start().starts_with(NAME))
        .unwrap_or_else(|| panic!("{listing}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words[..6], [NAME, "2N", "+", "2", "A", "fixed"], "{line}");
    let rule = Rule::new(5, Nanos::from_secs(10)).unwrap();
    let case = search(&registry, NAME, rule, SearchOptions::default()).unwrap();
    assert_eq!(case.analytic, Some(12));
    assert_eq!(
        case.max_in_window, 12,
        "a full quota each side of a boundary"
    );
}

/// A name registered over a built-in replaces it everywhere: the engine must run the
/// caller's algorithm, not its own monomorphised copy of the built-in.
#[test]
fn registering_over_a_built_in_name_runs_the_new_algorithm() {
    let mut registry = Registry::default();
    registry.register("fixed_window", "replaced", |rule| {
        BoxedAlgorithm::new(OffByOne { rule })
    });
    let text = SCENARIO.replace(NAME, "fixed_window");
    let scenario = Scenario::parse_with(&text, Path::new("plugin.toml"), &registry).unwrap();
    let options = RunOptions {
        registry: &registry,
        ..RunOptions::default()
    };
    let run = sim::run(&scenario, &options, &mut |_| Ok(Box::new(sim::NoopSink))).unwrap();
    assert_eq!(run.algorithms[0].name, "fixed_window");
    assert_eq!(
        run.algorithms[0].metrics.max_in_window, 6,
        "the replacement ran"
    );
    let builtin = sim::run(&scenario, &RunOptions::default(), &mut |_| {
        Ok(Box::new(sim::NoopSink))
    })
    .unwrap();
    assert_eq!(builtin.algorithms[0].metrics.max_in_window, 5);
}

#[test]
fn a_scenario_cannot_name_an_algorithm_its_registry_does_not_hold() {
    let err = Scenario::parse(SCENARIO, Path::new("plugin.toml")).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("plugin.toml:4:")
            && text.contains("unknown algorithm `fixed_window_plus_one`"),
        "{text}"
    );
}

#[test]
fn calibrate_simulates_a_registered_algorithm_from_the_callers_registry() {
    // The Poisson runs build their scenario and run it with the registry given, so an
    // algorithm only that registry knows is calibrated like a built-in.
    let rule = Rule::new(5, Nanos::from_secs(10)).unwrap();
    let calibration = calibrate(&registry(), NAME, rule, SearchOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(calibration.nominal_worst, 12);
    assert!(
        (1..=12).contains(&calibration.poisson_1x) && (1..=12).contains(&calibration.poisson_2x),
        "{calibration:?}"
    );
}
