//! The delayed outcome in the simulator: a shaper's admission counts in the trailing
//! windows at the instant it passes (`t + d`), not at its arrival (issue 28).

mod sim_support;

use std::collections::HashMap;
use std::path::Path;

use ratesim::presets::{Nginx, NginxParams, Tower};
use ratesim::{Algorithm, BoxedAlgorithm, Nanos};
use sim_support::*;

const SCENARIO: &str = r#"
name = "delayed"
seed = 3
duration = "60s"
algorithms = ["tower", "nginx", "fixed_window"]
[limit]
max_requests = 5
window = "10s"
[preset.nginx]
burst = 6
[[traffic]]
kind = "boundary_burst"
size = 5
spread = "10ms"
keys = 2
[[traffic]]
kind = "poisson"
rate = 1.5
keys = 2
"#;

/// The largest count of one key's passing instants in any `(t − W, t]`, by brute force,
/// over the instants before `end`.
fn brute_force(passes: &[(Nanos, String, u64)], window: u64, end: Nanos) -> u64 {
    let passes: Vec<_> = passes.iter().filter(|(t, _, _)| *t < end).collect();
    let mut best = 0;
    for (t, key, _) in &passes {
        let sum: u64 = passes
            .iter()
            .filter(|(s, k, _)| k == key && s <= t && s.as_u64() + window > t.as_u64())
            .map(|(_, _, c)| c)
            .sum();
        best = best.max(sum);
    }
    best
}

#[test]
fn window_counts_take_a_shapers_admissions_at_the_instant_they_pass() {
    let sc = parse_at(SCENARIO, Path::new("delayed.toml"));
    let (report, rows) = run_capturing(&sc, 1);
    let params = NginxParams {
        burst: 6,
        ..NginxParams::default()
    };
    let models: [BoxedAlgorithm; 2] = [
        BoxedAlgorithm::new(Tower::new(sc.rule)),
        BoxedAlgorithm::new(Nginx::new(sc.rule, params)),
    ];
    let window = sc.rule.window().as_u64();
    for (i, model) in models.iter().enumerate() {
        let name = model.name().to_string();
        // Replay the run's own arrivals through the library: when each passes.
        let mut states = HashMap::new();
        let mut passes = Vec::new();
        let mut arrivals = Vec::new();
        let mut delayed = 0;
        for row in &rows[i] {
            let state = states
                .entry(row.key.clone())
                .or_insert_with(|| model.new_state(row.time));
            let outcome = model.acquire(state, row.time, row.cost);
            assert_eq!(outcome.admitted(), row.allowed, "{name} at {}", row.time);
            if outcome.admitted() {
                delayed += usize::from(outcome.delay() > Nanos::ZERO);
                passes.push((row.time.saturating_add(outcome.delay()), row.key.clone(), 1));
                arrivals.push((row.time, row.key.clone(), 1));
            }
        }
        let metrics = &report.algorithms[i].metrics;
        assert_eq!(metrics.algorithm, name);
        assert!(
            delayed > 10,
            "{name}: the scenario must delay requests ({delayed})"
        );
        let at_pass = brute_force(&passes, window, sc.duration);
        let at_arrival = brute_force(&arrivals, window, sc.duration);
        assert_eq!(metrics.max_in_window, at_pass, "{name}");
        assert!(
            at_arrival > at_pass,
            "{name}: counting arrivals ({at_arrival}) would overstate the window"
        );
    }
}
