//! Engine properties: exact metrics, determinism, threads, arrival statistics, retries.

mod sim_support;

use std::path::Path;

use proptest::prelude::*;
use ratesim::Nanos;
use ratesim::sim::{ArrivalStream, ClientModel, NoopSink, RunOptions, Scenario, SimError};
use sim_support::*;

const ALL: [&str; 6] = [
    "token_bucket",
    "leaky_bucket",
    "fixed_window",
    "sliding_window_log",
    "sliding_window_counter",
    "gcra",
];

/// Writes `dir/t.csv` with `rows` (`(ns, key, cost)`; key `k` is named `k{k}`).
fn write_trace(dir: &Path, rows: &[(u64, u8, u64)]) {
    let mut csv = String::from("time_s,key,cost\n");
    for (t, k, c) in rows {
        csv.push_str(&format!("{},k{k},{c}\n", Nanos::new(*t).to_decimal_secs()));
    }
    std::fs::write(dir.join("t.csv"), csv).unwrap();
}

/// A scenario replaying `rows` (`(ns, key, cost)`) under `max` per `window_ns`.
fn trace_scenario(
    dir: &Path,
    rows: &[(u64, u8, u64)],
    max: u64,
    window_ns: u64,
    client: &str,
) -> ratesim::sim::Scenario {
    write_trace(dir, rows);
    let text = format!(
        "name = \"p\"\nduration = \"1h\"\n[limit]\nmax_requests = {max}\nwindow = \"{window_ns}ns\"\n\
         [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n{client}"
    );
    parse_at(&text, &dir.join("p.toml"))
}

/// A retry client with one retry, against the fixed window at 1 per 10 s, replaying the
/// CSV trace `csv` for `duration`. The directory holds the trace: keep it for the run.
fn one_retry_on_trace(csv: &str, duration: &str) -> (tempfile::TempDir, ratesim::sim::Scenario) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.csv"), csv).unwrap();
    let text = format!(
        "name = \"r\"\nduration = \"{duration}\"\nalgorithms = [\"fixed_window\"]\n\
         [limit]\nmax_requests = 1\nwindow = \"10s\"\n\
         [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n\
         [client]\nkind = \"retry\"\nmax_retries = 1\n"
    );
    let scenario = parse_at(&text, &dir.path().join("r.toml"));
    (dir, scenario)
}

/// The most cost one key admitted in any `(t − W, t]`, by checking every pair.
fn brute_force_max_in_window(admitted: &[(Nanos, String, u64)], window: u64) -> u64 {
    let mut best = 0;
    for (t, key, _) in admitted {
        let sum: u64 = admitted
            .iter()
            .filter(|(s, k, _)| k == key && *s <= *t && s.as_u64() + window > t.as_u64())
            .map(|(_, _, c)| c)
            .sum();
        best = best.max(sum);
    }
    best
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn max_in_window_equals_a_brute_force_count_on_random_streams(
        gaps in prop::collection::vec((0u64..4_000, 0u8..3, 0u64..3), 1..60),
        max in 1u64..5,
        window in 1u64..6_000,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut t = 0;
        let rows: Vec<(u64, u8, u64)> = gaps
            .iter()
            .map(|&(gap, key, cost)| { t += gap; (t, key, cost.min(max)) })
            .collect();
        let s = trace_scenario(dir.path(), &rows, max, window, "");
        let (report, parts) = run_capturing(&s, 1);
        for (a, rows) in report.algorithms.iter().zip(parts) {
            let admitted: Vec<(Nanos, String, u64)> = rows
                .iter()
                .filter(|r| r.allowed)
                .map(|r| (r.time, r.key.clone(), r.cost))
                .collect();
            let expected = brute_force_max_in_window(&admitted, window);
            prop_assert_eq!(a.metrics.max_in_window, expected, "{}", a.name);
            prop_assert_eq!(a.metrics.allowed as usize, admitted.len());
        }
    }
}

#[test]
fn the_same_seed_gives_identical_results_and_another_seed_a_different_stream() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/zipf_keys.toml");
    let mut s = load(&path);
    s.duration = Nanos::from_secs(30);
    s.set_algorithms(&["fixed_window", "gcra"], ratesim::Registry::builtin())
        .unwrap();
    let (r1, rows1) = run_capturing(&s, 1);
    let (r2, rows2) = run_capturing(&s, 1);
    assert_eq!(r1, r2);
    assert_eq!(rows1, rows2);
    s.seed += 1;
    let (_, rows3) = run_capturing(&s, 1);
    let stream = |rows: &[Row]| -> Vec<(Nanos, String)> {
        rows.iter().map(|r| (r.time, r.key.clone())).collect()
    };
    assert_ne!(stream(&rows1[0]), stream(&rows3[0]));
}

#[test]
fn open_clients_give_every_algorithm_the_identical_stream() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/on_off.toml");
    let (_, parts) = run_capturing(&load(&path), 1);
    let stream = |rows: &[Row]| -> Vec<(u64, Nanos, String, u64)> {
        rows.iter()
            .map(|r| (r.seq, r.time, r.key.clone(), r.cost))
            .collect()
    };
    for rows in &parts[1..] {
        assert_eq!(stream(rows), stream(&parts[0]), "{}", rows[0].algorithm);
    }
}

#[test]
fn a_threaded_run_equals_a_sequential_run() {
    for name in ["poisson.toml", "retry_clients.toml"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(name);
        let s = load(&path);
        let sequential = run_capturing(&s, 1);
        let threaded = run_capturing(&s, 4);
        if name == "poisson.toml" {
            // Threads share the sliding log's decisions: the comparison below only
            // means something if there are disagreements with the log to count.
            for a in sequential.0.algorithms.iter() {
                let m = &a.metrics;
                let disagreements = m.false_allow.unwrap() + m.false_deny.unwrap();
                assert_eq!(disagreements == 0, a.name == "sliding_window_log", "{m:?}");
            }
        }
        assert_eq!(sequential.0, threaded.0, "{name}");
        assert_eq!(sequential.1, threaded.1, "{name}");
    }
}

#[test]
fn a_poisson_source_keeps_its_rate_within_five_sigma() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/poisson.toml");
    let mut s = load(&path);
    let rate = 240.0;
    for seed in 0..5 {
        s.seed = seed;
        let mut stream = ArrivalStream::new(&s).unwrap();
        let mut n = 0u64;
        while stream.next_arrival().unwrap().is_some() {
            n += 1;
        }
        // The count in a fixed time is Poisson(λT): mean λT, standard deviation √(λT).
        let mean = rate * s.duration.as_secs_f64();
        let z = (n as f64 - mean) / mean.sqrt();
        assert!(
            z.abs() < 5.0,
            "seed {seed}: {n} arrivals, expected {mean} (z = {z:.2})"
        );
    }
}

#[test]
fn a_lone_retry_client_waiting_exactly_retry_after_is_admitted_on_that_retry() {
    use ratesim::{Algorithm, Registry, Rule};
    // Rules with uneven arithmetic: 5/10s, 3/700ms with burst 4, 7/1s.
    for (max, window, burst) in [(5, "10s", 5), (3, "700ms", 4), (7, "1s", 7)] {
        for algo in ALL {
            let rule = Rule::new(max, Nanos::parse_duration(window).unwrap())
                .and_then(|r| r.with_burst(burst))
                .unwrap();
            let capacity = Registry::default().create(algo, rule).unwrap().capacity();
            for cost in [1, 2] {
                // Fill the capacity, then one request more: exactly one is denied.
                let n = capacity / cost + 1;
                let dir = tempfile::tempdir().unwrap();
                let mut csv = String::from("time_s,key,cost\n");
                for i in 0..n {
                    csv.push_str(&format!("0.{i:09},solo,{cost}\n"));
                }
                std::fs::write(dir.path().join("t.csv"), csv).unwrap();
                let text = format!(
                    "name = \"r\"\nduration = \"1h\"\nalgorithms = [\"{algo}\"]\n[limit]\n\
                     max_requests = {max}\nwindow = \"{window}\"\nburst = {burst}\n\
                     [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n\
                     [client]\nkind = \"retry\"\nmax_retries = 1\n"
                );
                let s = parse_at(&text, &dir.path().join("r.toml"));
                assert!(
                    matches!(s.client, ClientModel::Retry { jitter, .. } if jitter == Nanos::ZERO)
                );
                let (_, parts) = run_capturing(&s, 1);
                let rows = &parts[0];
                let denied: Vec<&Row> = rows.iter().filter(|r| !r.allowed).collect();
                let context = format!("{algo} {max}/{window} burst {burst} cost {cost}");
                assert_eq!(denied.len(), 1, "{context}: {rows:?}");
                let d = denied[0];
                assert_eq!(d.attempt, 0, "{context}");
                let retry = rows
                    .iter()
                    .find(|r| r.seq == d.seq && r.attempt == 1)
                    .unwrap_or_else(|| panic!("{context}: no retry for {d:?}"));
                assert_eq!(retry.time, d.time + d.retry_after.unwrap(), "{context}");
                assert!(retry.allowed, "{context}: {retry:?}");
            }
        }
    }
}

#[test]
fn retry_clients_report_latency_and_wasted_retries() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/retry_clients.toml");
    let report = run_quiet(&load(&path));
    for a in &report.algorithms {
        let m = &a.metrics;
        assert!(
            m.false_allow.is_none(),
            "{}: no reference on retry streams",
            a.name
        );
        let succeeded = m.succeeded.unwrap();
        assert!(succeeded > 0 && succeeded <= m.requests, "{}", a.name);
        assert_eq!(
            m.allowed, succeeded,
            "{}: each success is one admission",
            a.name
        );
        assert_eq!(
            m.attempts - m.requests,
            m.denied - m.gave_up.unwrap() - m.unfinished.unwrap(),
            "{}: every denial not given up or unfinished was retried",
            a.name
        );
        let (p50, p99, max) = (
            m.latency_p50_ns.unwrap(),
            m.latency_p99_ns.unwrap(),
            m.latency_max_ns.unwrap(),
        );
        assert!(p50 <= p99 && p99 <= max, "{}: {p50} {p99} {max}", a.name);
        assert!(max > 0, "{}: some request had to wait", a.name);
    }
}

#[test]
fn the_report_timeline_and_window_series_are_bounded_and_consistent() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/zipf_keys.toml");
    let report = run_quiet(&load(&path));
    for a in &report.algorithms {
        let t = &a.timeline;
        assert!(t.allowed.len() as u64 <= ratesim::sim::TIMELINE_BUCKETS);
        assert_eq!(
            t.allowed.iter().sum::<u64>(),
            a.metrics.allowed,
            "{}",
            a.name
        );
        assert_eq!(t.denied.iter().sum::<u64>(), a.metrics.denied, "{}", a.name);
        assert!(a.window_counts.len() as u64 <= ratesim::sim::WINDOW_SAMPLES);
        let peak = a.window_counts.iter().map(|w| w.count).max().unwrap_or(0);
        assert_eq!(
            peak, a.metrics.max_in_window,
            "{}: the series shows the worst key",
            a.name
        );
        assert!(a.metrics.peak_keys > 0);
    }
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains("\"over_admission\""));
}

#[test]
fn every_algorithm_name_runs() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/burst.toml");
    let report = run_quiet(&load(&path));
    let names: Vec<&str> = report.algorithms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ALL);
}

/// Every built-in `retry_after` is exact, so every denial must be judged exact — also
/// when a key's denials are remembered between probes and a smaller request is
/// admitted in between, moving the bigger request's earliest instant later.
#[test]
fn a_smaller_admission_between_two_denials_moves_the_judged_instant() {
    let dir = tempfile::tempdir().unwrap();
    let s = 1_000_000_000;
    // 3 per 10 s: all 3 taken at 0; 3 more denied at 4 s; 1 admitted at 5 s (the
    // buckets have refilled 1.5); 3 denied again at 6 s, now passing later than the
    // first denial's instant.
    let rows = [
        (0, 0, 3),
        (4 * s, 0, 3),
        (5 * s, 0, 1),
        (6 * s, 0, 3),
        (7 * s, 0, 3),
    ];
    for client in ["", "[client]\nkind = \"retry\"\nmax_retries = 2"] {
        let sc = trace_scenario(dir.path(), &rows, 3, 10 * s, client);
        let (report, _) = run_capturing(&sc, 1);
        for a in &report.algorithms {
            let m = &a.metrics;
            assert!(m.denied >= 2, "{}: {m:?}", a.name);
            assert_eq!(
                m.retry_after_exact, m.denied,
                "{} ({client:?}): {m:?}",
                a.name
            );
        }
    }
}

/// Under a window of 584 years (`u64::MAX` ns) a denied request that fits may have to
/// wait past the end of the clock's range. That is not "never fits" (its cost is
/// within the capacity): it is judged, and an advice pointing past the end is exact
/// when nothing passes before it. Only a cost above the capacity is `never_fits`.
#[test]
fn a_wait_past_the_end_of_time_is_judged_and_only_oversized_costs_never_fit() {
    let dir = tempfile::tempdir().unwrap();
    let s = 1_000_000_000;
    // 2 per u64::MAX ns: cost 1 at 0, 1 and 2 s (the third is denied), then a
    // cost of 3 at 3 s, above every algorithm's capacity.
    let rows = [(0, 0, 1), (s, 0, 1), (2 * s, 0, 1), (3 * s, 0, 3)];
    let sc = trace_scenario(dir.path(), &rows, 2, u64::MAX, "");
    let (report, decisions) = run_capturing(&sc, 1);
    for (a, rows) in report.algorithms.iter().zip(&decisions) {
        let m = &a.metrics;
        assert_eq!((m.denied, m.never_fits), (2, 1), "{}: {m:?}", a.name);
        // decisions.csv: the denial that fits carries its wait, the oversized one none.
        let waits: Vec<_> = rows.iter().map(|r| r.retry_after.is_some()).collect();
        assert_eq!(waits, [true, true, true, false], "{}", a.name);
        assert_eq!(
            m.retry_after_exact, 1,
            "{}: the denial that fits is judged exact: {m:?}",
            a.name
        );
        // Whole seconds round up: exact at the end of time, else late by a fraction.
        assert_eq!(
            m.retry_after_secs_exact + m.retry_after_secs_too_late,
            1,
            "{}: {m:?}",
            a.name
        );
    }
    // The sliding window counter's next chance is two windows away, past the end.
    let counter = report
        .algorithms
        .iter()
        .find(|a| a.name == "sliding_window_counter")
        .unwrap();
    assert_eq!(
        counter.metrics.retry_after_secs_exact, 1,
        "{:?}",
        counter.metrics
    );
    let counter_rows = &decisions[report
        .algorithms
        .iter()
        .position(|a| a.name == "sliding_window_counter")
        .unwrap()];
    assert_eq!(
        counter_rows[2].retry_after,
        Some(Nanos::MAX),
        "{counter_rows:?}"
    );
}

/// Past 20,000 points the window-count series is thinned; it must still show one
/// point per instant, the count after everything at that instant. (Found in review:
/// key `a` admitted twice at one instant with `b` between them expired in two steps,
/// drawing a count of 1 that never held.)
#[test]
fn a_thinned_window_series_has_one_point_per_instant() {
    let dir = tempfile::tempdir().unwrap();
    let ms = 1_000_000;
    let mut rows: Vec<(u64, u8, u64)> = (0..25_000).map(|i| (i * ms, 0, 1)).collect();
    rows.extend([
        (40_000 * ms, 0, 1),
        (40_000 * ms, 1, 1),
        (40_000 * ms, 0, 1),
    ]);
    let s = trace_scenario(dir.path(), &rows, 1_000_000, 1_000 * ms, "");
    let (report, _) = run_capturing(&s, 1);
    for a in &report.algorithms {
        let series = &a.window_counts;
        // 25,000 admissions and as many expiries: more than the 20,000 kept raw.
        assert!(series.len() < 20_000, "{}: the series was thinned", a.name);
        for pair in series.windows(2) {
            assert!(pair[0].time < pair[1].time, "{}: {pair:?}", a.name);
        }
        let last = series.last().unwrap();
        assert_eq!(
            (last.time.as_u64(), last.count),
            (41_000 * ms, 0),
            "{}",
            a.name
        );
    }
}

#[test]
fn clients_denied_and_the_denied_share_count_what_the_decisions_show() {
    let dir = tempfile::tempdir().unwrap();
    // Key 0 sends 4 at once (2 pass), key 1 sends 1, key 2 sends 3 (1 too many).
    let rows = [
        (0, 0, 1),
        (0, 0, 1),
        (0, 0, 1),
        (0, 0, 1),
        (5, 1, 1),
        (9, 2, 1),
        (9, 2, 1),
        (9, 2, 1),
    ];
    for client in ["", "[client]\nkind = \"retry\"\nmax_retries = 1\n"] {
        let s = trace_scenario(dir.path(), &rows, 2, 1_000, client);
        let (report, parts) = run_capturing(&s, 1);
        for (a, rows) in report.algorithms.iter().zip(parts) {
            let mut keys: Vec<&str> = rows
                .iter()
                .filter(|r| !r.allowed)
                .map(|r| r.key.as_str())
                .collect();
            keys.sort_unstable();
            keys.dedup();
            let first_denied = rows.iter().filter(|r| !r.allowed && r.attempt == 0).count();
            let m = &a.metrics;
            assert_eq!(m.clients_denied as usize, keys.len(), "{} {client}", a.name);
            assert_eq!(
                m.requests_denied as usize, first_denied,
                "{} {client}",
                a.name
            );
            assert_eq!(
                m.requests_denied_share,
                Some(first_denied as f64 / 8.0),
                "{} {client}",
                a.name
            );
        }
    }
}

/// One key under 1 request per 10 s, retry clients with one retry and no jitter, a
/// run of 25 s; every count worked out by hand:
/// - 0 s is admitted; 1 s and 2.5 s are denied (waits 9 s and 7.5 s) and both retried
///   at 10 s, in the order they were denied;
/// - at 10 s the retry of 1 s is admitted (latency 9 s); the retry of 2.5 s is denied
///   again: a wasted retry, and with its one retry spent the client gives up;
/// - 21 s is admitted; 22 s is denied with a wait to 30 s, past the end: unfinished.
#[test]
fn a_retry_client_counts_successes_give_ups_unfinished_and_wasted_retries_by_hand() {
    let csv = "time_s,key\n0,solo\n1,solo\n2.5,solo\n21,solo\n22,solo\n";
    let (_dir, s) = one_retry_on_trace(csv, "25s");
    let (report, parts) = run_capturing(&s, 1);
    let attempts: Vec<(u64, u32, u64, bool)> = parts[0]
        .iter()
        .map(|r| (r.seq, r.attempt, r.time.as_u64() / 100_000_000, r.allowed))
        .collect();
    // (seq, attempt, time in tenths of a second, allowed)
    assert_eq!(
        attempts,
        [
            (0, 0, 0, true),
            (1, 0, 10, false),
            (2, 0, 25, false),
            (1, 1, 100, true),
            (2, 1, 100, false),
            (3, 0, 210, true),
            (4, 0, 220, false),
        ]
    );
    let m = &report.algorithms[0].metrics;
    let counts = (m.requests, m.attempts, m.allowed, m.denied);
    assert_eq!(counts, (5, 7, 3, 4), "{m:?}");
    let clients = (m.succeeded, m.gave_up, m.unfinished, m.wasted_retries);
    assert_eq!(clients, (Some(3), Some(1), Some(1), Some(1)), "{m:?}");
    // Latencies 0, 9 s and 0: the median is 0, the 99th percentile and the maximum 9 s.
    let latency = (m.latency_p50_ns, m.latency_p99_ns, m.latency_max_ns);
    let nine = 9_000_000_000;
    assert_eq!(latency, (Some(0), Some(nine), Some(nine)), "{m:?}");
    // Every wait is exact; as whole seconds only 7.5 s is not (8 s is half a second late).
    let honesty = (
        m.retry_after_exact,
        m.retry_after_secs_exact,
        m.retry_after_secs_too_late,
    );
    assert_eq!(honesty, (4, 3, 1), "{m:?}");
}

/// A denied request comes back after the advised wait plus a jitter of at most the
/// configured 50 ms, and the jitter does vary.
#[test]
fn retries_come_back_after_the_advised_wait_plus_at_most_the_jitter() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/retry_clients.toml");
    let (_, parts) = run_capturing(&load(&path), 1);
    let jitter = 50_000_000i128;
    for rows in &parts {
        let by_attempt: std::collections::HashMap<(u64, u32), &Row> =
            rows.iter().map(|r| ((r.seq, r.attempt), r)).collect();
        let mut extras = Vec::new();
        for r in rows.iter().filter(|r| r.attempt > 0) {
            let before = by_attempt[&(r.seq, r.attempt - 1)];
            let advised =
                i128::from(before.time.as_u64()) + i128::from(before.retry_after.unwrap().as_u64());
            let extra = i128::from(r.time.as_u64()) - advised;
            assert!(
                (0..=jitter).contains(&extra),
                "{}: {r:?} came {extra} ns after the advice of {before:?}",
                r.algorithm
            );
            extras.push(extra);
        }
        extras.sort_unstable();
        extras.dedup();
        assert!(
            extras.len() > 10,
            "{}: jitters {extras:?}",
            rows[0].algorithm
        );
    }
}

/// One key under 2 requests per 10 s. The fixed window admits the pair at 10 s (a new
/// window) where the sliding log, still holding the pair at 9 s, denies it: two false
/// allows. At 19.5 s the log has room again while the window is full: one false deny.
/// Another key's request at 30 s is admitted by both: an agreement, counted in neither.
/// The counts are the same whether the group runs its own copy of the log, runs the
/// log as an algorithm, or receives the log's decisions from another thread.
#[test]
fn false_allows_and_false_denies_count_each_disagreement_with_the_sliding_log() {
    let dir = tempfile::tempdir().unwrap();
    let s = 1_000_000_000;
    let rows = [
        (9 * s, 0, 1),
        (9 * s, 0, 1),
        (10 * s, 0, 1),
        (10 * s, 0, 1),
        (19 * s + s / 2, 0, 1),
        (30 * s, 1, 1),
    ];
    let mut sc = trace_scenario(dir.path(), &rows, 2, 10 * s, "");
    for (algorithms, threads) in [
        (&["fixed_window"][..], 1),
        (&["fixed_window", "sliding_window_log"][..], 1),
        (&["sliding_window_log", "fixed_window"][..], 2),
    ] {
        sc.set_algorithms(algorithms, ratesim::Registry::builtin())
            .unwrap();
        let (report, parts) = run_capturing(&sc, threads);
        for (a, rows) in report.algorithms.iter().zip(&parts) {
            let allowed: Vec<bool> = rows.iter().map(|r| r.allowed).collect();
            let m = &a.metrics;
            let counts = (m.false_allow, m.false_deny);
            if a.name == "fixed_window" {
                assert_eq!(
                    allowed,
                    [true, true, true, true, false, true],
                    "{algorithms:?}"
                );
                assert_eq!(counts, (Some(2), Some(1)), "{algorithms:?}: {m:?}");
            } else {
                assert_eq!(
                    allowed,
                    [true, true, false, false, true, true],
                    "{algorithms:?}"
                );
                assert_eq!(counts, (Some(0), Some(0)), "{algorithms:?}: {m:?}");
            }
        }
    }
}

/// Keys `a` and `b` are used at 1 s and idle long before 30 s; `c`, `d` and `e` arrive
/// after 30 s, `e` three times. The janitor's sweeps (every 10 s here) forget `a` and
/// `b` before the others come, so at most 3 keys are ever held at once. A state takes
/// its type's size; a sliding-log state also one `(instant, cost)` entry per logged
/// instant, 3 at most (`e`'s).
#[test]
fn peak_keys_and_state_bytes_count_what_the_janitor_sees_at_its_sweeps() {
    use ratesim::algorithm::{BucketState, CounterState, GcraState, LogState, WindowState};
    use std::mem::size_of;
    let dir = tempfile::tempdir().unwrap();
    let s = 1_000_000_000;
    let rows = [
        (s, 0, 1),
        (s, 1, 1),
        (31 * s, 2, 1),
        (31 * s, 3, 1),
        (31 * s, 4, 1),
        (31 * s + s / 2, 4, 1),
        (32 * s, 4, 1),
    ];
    let mut csv = String::from("time_s,key,cost\n");
    for (t, k, c) in rows {
        csv.push_str(&format!("{},k{k},{c}\n", Nanos::new(t).to_decimal_secs()));
    }
    std::fs::write(dir.path().join("t.csv"), csv).unwrap();
    let text = "name = \"p\"\nduration = \"60s\"\n[limit]\nmax_requests = 3\nwindow = \"10s\"\n\
                [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n";
    let sc = parse_at(text, &dir.path().join("p.toml"));
    let (report, _) = run_capturing(&sc, 1);
    for a in &report.algorithms {
        let m = &a.metrics;
        assert_eq!(m.allowed, 7, "{}: {m:?}", a.name);
        assert_eq!(m.peak_keys, 3, "{}: {m:?}", a.name);
        let bytes = match a.name.as_str() {
            "token_bucket" | "leaky_bucket" => size_of::<BucketState>(),
            "fixed_window" => size_of::<WindowState>(),
            "sliding_window_counter" => size_of::<CounterState>(),
            "gcra" => size_of::<GcraState>(),
            "sliding_window_log" => size_of::<LogState>() + 3 * size_of::<(Nanos, u64)>(),
            other => panic!("unexpected algorithm {other}"),
        };
        assert_eq!(
            m.state_bytes_per_key,
            Some(bytes as u64),
            "{}: {m:?}",
            a.name
        );
    }
}

/// The summary names the worst key: the first to reach the largest trailing-window
/// count, unless the key the series follows (the first admitted) reaches it too, in
/// which case the series' key is named, so the table and the chart agree.
#[test]
fn the_worst_key_is_the_first_to_reach_the_maximum_or_the_charted_key_on_a_tie() {
    let dir = tempfile::tempdir().unwrap();
    let s = 1_000_000_000;
    // k0 is admitted first, once; k1 twice: k1 is the worst, and the series redrawn.
    let one_worse = [(0, 0, 1), (s, 1, 1), (2 * s, 1, 1)];
    // k1 reaches 2 first, then k0 ties it: the charted k0 is named.
    let a_tie = [(0, 0, 1), (s, 1, 1), (2 * s, 1, 1), (3 * s, 0, 1)];
    // Requests that cost nothing are admitted but count for nothing: no key is worst.
    let costless = [(0, 0, 0), (s, 1, 0)];
    let sc = trace_scenario(dir.path(), &costless, 3, 10 * s, "");
    let (report, _) = run_capturing(&sc, 1);
    for a in &report.algorithms {
        let m = &a.metrics;
        assert_eq!((m.allowed, m.max_in_window), (2, 0), "{}: {m:?}", a.name);
        assert_eq!(m.worst_key, None, "{}: {m:?}", a.name);
    }
    for (rows, worst) in [(&one_worse[..], "k1"), (&a_tie[..], "k0")] {
        let sc = trace_scenario(dir.path(), rows, 3, 10 * s, "");
        let (report, _) = run_capturing(&sc, 1);
        for a in &report.algorithms {
            let m = &a.metrics;
            assert_eq!(m.max_in_window, 2, "{}: {m:?}", a.name);
            assert_eq!(m.worst_key.as_deref(), Some(worst), "{}: {rows:?}", a.name);
            assert_eq!(a.window_key.as_deref(), Some(worst), "{}: {rows:?}", a.name);
        }
    }
}

/// The allow rate is admissions over attempts and the denied share first attempts
/// denied over requests; a run in which nothing arrives has neither.
#[test]
fn the_allow_rate_and_denied_share_are_ratios_of_the_counts_and_absent_without_requests() {
    let dir = tempfile::tempdir().unwrap();
    let s = 1_000_000_000;
    // 2 per 10 s: 5 requests at once, 2 admitted; the retry client retries 3 at 10 s
    // (2 admitted) and gives the last one up at its second denial.
    let rows = [(0, 0, 1), (0, 0, 1), (0, 0, 1), (0, 0, 1), (0, 0, 1)];
    let client = "[client]\nkind = \"retry\"\nmax_retries = 1\n";
    for (client, allow_rate, share) in [("", 2.0 / 5.0, 3.0 / 5.0), (client, 4.0 / 8.0, 3.0 / 5.0)]
    {
        let sc = trace_scenario(dir.path(), &rows, 2, 10 * s, client);
        let (report, _) = run_capturing(&sc, 1);
        let a = report
            .algorithms
            .iter()
            .find(|a| a.name == "fixed_window")
            .unwrap();
        let m = &a.metrics;
        assert_eq!(m.allow_rate, Some(allow_rate), "{client:?}: {m:?}");
        assert_eq!(m.requests_denied_share, Some(share), "{client:?}: {m:?}");
    }
    let sc = trace_scenario(dir.path(), &[], 2, 10 * s, "");
    let (report, _) = run_capturing(&sc, 1);
    for a in &report.algorithms {
        let m = &a.metrics;
        assert_eq!((m.attempts, m.requests), (0, 0), "{}", a.name);
        assert_eq!(
            (m.allow_rate, m.requests_denied_share),
            (None, None),
            "{}",
            a.name
        );
    }
}

/// A sink that fails when flushed fails the run, naming the algorithm: a decisions
/// file that could not be completed is never reported as written.
#[test]
fn a_sink_that_fails_to_flush_fails_the_run_and_names_the_algorithm() {
    struct FailsToFlush;
    impl ratesim::sim::DecisionSink for FailsToFlush {
        fn record(&mut self, _row: &ratesim::sim::DecisionRow<'_>) -> std::io::Result<()> {
            Ok(())
        }
        fn finish(&mut self) -> std::io::Result<()> {
            Err(std::io::Error::other("disk full"))
        }
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/burst.toml");
    let mut sc = load(&path);
    sc.set_algorithms(&["gcra"], ratesim::Registry::builtin())
        .unwrap();
    let options = ratesim::sim::RunOptions {
        threads: 1,
        ..Default::default()
    };
    let error = ratesim::sim::run(&sc, &options, &mut |_| Ok(Box::new(FailsToFlush)))
        .expect_err("the flush failed");
    assert_eq!(
        error.to_string(),
        "cannot record the decisions of gcra: disk full"
    );
}

/// A sweep due at the very instant of an arrival runs before that arrival is decided:
/// key `a` (1 s) is idle at 10 s for the buckets, the fixed window (a new window) and
/// GCRA, so the sweep at 10 s forgets it before `b` arrives at 10 s and they never
/// hold 2 keys. The sliding log still counts `a` until 11 s and holds both.
#[test]
fn a_sweep_due_at_an_arrivals_instant_runs_before_the_arrival() {
    let dir = tempfile::tempdir().unwrap();
    let s = 1_000_000_000;
    write_trace(dir.path(), &[(s, 0, 1), (10 * s, 1, 1)]);
    let text = "name = \"p\"\nduration = \"20s\"\n[limit]\nmax_requests = 3\nwindow = \"10s\"\n\
                [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n";
    let mut sc = parse_at(text, &dir.path().join("p.toml"));
    sc.set_algorithms(
        &[
            "token_bucket",
            "leaky_bucket",
            "fixed_window",
            "gcra",
            "sliding_window_log",
        ],
        ratesim::Registry::builtin(),
    )
    .unwrap();
    let (report, _) = run_capturing(&sc, 1);
    for a in &report.algorithms {
        let expected = if a.name == "sliding_window_log" { 2 } else { 1 };
        assert_eq!(a.metrics.peak_keys, expected, "{}: {:?}", a.name, a.metrics);
    }
}

/// A retry due at the very instant of a new arrival is decided first (it was scheduled
/// earlier): under 1 per 10 s, the retry of the 1 s request takes the place at 10 s and
/// the request arriving at 10 s is denied, then admitted on its own retry at 20 s.
#[test]
fn a_retry_due_at_an_arrivals_instant_is_decided_before_the_arrival() {
    let (_dir, s) = one_retry_on_trace("time_s,key\n0,solo\n1,solo\n10,solo\n", "30s");
    let (_, parts) = run_capturing(&s, 1);
    let attempts: Vec<(u64, u32, u64, bool)> = parts[0]
        .iter()
        .map(|r| (r.seq, r.attempt, r.time.as_u64() / 1_000_000_000, r.allowed))
        .collect();
    // (seq, attempt, time in seconds, allowed)
    assert_eq!(
        attempts,
        [
            (0, 0, 0, true),
            (1, 0, 1, false),
            (1, 1, 10, true),
            (2, 0, 10, false),
            (2, 1, 20, true),
        ]
    );
}

#[test]
fn the_run_report_describes_the_deployment_it_simulated() {
    // `run.json`'s `deployment` names the store and carries only the settings that
    // store has: the sync interval for a synced store, whose clock for a shared one.
    let report = |deployment: &str| {
        let text = format!(
            "name = \"d\"\nduration = \"2s\"\nalgorithms = [\"sliding_window_log\"]\n\
             [limit]\nmax_requests = 5\nwindow = \"1s\"\n\
             [[traffic]]\nkind = \"uniform\"\nrate = 4\n\
             [deployment]\nnodes = 2\n{deployment}"
        );
        run_quiet(&parse_at(&text, Path::new("d.toml")))
            .deployment
            .expect("a deployment is reported")
    };
    let synced = report(
        "store = \"synced\"\nsync_interval = \"250ms\"\nclock_skew = \"7ms\"\nlatency = \"3ms\"",
    );
    assert_eq!(
        (synced.nodes, synced.store.as_str(), synced.latency_ns),
        (2, "synced", 3_000_000)
    );
    assert_eq!(synced.clock_skew_ns, 7_000_000);
    assert_eq!(synced.sync_interval_ns, Some(250_000_000));
    assert_eq!(synced.clock, None);
    let by_store = report("store = \"shared\"\nclock = \"store\"");
    assert_eq!(
        (by_store.store.as_str(), by_store.sync_interval_ns),
        ("shared", None)
    );
    assert_eq!(by_store.clock.as_deref(), Some("store"));
    let by_node = report("store = \"shared\"\nclock = \"node\"");
    assert_eq!(by_node.clock.as_deref(), Some("node"));
    let local = report("store = \"local\"");
    assert_eq!((local.sync_interval_ns, local.clock), (None, None));
}

#[test]
fn each_nodes_allowed_and_denied_split_its_attempts_and_sum_to_the_algorithms_counts() {
    // Two nodes behind a round robin, each with its own limiter, under twice the
    // limit's rate: both admit some and deny some, and the nodes' rows add up to the
    // summary's counts.
    let text = "name = \"d\"\nduration = \"10s\"\nalgorithms = [\"all\"]\n\
                [limit]\nmax_requests = 4\nwindow = \"1s\"\n\
                [[traffic]]\nkind = \"uniform\"\nrate = 16\n\
                [deployment]\nnodes = 2\nstore = \"local\"\n";
    let report = run_quiet(&parse_at(text, Path::new("d.toml")));
    for a in &report.algorithms {
        assert_eq!(a.nodes.len(), 2, "{}", a.name);
        for n in &a.nodes {
            assert_eq!(n.allowed + n.denied, n.attempts, "{}: {n:?}", a.name);
            assert!(n.allowed > 0 && n.denied > 0, "{}: {n:?}", a.name);
        }
        let sum = |f: fn(&ratesim::sim::NodeReport) -> u64| a.nodes.iter().map(f).sum::<u64>();
        assert_eq!(
            (sum(|n| n.attempts), sum(|n| n.allowed), sum(|n| n.denied)),
            (a.metrics.attempts, a.metrics.allowed, a.metrics.denied),
            "{}",
            a.name
        );
    }
}

#[test]
fn the_chart_key_chooses_the_client_the_window_series_follows_and_must_have_sent_something() {
    let dir = tempfile::tempdir().unwrap();
    let s = 1_000_000_000;
    // k0 arrives first (the client the first pass follows), k2 twice, k1 once.
    let rows = [(0, 0, 1), (s, 1, 1), (2 * s, 2, 1), (3 * s, 2, 1)];
    for (key, peak) in [("k0", 1), ("k2", 2), ("k1", 1)] {
        let mut sc = trace_scenario(dir.path(), &rows, 3, 10 * s, "");
        sc.chart_key = Some(key.to_string());
        let (report, _) = run_capturing(&sc, 1);
        for a in &report.algorithms {
            assert_eq!(a.window_key.as_deref(), Some(key), "{}", a.name);
            let highest = a.window_counts.iter().map(|w| w.count).max();
            assert_eq!(
                highest,
                Some(peak),
                "{} {key}: {:?}",
                a.name,
                a.window_counts
            );
        }
    }
    let mut sc = trace_scenario(dir.path(), &rows, 3, 10 * s, "");
    sc.chart_key = Some("k9".to_string());
    let refused = ratesim::sim::run(&sc, &RunOptions::default(), &mut |_| Ok(Box::new(NoopSink)));
    match refused {
        Err(SimError::UnknownKey { key, hint }) => {
            assert_eq!(key, "k9");
            assert_eq!(hint, "did you mean `k0`, `k1`, `k2`?");
        }
        other => panic!("expected UnknownKey, got {other:?}"),
    }
}

/// Every `(done, total)` a run reports through `RunOptions::progress`.
fn progress_of(scenario: &Scenario, threads: usize) -> Vec<(u64, u64)> {
    let seen = std::sync::Mutex::new(Vec::new());
    let callback = |done, total| seen.lock().unwrap().push((done, total));
    let options = RunOptions {
        threads,
        progress: Some(&callback),
        ..RunOptions::default()
    };
    ratesim::sim::run(scenario, &options, &mut |_| Ok(Box::new(NoopSink))).unwrap();
    seen.into_inner().unwrap()
}

#[test]
fn progress_follows_simulated_time_every_4096_decisions_and_ends_at_the_total() {
    // 4,096 arrivals a second for 10 s, one algorithm: after the k-th 4,096 decisions
    // the simulated clock is at k seconds (less one arrival's gap), a tenth of the run:
    // 100·k of the algorithm's 1,000 units.
    let text = "name = \"p\"\nduration = \"10s\"\nalgorithms = [\"token_bucket\"]\n\
                [limit]\nmax_requests = 5\nwindow = \"1s\"\n\
                [[traffic]]\nkind = \"uniform\"\nrate = 4096\n";
    let sc = parse_at(text, Path::new("p.toml"));
    let seen = progress_of(&sc, 1);
    assert!(seen.iter().all(|&(_, total)| total == 1_000), "{seen:?}");
    assert_eq!(seen.last(), Some(&(1_000, 1_000)), "{seen:?}");
    let steps: Vec<u64> = seen[..seen.len() - 1].iter().map(|s| s.0).collect();
    assert!((9..=10).contains(&steps.len()), "{seen:?}");
    for (k, &done) in (1..).zip(&steps) {
        assert!(done.abs_diff(100 * k) <= 1, "report {k}: {seen:?}");
    }
    // Six algorithms on two threads: each brings its 1,000 units, and the run ends at
    // their sum.
    let mut all = sc.clone();
    all.algorithms = ALL.iter().map(|a| a.to_string()).collect();
    let seen = progress_of(&all, 2);
    assert!(seen.iter().all(|&(_, total)| total == 6_000), "{seen:?}");
    assert_eq!(seen.iter().map(|s| s.0).max(), Some(6_000), "{seen:?}");
    assert!(seen.len() >= 6 * 10, "{} reports", seen.len());
}

#[test]
fn run_options_debug_shows_every_setting() {
    let callback = |_, _| {};
    let options = RunOptions {
        threads: 3,
        progress: Some(&callback),
        ..RunOptions::default()
    };
    let shown = format!("{options:?}");
    for part in [
        "RunOptions",
        "threads: 3",
        "progress: true",
        "registry:",
        "store: Memory",
    ] {
        assert!(shown.contains(part), "{part} in {shown}");
    }
}

/// Reports name a rule `max_requests/window` with the window in its shortest exact
/// unit (`RuleReport::label`): the summary's `rule` column and each rule's row.
#[test]
fn a_rule_is_named_by_its_requests_over_its_window() {
    let text = "name = \"labels\"\nduration = \"20s\"\nalgorithms = [\"gcra\"]\n\
                [[limit]]\nmax_requests = 10\nwindow = \"1s\"\n\
                [[limit]]\nmax_requests = 30\nwindow = \"90s\"\n\
                [[traffic]]\nkind = \"uniform\"\nrate = 5\n";
    let scenario = parse_at(text, Path::new("labels.toml"));
    let report = run_quiet(&scenario);
    assert_eq!(report.rule.label(), "10/1s");
    let m = &report.algorithms[0].metrics;
    assert_eq!(m.rule, "10/1s");
    let labels: Vec<&str> = m.rules.iter().map(|r| r.rule.as_str()).collect();
    assert_eq!(labels, ["10/1s", "30/90s"]);
    // Each rule's over-admission is its own count over its own limit.
    for (rule, max) in m.rules.iter().zip([10.0, 30.0]) {
        assert_eq!(
            rule.over_admission,
            rule.max_in_window as f64 / max,
            "{}",
            rule.rule
        );
    }
    assert!(m.rules[1].max_in_window > 0);
}

/// With one rule, every denial's row names it, whatever the algorithm: the one rule
/// there is, even where the decision does not say which rule denied.
#[test]
fn with_one_rule_every_denial_names_it() {
    let text = "name = \"one\"\nduration = \"5s\"\nalgorithms = [\"all\"]\n\
                [limit]\nmax_requests = 3\nwindow = \"1s\"\n\
                [[traffic]]\nkind = \"uniform\"\nrate = 10\n";
    let (_, decisions) = run_capturing(&parse_at(text, Path::new("one.toml")), 1);
    let mut denials = 0;
    for r in decisions.iter().flatten() {
        let want = (!r.allowed).then(|| "3/1s".to_string());
        assert_eq!(r.denied_by, want, "{} at {}", r.algorithm, r.time);
        denials += usize::from(!r.allowed);
    }
    assert!(denials > 100, "{denials} denials");
}

/// A request costlier than a rule's capacity never fits, and its row names that rule,
/// for every algorithm, whichever `[[limit]]` it is: 5 permits against 10 and 3 per
/// second, in both orders.
#[test]
fn a_request_that_never_fits_names_the_rule_it_exceeds() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.csv"),
        "time_s,key,cost\n0,c,1\n0.5,c,5\n1,c,1\n",
    )
    .unwrap();
    let (wide, tight) = (
        "[[limit]]\nmax_requests = 10\nwindow = \"1s\"\n",
        "[[limit]]\nmax_requests = 3\nwindow = \"1s\"\n",
    );
    for limits in [format!("{wide}{tight}"), format!("{tight}{wide}")] {
        let text = format!(
            "name = \"never\"\nduration = \"2s\"\nalgorithms = [\"all\"]\n{limits}\
             [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n"
        );
        let (_, decisions) = run_capturing(&parse_at(&text, &dir.path().join("never.toml")), 1);
        assert_eq!(decisions.len(), 6);
        for rows in &decisions {
            let costly: Vec<_> = rows.iter().filter(|r| r.cost == 5).collect();
            assert_eq!(costly.len(), 1, "{}", rows[0].algorithm);
            let r = costly[0];
            assert!(!r.allowed && r.retry_after.is_none(), "{}", r.algorithm);
            assert_eq!(
                r.denied_by.as_deref(),
                Some("3/1s"),
                "{}: {limits}",
                r.algorithm
            );
        }
    }
}
