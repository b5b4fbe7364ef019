//! Scenarios with several `[[limit]]` rules: every algorithm enforces all of them at
//! once (a composite), the exact reference is the composite of sliding logs, and
//! every rule's worst case holds in every window.

use std::path::Path;
use std::sync::{Arc, Mutex};

use ratesim::sim::worst_case::max_in_window;
use ratesim::sim::{self, DecisionRow, DecisionSink, RunOptions, Scenario};
use ratesim::{Nanos, Registry, Rule};

const TWO_LIMITS: &str = r#"
name = "two"
duration = "120s"
seed = 3

[[limit]]
max_requests = 10
window = "1s"

[[limit]]
max_requests = 30
window = "10s"

[[traffic]]
kind = "poisson"
rate = 25

[[traffic]]
kind = "boundary_burst"
size = 10
"#;

type Admitted = Arc<Mutex<Vec<(String, Nanos, u64)>>>;

struct Collect(Admitted);

impl DecisionSink for Collect {
    fn record(&mut self, row: &DecisionRow<'_>) -> std::io::Result<()> {
        if row.allowed {
            self.0
                .lock()
                .unwrap()
                .push((row.algorithm.to_string(), row.time, row.cost));
        }
        Ok(())
    }
}

#[test]
fn several_limits_parse_and_keep_positions_in_errors() {
    let s = Scenario::parse(TWO_LIMITS, Path::new("two.toml")).unwrap();
    assert_eq!(s.rule, Rule::new(10, Nanos::from_secs(1)).unwrap());
    assert_eq!(
        s.extra_limits,
        [Rule::new(30, Nanos::from_secs(10)).unwrap()]
    );
    let bad = TWO_LIMITS.replace("max_requests = 30", "max_requests = 0");
    let err = Scenario::parse(&bad, Path::new("two.toml"))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("two.toml:11:"), "{err}");
    let typo = TWO_LIMITS.replace("window = \"10s\"", "windw = \"10s\"");
    let err = Scenario::parse(&typo, Path::new("two.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("windw") && err.starts_with("two.toml:12:"),
        "{err}"
    );
}

#[test]
fn compare_limit_replaces_every_rule() {
    let mut s = Scenario::parse(TWO_LIMITS, Path::new("two.toml")).unwrap();
    let one = Rule::new(5, Nanos::from_secs(2)).unwrap();
    s.set_rule(one).unwrap();
    assert_eq!((s.rule, s.extra_limits.len()), (one, 0));
}

/// The boundary lesson (a full quota on each side of a boundary) survives `--limit`:
/// a burst the size of the old limit becomes the size of the new one, and the fixed
/// window still admits exactly twice the limit; other sizes are left alone.
#[test]
fn compare_limit_keeps_a_limit_sized_burst_limit_sized() {
    let burst_sizes = |s: &Scenario| -> Vec<u64> {
        s.traffic
            .iter()
            .filter_map(|t| match t.kind {
                ratesim::sim::TrafficKind::BoundaryBurst { size, .. } => Some(size),
                _ => None,
            })
            .collect()
    };
    let mut s = Scenario::parse(TWO_LIMITS, Path::new("two.toml")).unwrap();
    assert_eq!(burst_sizes(&s), [10], "the first limit is 10 per 1 s");
    s.set_rule(Rule::new(7, Nanos::from_secs(2)).unwrap())
        .unwrap();
    assert_eq!(burst_sizes(&s), [7]);
    let only_bursts = TWO_LIMITS.replace(
        "kind = \"poisson\"\nrate = 25",
        "kind = \"boundary_burst\"\nsize = 3",
    );
    let mut s = Scenario::parse(&only_bursts, Path::new("two.toml")).unwrap();
    s.set_rule(Rule::new(7, Nanos::from_secs(2)).unwrap())
        .unwrap();
    assert_eq!(burst_sizes(&s), [3, 7], "a burst of 3 was not the limit");
    s.traffic.remove(0);
    let report = sim::run(&s, &RunOptions::default(), &mut |_| {
        Ok(Box::new(sim::NoopSink))
    })
    .unwrap();
    let fixed = report
        .algorithms
        .iter()
        .find(|a| a.name == "fixed_window")
        .unwrap();
    assert_eq!(fixed.metrics.max_in_window, 14, "twice the new limit of 7");
}

#[test]
fn every_algorithm_respects_every_rule_and_the_log_is_exact_for_all_of_them() {
    let scenario = Scenario::parse(TWO_LIMITS, Path::new("two.toml")).unwrap();
    let admitted: Admitted = Arc::default();
    let report = sim::run(&scenario, &RunOptions::default(), &mut |_| {
        Ok(Box::new(Collect(admitted.clone())))
    })
    .unwrap();
    let admitted = admitted.lock().unwrap();
    let rules = std::iter::once(scenario.rule).chain(scenario.extra_limits.iter().copied());
    for rule in rules {
        for a in &report.algorithms {
            let stream: Vec<(Nanos, u64)> = admitted
                .iter()
                .filter(|(n, _, _)| *n == a.name)
                .map(|&(_, t, c)| (t, c))
                .collect();
            assert!(!stream.is_empty(), "{}", a.name);
            let found = max_in_window(&stream, rule.window());
            let bound = Registry::builtin()
                .entry(&a.name)
                .unwrap()
                .worst_case(&rule)
                .unwrap();
            assert!(
                found <= bound,
                "{} admitted {found} in one window of {rule}; bound {bound}",
                a.name
            );
            if a.name == "sliding_window_log" {
                assert!(
                    found <= rule.max_requests(),
                    "the log is exact for {rule}: {found}"
                );
            }
        }
    }
    let log = report
        .algorithms
        .iter()
        .find(|a| a.name == "sliding_window_log")
        .unwrap();
    assert_eq!(
        (log.metrics.false_allow, log.metrics.false_deny),
        (Some(0), Some(0)),
        "the reference is the log of every rule"
    );
    // The second rule binds: the log admits at most 30 per 10 s, 360 in 120 s.
    assert!(log.metrics.allowed <= 360, "{}", log.metrics.allowed);
    for a in &report.algorithms {
        let m = &a.metrics;
        assert_eq!(
            m.retry_after_too_early + m.retry_after_too_late,
            0,
            "{}: retry_after exact on a composite",
            a.name
        );
    }
}

#[test]
fn retry_client_outcomes_account_for_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let trace = "time_s,key,cost\n0,a,1\n0,a,1\n0,a,1\n0.5,b,9\n1,a,2\n59.9,a,1\n59.95,a,1\n";
    std::fs::write(dir.path().join("t.csv"), trace).unwrap();
    let text = r#"
        name = "r"
        duration = "60s"
        [limit]
        max_requests = 2
        window = "10s"
        [[traffic]]
        kind = "trace"
        path = "t.csv"
        [client]
        kind = "retry"
        max_retries = 1
    "#;
    let scenario = Scenario::parse(text, &dir.path().join("r.toml")).unwrap();
    let report = sim::run(&scenario, &RunOptions::default(), &mut |_| {
        Ok(Box::new(sim::NoopSink))
    })
    .unwrap();
    for a in &report.algorithms {
        let m = &a.metrics;
        let accounted =
            m.succeeded.unwrap() + m.gave_up.unwrap() + m.unfinished.unwrap() + m.never_fits;
        assert_eq!(accounted, m.requests, "{}: {m:?}", a.name);
        assert_eq!(m.never_fits, 1, "{}", a.name);
    }
}
