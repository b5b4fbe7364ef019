//! Scenario text → `Scenario::parse` → `validate` → (if small) `sim::run`: must never
//! panic, and a run on 3 threads must equal the sequential run. Errors are fine; they
//! are the expected answer to most inputs.
//!
//! The scenario's origin is the repository's `scenarios/` folder, so
//! `path = "traces/sample.csv"` resolves to the checked-in trace. Trace sources naming
//! any other file are not validated or run: the fuzzer must not read arbitrary files
//! (`/dev/zero` never ends).

#![no_main]

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use ratesim::sim::{self, ClientModel, NoopSink, RunOptions, Scenario, TrafficKind};

/// Above this many attempts per algorithm a run is skipped, to keep execs fast.
const MAX_ATTEMPTS: f64 = 2_000.0;

static SCENARIOS: LazyLock<PathBuf> = LazyLock::new(|| {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .canonicalize()
        .expect("the repository's scenarios/ folder exists")
});

static ORIGIN: LazyLock<PathBuf> = LazyLock::new(|| SCENARIOS.join("fuzz.toml"));

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(scenario) = Scenario::parse(text, &ORIGIN) else {
        return;
    };
    // The error type must display without panicking too.
    let _ = scenario.name.len();
    let Some(expected) = expected_attempts(&scenario) else {
        return;
    };
    if let Err(e) = scenario.validate() {
        let _ = e.to_string();
        return;
    }
    if expected > MAX_ATTEMPTS {
        return;
    }
    let run = |threads| {
        let options = RunOptions {
            threads,
            ..RunOptions::default()
        };
        sim::run(&scenario, &options, &mut |_| Ok(Box::new(NoopSink)))
    };
    match run(1) {
        Ok(report) => {
            for a in &report.algorithms {
                let m = &a.metrics;
                assert_eq!(m.allowed + m.denied, m.attempts, "{}: {m:?}", a.name);
            }
            // Threads share the sliding log's decisions between them: a threaded run
            // must equal the sequential one exactly.
            let threaded = run(3).expect("the sequential run succeeded");
            assert_eq!(report, threaded, "3 threads differ from 1");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});

/// An upper estimate of the attempts one algorithm sees, or `None` if a trace source
/// names a file outside the checked-in traces.
fn expected_attempts(s: &Scenario) -> Option<f64> {
    let mut arrivals = 0.0;
    for t in &s.traffic {
        let span = t.end.saturating_sub(t.start).as_secs_f64();
        arrivals += match &t.kind {
            TrafficKind::Uniform { rate } | TrafficKind::Poisson { rate } => {
                span * rate.as_f64() + 1.0
            }
            // Busy time never exceeds real time.
            TrafficKind::OnOff { rate, .. } => span * rate.as_f64() + 1.0,
            TrafficKind::BoundaryBurst { size, period, .. } => {
                let period = period.unwrap_or(s.rule.window());
                let boundaries = (t.end.saturating_sub(t.start).as_u64() / period.as_u64()) as f64;
                2.0 * *size as f64 * (boundaries + 2.0)
            }
            TrafficKind::Trace { path, .. } => {
                let file = path.canonicalize().ok()?;
                if !(file.starts_with(SCENARIOS.join("traces")) && file.is_file()) {
                    return None;
                }
                std::fs::read_to_string(&file).ok()?.lines().count() as f64
            }
        };
    }
    let tries = match s.client {
        ClientModel::Open => 1.0,
        ClientModel::Retry { max_retries, .. } => f64::from(max_retries) + 1.0,
    };
    Some(arrivals * tries)
}
