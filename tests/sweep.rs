//! `sim::sweep` and `ratesim sweep`: one stream fanned out to many configurations,
//! each row exactly what a run of that configuration reports.

mod sim_support;

use ratesim::sim::{self, RunOptions};
use ratesim::{Nanos, Rule};
use sim_support::*;

fn rules() -> Vec<Rule> {
    let mut rules = Vec::new();
    for (max, window) in [(3, 1), (40, 60)] {
        for burst in [None, Some(2 * max)] {
            let rule = Rule::new(max, Nanos::from_secs(window)).unwrap();
            rules.push(match burst {
                Some(b) => rule.with_burst(b).unwrap(),
                None => rule,
            });
        }
    }
    rules
}

#[test]
fn every_configuration_of_a_sweep_reports_what_a_run_of_it_reports() {
    // Bursts that follow the limit (kept), retry clients, a trace: small ones, as the
    // test builds every run twice in a debug build.
    for name in ["burst", "retry_clients", "trace_replay"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(format!("{name}.toml"));
        let scenario = load(&path);
        let rules = rules();
        for threads in [1, 3] {
            let options = RunOptions {
                threads,
                ..RunOptions::default()
            };
            let swept = sim::sweep(&scenario, &rules, &options).unwrap();
            assert_eq!(swept.len(), rules.len());
            for (report, rule) in swept.iter().zip(&rules) {
                let alone = run_quiet(&scenario.with_rule_keeping_traffic(*rule));
                let metrics = |r: &sim::RunReport| {
                    r.algorithms
                        .iter()
                        .map(|a| a.metrics.clone())
                        .collect::<Vec<_>>()
                };
                assert_eq!(
                    metrics(report),
                    metrics(&alone),
                    "{} under {rule} with {threads} threads",
                    path.display()
                );
                assert_eq!(report.rule, alone.rule);
            }
        }
    }
}
