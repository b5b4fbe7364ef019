//! Bundled scenarios, scenario errors and trace replay.

mod sim_support;

use std::path::Path;

use ratesim::Nanos;
use ratesim::presets::NginxParams;
use ratesim::sim::{ArrivalStream, ClientModel, Scenario};
use ratesim::{Algorithm, Registry};
use sim_support::*;

#[test]
fn every_bundled_scenario_validates_and_carries_a_description() {
    let files = bundled();
    assert!(files.len() >= 7, "bundled scenarios: {files:?}");
    for path in files {
        let s = load(&path);
        s.validate().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            s.description.len() > 40,
            "{}: description too thin",
            path.display()
        );
    }
}

#[test]
fn the_sliding_log_never_exceeds_the_limit_on_any_bundled_scenario() {
    for path in bundled() {
        let mut s = load(&path);
        // On one server; what deployments do to the bound is tests/sim_deployment.rs'.
        s.deployment = None;
        s.set_algorithms(&["sliding_window_log"], ratesim::Registry::builtin())
            .unwrap();
        let m = &run_quiet(&s).algorithms[0].metrics;
        assert!(m.allowed > 0, "{}: nothing was admitted", path.display());
        assert!(
            m.over_admission <= 1.0 && m.excess == 0,
            "{}: sliding log over_admission {} excess {}",
            path.display(),
            m.over_admission,
            m.excess
        );
    }
}

#[test]
fn the_fixed_window_admits_exactly_twice_the_limit_on_burst_toml() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/burst.toml");
    let mut s = load(&path);
    s.set_algorithms(&["fixed_window"], ratesim::Registry::builtin())
        .unwrap();
    let report = run_quiet(&s);
    let fw = &report.algorithms[0];
    assert_eq!(fw.metrics.over_admission, 2.0, "{:?}", fw.metrics);
    assert_eq!(fw.metrics.max_in_window, 2 * s.rule.max_requests());
    let peak = fw.window_counts.iter().map(|w| w.count).max();
    assert_eq!(
        peak,
        Some(2 * s.rule.max_requests()),
        "the chart shows the spike"
    );
}

#[test]
fn buckets_never_exceed_burst_plus_max_minus_one_over_max_on_any_bundled_scenario() {
    for path in bundled() {
        let mut s = load(&path);
        s.deployment = None; // the one-server bound
        s.set_algorithms(
            &["token_bucket", "leaky_bucket", "gcra"],
            ratesim::Registry::builtin(),
        )
        .unwrap();
        let (max, burst) = (s.rule.max_requests(), s.rule.burst());
        let bound = (burst + max - 1) as f64 / max as f64;
        for a in run_quiet(&s).algorithms {
            assert!(
                a.metrics.over_admission <= bound,
                "{} on {}: {} > {bound}",
                a.name,
                path.display(),
                a.metrics.over_admission
            );
        }
    }
}

#[test]
fn every_built_in_retry_after_is_exact_on_every_bundled_scenario() {
    for path in bundled() {
        for a in run_quiet(&load(&path)).algorithms {
            let m = &a.metrics;
            assert_eq!(
                (m.retry_after_too_early, m.retry_after_too_late),
                (0, 0),
                "{} on {}: {} exact",
                a.name,
                path.display(),
                m.retry_after_exact
            );
            assert_eq!(
                m.retry_after_secs_too_early, 0,
                "{}: a rounded-up header is never early",
                a.name
            );
        }
    }
}

#[test]
fn trace_replay_reproduces_the_trace_to_the_nanosecond() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/trace_replay.toml");
    let s = load(&path);
    let text = std::fs::read_to_string(path.parent().unwrap().join("traces/sample.csv")).unwrap();
    let expected: Vec<(Nanos, String, u64)> = text
        .lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let time = Nanos::parse_decimal_secs(f[0]).unwrap();
            (
                time,
                f[1].to_string(),
                f.get(2).map_or(1, |c| c.parse().unwrap()),
            )
        })
        .filter(|(t, _, _)| *t < s.duration)
        .collect();
    assert!(expected.iter().any(|(t, _, _)| t.as_u64() == 2_000_000_001));
    let (_, parts) = run_capturing(&s, 1);
    for rows in parts {
        let got: Vec<(Nanos, String, u64)> = rows
            .iter()
            .map(|r| (r.time, r.key.clone(), r.cost))
            .collect();
        assert_eq!(got, expected, "{}", rows[0].algorithm);
        let seqs: Vec<u64> = rows.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, (0..expected.len() as u64).collect::<Vec<_>>());
    }
}

const BASE: &str =
    "name = \"t\"\nduration = \"10s\"\n[limit]\nmax_requests = 5\nwindow = \"10s\"\n";

fn error_of(text: &str) -> String {
    match Scenario::parse(text, Path::new("dir/bad.toml")) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn scenario_errors_name_the_file_line_and_column_and_what_was_expected() {
    let cases = [
        // (text appended to BASE, expected prefix, expected words)
        (
            "[[traffic]]\nkind = \"poisson\"\nrate = 1\ncolour = 3\n",
            "dir/bad.toml:9:1: ",
            "colour",
        ),
        (
            "[[traffic]]\nkind = \"poison\"\nrate = 1\n",
            "dir/bad.toml:7:8: ",
            "expected one of",
        ),
        (
            "[[traffic]]\nkind = \"poisson\"\nrate = 1\nsize = 3\n",
            "dir/bad.toml:9:8: ",
            "does not apply",
        ),
        (
            "[[traffic]]\nkind = \"poisson\"\nrate = -2\n",
            "dir/bad.toml:8:8: ",
            "negative",
        ),
        (
            "[[traffic]]\nkind = \"poisson\"\nrate = 0\n",
            "dir/bad.toml:8:8: ",
            "above zero",
        ),
        (
            "[[traffic]]\nkind = \"uniform\"\n",
            "dir/bad.toml:7:8: ",
            "needs `rate`",
        ),
        (
            "[[traffic]]\nkind = \"uniform\"\nrate = 1\n[client]\nkind = \"open\"\nmax_retries = 2\n",
            "dir/bad.toml:11:15: ",
            "only to kind = \"retry\"",
        ),
    ];
    for (tail, prefix, words) in cases {
        let err = error_of(&format!("{BASE}{tail}"));
        assert!(err.starts_with(prefix), "expected {prefix}…, got: {err}");
        assert!(err.contains(words), "expected {words:?} in: {err}");
    }
}

#[test]
fn a_client_table_without_kind_means_open_clients_as_documented() {
    let traffic = "[[traffic]]\nkind = \"uniform\"\nrate = 1\n";
    let s = Scenario::parse(
        &format!("{BASE}{traffic}[client]\n"),
        Path::new("dir/ok.toml"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.client, ClientModel::Open);
    // Retry settings without `kind = "retry"` are open-client mistakes, at the field.
    let err = error_of(&format!("{BASE}{traffic}[client]\nmax_retries = 2\n"));
    assert!(
        err.starts_with("dir/bad.toml:10:15: ") && err.contains("only to kind = \"retry\""),
        "{err}"
    );
}

#[test]
fn a_limit_given_twice_names_the_key_and_the_two_forms() {
    let head = "name = \"t\"\nduration = \"10s\"\n";
    let rule = "max_requests = 5\nwindow = \"1s\"\n";
    let traffic = "[[traffic]]\nkind = \"uniform\"\nrate = 1\n";
    for (first, second, col) in [
        ("[limit]", "[[limit]]", 3),
        ("[[limit]]", "[limit]", 2),
        ("[limit]", "[limit]", 2),
    ] {
        let err = error_of(&format!("{head}{first}\n{rule}{second}\n{rule}{traffic}"));
        assert_eq!(
            err,
            format!(
                "dir/bad.toml:6:{col}: `limit` is given twice; choose one form: \
                 `[limit]` for one rule, or `[[limit]]` tables for several"
            ),
            "{first} then {second}"
        );
    }
    // Any other key given twice is named too.
    let err = error_of(&format!("{head}[limit]\n{rule}window = \"2s\"\n{traffic}"));
    assert_eq!(
        err,
        "dir/bad.toml:6:1: `window` is given twice; a key may appear only once in its table"
    );
    let err = error_of(&format!(
        "{head}[limit]\n{rule}{traffic}[traffic]\nkind = \"uniform\"\n"
    ));
    assert_eq!(
        err,
        "dir/bad.toml:9:2: `traffic` is given twice; write every source as a `[[traffic]]` table"
    );
}

#[test]
fn a_boundary_burst_that_does_not_fit_states_the_rule_at_the_field_at_fault() {
    let burst = "[[traffic]]\nkind = \"boundary_burst\"\nsize = 2\n";
    let rule = "boundary bursts need 2 × spread + 1ns < period";
    // The spread is too wide for the window (the period when none is set).
    assert_eq!(
        error_of(&format!("{BASE}{burst}spread = \"5s\"\n")),
        format!(
            "dir/bad.toml:9:10: `spread` of 5s is too wide for a period of 10s (the window; \
             `period` is not set): {rule}, so a spread of at most 4.999999999s"
        )
    );
    // An explicit period too short for any burst, with and without a spread.
    assert_eq!(
        error_of(&format!("{BASE}{burst}period = \"0s\"\n")),
        format!(
            "dir/bad.toml:9:10: `period` of 0s is too short for a spread of 0s: {rule}, \
             so a period of at least 2ns"
        )
    );
    assert_eq!(
        error_of(&format!(
            "{BASE}{burst}spread = \"2ns\"\nperiod = \"1ns\"\n"
        )),
        format!(
            "dir/bad.toml:10:10: `period` of 1ns is too short for a spread of 2ns: {rule}, \
             so a period of at least 6ns"
        )
    );
    // A spread that fits its explicit period is fine, whatever the window.
    let ok = format!("{BASE}{burst}spread = \"1s\"\nperiod = \"3s\"\n");
    Scenario::parse(&ok, Path::new("dir/ok.toml")).unwrap_or_else(|e| panic!("{e}"));
    // A window too short to be the period, with no period set: at the source's kind.
    assert_eq!(
        error_of(&format!(
            "{}{burst}",
            BASE.replace("window = \"10s\"", "window = \"1ns\"")
        )),
        format!(
            "dir/bad.toml:7:8: the window of 1ns is too short to be the boundary bursts' \
             period (spread 0s; `period` is not set): {rule}; use a window of at least 2ns \
             or set `period`"
        )
    );
}

/// Each message says once what was expected, in words: no Rust type names, no
/// "expected" twice, and a number too large is called too large.
#[test]
fn bad_numbers_and_durations_say_once_what_was_expected_in_words() {
    let traffic = "[[traffic]]\nkind = \"uniform\"\nrate = 1\n";
    let with = |from: &str, to: &str| error_of(&format!("{}{traffic}", BASE.replace(from, to)));
    let window = |value: &str| with("window = \"10s\"", &format!("window = {value}"));
    let like = "a number of seconds or a duration like \"10s\", \"250ms\", \"1m\"";
    let whole = "a whole number from 0 to 18446744073709551615";
    let cases = [
        (
            window("\"-10s\""),
            "dir/bad.toml:5:10: `-10s` is negative; expected a duration of zero or more"
                .to_string(),
        ),
        (
            window("\"\""),
            format!("dir/bad.toml:5:10: empty duration; expected {like}"),
        ),
        (
            window("\"1_000ms\""),
            format!("dir/bad.toml:5:10: `1_000ms` is not a duration; expected {like}"),
        ),
        (
            window("1e400"),
            "dir/bad.toml:5:10: `1e400` is too large for a number (it overflows a 64-bit float)"
                .to_string(),
        ),
        (
            window(&format!("1{}", "0".repeat(40))),
            format!(
                "dir/bad.toml:5:10: `1{}` is too large for a number (it overflows 128 bits)",
                "0".repeat(40)
            ),
        ),
        (
            window("99999999999999999999999"),
            "dir/bad.toml:5:10: `99999999999999999999999` is too large (the limit is about 584 \
             years)"
                .to_string(),
        ),
        (
            with("max_requests = 5", "max_requests = -5"),
            format!("dir/bad.toml:4:16: `-5` is negative; expected {whole}"),
        ),
        (
            with("max_requests = 5", "max_requests = 2.5"),
            format!("dir/bad.toml:4:16: `2.5` is not a whole number; expected {whole}"),
        ),
        (
            with("max_requests = 5", "max_requests = \"5\""),
            format!("dir/bad.toml:4:16: found the string \"5\"; expected {whole}, without quotes"),
        ),
        (
            with("max_requests = 5", "max_requests = 99999999999999999999999"),
            "dir/bad.toml:4:16: `99999999999999999999999` is too large (at most \
             18446744073709551615)"
                .to_string(),
        ),
        (
            error_of(&format!("{BASE}{traffic}cost = 99999999999999999999999\n")),
            "dir/bad.toml:9:8: `99999999999999999999999` is too large (at most \
             18446744073709551615)"
                .to_string(),
        ),
        (
            error_of(&format!("{BASE}{traffic}keys = -1\n")),
            format!("dir/bad.toml:9:8: `-1` is negative; expected {whole}"),
        ),
        (
            error_of(&format!("seed = -1\n{BASE}{traffic}")),
            format!("dir/bad.toml:1:8: `-1` is negative; expected {whole}"),
        ),
        (
            error_of(&format!(
                "{BASE}{traffic}[client]\nkind = \"retry\"\nmax_retries = -1\n"
            )),
            "dir/bad.toml:11:15: `-1` is negative; expected a whole number from 0 to 4294967295"
                .to_string(),
        ),
        (
            error_of(&format!(
                "{BASE}{traffic}[client]\nkind = \"retry\"\nmax_retries = 4294967296\n"
            )),
            "dir/bad.toml:11:15: `4294967296` is too large (at most 4294967295)".to_string(),
        ),
        (
            error_of(&format!(
                "{BASE}{}",
                traffic.replace("rate = 1", "rate = -3")
            )),
            "dir/bad.toml:8:8: `-3` is negative; expected a number of requests per second, \
             like 2 or 0.5, or a multiple of the limit's rate, like \"2x\""
                .to_string(),
        ),
        (
            error_of(&format!(
                "{BASE}{}",
                traffic.replace("rate = 1", "rate = \"fast\"")
            )),
            "dir/bad.toml:8:8: `fast` is not a number; expected a number of requests per \
             second, like 2 or 0.5, or a multiple of the limit's rate, like \"2x\""
                .to_string(),
        ),
    ];
    for (got, expected) in cases {
        assert_eq!(got, expected);
    }
}

#[test]
fn a_name_that_cannot_be_a_folder_says_why() {
    let traffic = "[[traffic]]\nkind = \"uniform\"\nrate = 1\n";
    let named = |name: &str| error_of(&format!("{}{traffic}", BASE.replace("\"t\"", name)));
    let folder = "it names the output folder (output/<name>)";
    assert_eq!(
        named("\"..\""),
        format!(
            "dir/bad.toml:1:8: `..` cannot be a name: {folder}, and `..` means the parent folder"
        )
    );
    assert_eq!(
        named("\".\""),
        format!(
            "dir/bad.toml:1:8: `.` cannot be a name: {folder}, and `.` means the current folder"
        )
    );
    assert_eq!(
        named("\"a/b\""),
        format!(
            "dir/bad.toml:1:8: `a/b` cannot be a name: {folder}, so it may hold only letters, \
             digits, '.', '_' and '-'"
        )
    );
    assert_eq!(
        named("\" \""),
        "dir/bad.toml:1:8: empty name; expected letters, digits, '.', '_' and '-' (it names \
         the output folder, output/<name>)"
    );
}

#[test]
fn unknown_fields_are_rejected_everywhere() {
    let traffic = "[[traffic]]\nkind = \"uniform\"\nrate = 1\n";
    for (text, field) in [
        (format!("{BASE}colour = 1\n{traffic}"), "colour"),
        (format!("{BASE}brust = 3\n{traffic}"), "brust"),
        (
            format!("{BASE}{traffic}[client]\nkind = \"retry\"\nretries = 2\n"),
            "retries",
        ),
    ] {
        let err = error_of(&text);
        assert!(
            err.contains(field) && err.contains("unknown field"),
            "{err}"
        );
        assert!(err.starts_with("dir/bad.toml:"), "{err}");
    }
}

#[test]
fn bad_durations_and_algorithms_point_at_their_value() {
    let traffic = "[[traffic]]\nkind = \"uniform\"\nrate = 1\n";
    let err = error_of(&format!(
        "{}{traffic}",
        BASE.replace("\"10s\"\n[limit]", "\"10 parsecs\"\n[limit]")
    ));
    assert!(
        err.starts_with("dir/bad.toml:2:12: ") && err.contains("unit"),
        "{err}"
    );
    let err = error_of(&format!(
        "algorithms = [\"gcra\", \"token_buckett\"]\n{BASE}{traffic}"
    ));
    assert!(
        err.starts_with("dir/bad.toml:1:23: ") && err.contains("token_bucket"),
        "{err}"
    );
    let err = error_of(&format!(
        "algorithms = [\"gcra\", \"token_buckett\"]\n{BASE}{traffic}"
    ));
    assert!(
        err.starts_with(
            "dir/bad.toml:1:23: unknown algorithm `token_buckett` (did you mean `token_bucket`?); \
             expected one of: token_bucket, leaky_bucket,"
        ),
        "{err}"
    );
    let err = error_of(&format!("algorithms = [\"gcra\", \"\"]\n{BASE}{traffic}"));
    assert!(
        err.starts_with("dir/bad.toml:1:23: empty algorithm name; expected one of: token_bucket,"),
        "{err}"
    );
}

#[test]
fn malformed_or_unsorted_traces_are_rejected_with_the_row_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let scenario_path = dir.path().join("s.toml");
    let text = format!("{BASE}[[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n");
    let cases = [
        ("0,a\n2,a\n1,b\n", ":3:", "earlier than the previous"),
        ("time_s,key\n0,a\n-1,b\n", ":3:", "negative"),
        ("0,a\nzero,b\n", ":2:", "bad time_s"),
        // Seconds only: no hint at durations like "10s", which a trace does not take.
        (
            "0,a\n1s,b\n",
            ":2:",
            "bad time_s: `1s` is not a number; expected decimal seconds like 1.5 (no unit)",
        ),
        (
            "0,a\n,b\n",
            ":2:",
            "bad time_s: empty; expected decimal seconds like 1.5",
        ),
        ("0,a,1\n1,a,x\n", ":2:", "bad cost"),
        ("0,a\n1\n", ":2:", "found 1 field"),
        (
            "0,a,99999999999999999999\n",
            ":1:",
            "bad cost: `99999999999999999999` is too large (at most 18446744073709551615)",
        ),
        ("0,a\n0.0000000001,b\n", ":2:", "finer than one nanosecond"),
    ];
    for (csv, line, words) in cases {
        std::fs::write(dir.path().join("t.csv"), csv).unwrap();
        let s = parse_at(&text, &scenario_path);
        let err = s.validate().unwrap_err().to_string();
        assert!(err.contains(&format!("t.csv{line}")), "{csv:?}: {err}");
        assert!(err.contains(words), "{csv:?}: {err}");
        // The run reports the same problem instead of panicking.
        let run_err = ratesim::sim::run(&s, &Default::default(), &mut |_| {
            Ok(Box::new(ratesim::sim::NoopSink))
        })
        .unwrap_err();
        assert_eq!(run_err.to_string(), err);
    }
    for (csv, found) in [("0,a\n1\n", "1 field"), ("0,a\n1,a,1,x\n", "4 fields")] {
        std::fs::write(dir.path().join("t.csv"), csv).unwrap();
        let err = parse_at(&text, &scenario_path).validate().unwrap_err();
        assert_eq!(
            err.message,
            format!("expected `time_s,key[,cost]`, found {found}"),
            "{csv:?}"
        );
    }
    let missing = parse_at(&text.replace("t.csv", "nope.csv"), &scenario_path);
    assert!(
        missing
            .validate()
            .unwrap_err()
            .to_string()
            .contains("nope.csv: cannot open")
    );
}

#[test]
fn the_expected_arrival_count_is_close_to_what_each_bundled_scenario_sends() {
    for path in bundled() {
        let s = load(&path);
        let mut stream = ArrivalStream::new(&s).unwrap();
        let mut actual = 0u128;
        while stream.next_arrival().unwrap().is_some() {
            actual += 1;
        }
        let expected = s.expected_arrivals();
        let name = path.display();
        if path.ends_with("trace_replay.toml") || path.ends_with("nginx_log.toml") {
            assert_eq!(expected, 0, "{name}: traces are not counted");
        } else if path.ends_with("uniform.toml") {
            assert_eq!(expected, actual, "{name}: uniform is exact");
        } else {
            // Random sources and burst halves cut off at the end: within 10%.
            assert!(
                expected.abs_diff(actual) * 10 <= actual,
                "{name}: expected about {expected}, sent {actual}"
            );
        }
    }
}

#[test]
fn arrivals_come_in_time_order_across_sources() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/poisson.toml");
    let mut s = load(&path);
    s.traffic.push(s.traffic[0].clone());
    s.seed = 99;
    let mut stream = ArrivalStream::new(&s).unwrap();
    let mut last = Nanos::ZERO;
    let mut n = 0;
    while let Some((seq, a)) = stream.next_arrival().unwrap() {
        assert!(
            a.time >= last,
            "arrival {seq} at {:?} before {last:?}",
            a.time
        );
        assert_eq!(seq, n);
        last = a.time;
        n += 1;
    }
    assert!(n > 1000);
}

/// The boundary lesson with several clients: each of the 3 sends a full quota on each
/// side of every boundary, so each sees the fixed window admit twice the limit in a
/// nanosecond, as one client would. (Before, `size` was split at random across the
/// clients, none reached the limit, and every algorithm showed 0.83× without a word.)
#[test]
fn a_three_client_boundary_burst_at_the_limit_shows_the_fixed_window_at_twice_it() {
    let text = r#"
        name = "burst3"
        duration = "60s"
        algorithms = ["fixed_window", "sliding_window_log", "token_bucket"]
        [limit]
        max_requests = 5
        window = "10s"
        [[traffic]]
        kind = "boundary_burst"
        size = 5
        keys = 3
    "#;
    let report = run_quiet(&parse_at(text, Path::new("burst3.toml")));
    let over: Vec<(String, f64)> = report
        .algorithms
        .iter()
        .map(|a| (a.name.clone(), a.metrics.over_admission))
        .collect();
    assert_eq!(
        over,
        [
            ("fixed_window".to_string(), 2.0),
            ("sliding_window_log".to_string(), 1.0),
            ("token_bucket".to_string(), 1.0)
        ]
    );
    // Every client got its quota: 3 × 5 admitted at each boundary's first half by the log.
    let log = &report.algorithms[1].metrics;
    assert_eq!(log.allowed, 3 * 30, "{log:?}");
}

#[test]
fn key_popularity_on_a_boundary_burst_is_an_error_at_that_field() {
    let text = "name = \"b\"\nduration = \"30s\"\n[limit]\nmax_requests = 5\nwindow = \"10s\"\n\
                [[traffic]]\nkind = \"boundary_burst\"\nsize = 5\nkeys = 3\nkey_popularity = \"zipf\"\n";
    let err = Scenario::parse(text, Path::new("b.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("b.toml:10:18: `key_popularity` does not apply to boundary_burst"),
        "{err}"
    );
}

/// `rate = "2x"`: each client at twice the limit's rate, all together; it follows a new
/// limit, and a multiple that is zero, too fast or not a number is an error at the rate.
#[test]
fn a_rate_written_as_a_multiple_of_the_limit_follows_the_limit() {
    use ratesim::sim::{Rate, TrafficKind};
    use ratesim::{Nanos, Rule};
    let text = |rate: &str| {
        format!(
            "name = \"r\"\nduration = \"60s\"\n[limit]\nmax_requests = 10\nwindow = \"10s\"\n\
             [[traffic]]\nkind = \"uniform\"\nrate = {rate}\nkeys = 50\n"
        )
    };
    let rate_of = |s: &Scenario| match s.traffic[0].kind {
        TrafficKind::Uniform { rate } => rate.as_f64(),
        _ => unreachable!(),
    };
    let mut s = parse_at(&text("\"2x\""), Path::new("r.toml"));
    assert_eq!(rate_of(&s), 100.0, "2 x 50 clients x 1 per second");
    assert_eq!(s.expected_arrivals(), 6_000);
    s.set_rule(Rule::new(100, Nanos::from_secs(10)).unwrap())
        .unwrap();
    assert_eq!(rate_of(&s), 1_000.0, "the multiple follows the new limit");
    assert_eq!(
        rate_of(&parse_at(&text("\"0.5x\""), Path::new("r.toml"))),
        25.0
    );
    // A plain rate stays put.
    let mut plain = parse_at(&text("100"), Path::new("r.toml"));
    plain
        .set_rule(Rule::new(100, Nanos::from_secs(10)).unwrap())
        .unwrap();
    assert_eq!(rate_of(&plain), 100.0);
    assert_eq!(Rate::per_sec(100).map(Rate::as_f64), Some(100.0));
    let limited =
        |rate: &str, limit: &str| text(rate).replace("max_requests = 10\nwindow = \"10s\"", limit);
    for (text, message) in [
        (text("\"0x\""), "r.toml:8:8: expected a rate above zero"),
        (text("\"twox\""), "r.toml:8:8: `two` is not a number"),
        (
            limited("\"0.000000001x\"", "max_requests = 1\nwindow = \"1000d\""),
            "r.toml:8:8: 0.000000001x the limit of 1/1000d is under 10⁻⁹ requests per second",
        ),
        (
            limited(
                "\"1000000x\"",
                "max_requests = 18000000000000000000\nwindow = \"1ns\"",
            ),
            "r.toml:8:8: 1000000x the limit of 18000000000000000000/1ns for each of 50 clients is \
             more than about 18 billion requests per second",
        ),
    ] {
        let err = Scenario::parse(&text, Path::new("r.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(message), "{err}");
    }
}

/// A CSV trace given where a scenario belongs is called a trace, since the TOML error on
/// its first line would only puzzle; a scenario with a mistake keeps its own error,
/// whatever its first line holds (a key, a list with commas, a comment with commas).
#[test]
fn a_trace_loaded_as_a_scenario_is_named_a_trace_and_a_broken_scenario_keeps_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let load_err = |text: &str| {
        let path = dir.path().join("s.toml");
        std::fs::write(&path, text).unwrap();
        Scenario::load(&path).unwrap_err()
    };
    for trace in ["time_s,key\n0,a\n1,b\n", "0.5,a,2\n"] {
        let err = load_err(trace);
        assert_eq!(err.position, None, "{err}");
        assert!(
            err.message
                .starts_with("this looks like a CSV trace, not a scenario;"),
            "{trace:?}: {err}"
        );
    }
    for scenario in [
        "name = \"t\"\nduration = 10,\n",
        "algorithms = [\"gcra\", \"token_bucket\"]\nname = \"t\"\n",
        "# time_s, key: not a trace\nname = \"t\"\n",
        "[limit]\nmax_requests = 1, 2\n",
        "nonsense\n",
    ] {
        let err = load_err(scenario);
        assert!(
            err.position.is_some() && !err.message.contains("trace"),
            "{scenario:?}: {err}"
        );
    }
}

/// TOML has `inf` and `nan`; no duration or rate is either.
#[test]
fn an_infinite_or_nan_number_is_refused_at_its_value() {
    let traffic = "[[traffic]]\nkind = \"uniform\"\nrate = 1\n";
    let like = "a duration like \"10s\", \"250ms\", \"1m\" or a number of seconds";
    assert_eq!(
        error_of(&format!(
            "{}{traffic}",
            BASE.replace("\"10s\"\n[limit]", "inf\n[limit]")
        )),
        format!("dir/bad.toml:2:12: `inf` is not finite; expected {like}")
    );
    assert_eq!(
        error_of(&format!(
            "{BASE}{}",
            traffic.replace("rate = 1", "rate = nan")
        )),
        "dir/bad.toml:8:8: `NaN` is not finite; expected a number of requests per second, \
         like 2 or 0.5, or a multiple of the limit's rate, like \"2x\""
    );
}

/// A key given twice is named as written, without the quotes a key may carry.
#[test]
fn a_quoted_key_given_twice_is_named_without_its_quotes() {
    let traffic = "[[traffic]]\nkind = \"uniform\"\nrate = 1\n";
    for window in ["\"window\"", "'window'", "window"] {
        let err = error_of(&format!("{BASE}{window} = \"2s\"\n{traffic}"));
        assert!(
            err.ends_with(": `window` is given twice; a key may appear only once in its table"),
            "{window}: {err}"
        );
    }
}

/// `2 × spread + 1ns < period`, strictly: a period one nanosecond longer than twice the
/// spread would put the last request of one half-burst at the instant the next begins.
#[test]
fn a_burst_period_must_exceed_twice_the_spread_by_more_than_a_nanosecond() {
    let burst = "[[traffic]]\nkind = \"boundary_burst\"\nsize = 2\nspread = \"2ns\"\n";
    let err = error_of(&format!("{BASE}{burst}period = \"5ns\"\n"));
    assert_eq!(
        err,
        "dir/bad.toml:9:10: `spread` of 2ns is too wide for a period of 5ns: boundary bursts \
         need 2 × spread + 1ns < period, so a spread of at most 1ns"
    );
    let ok = format!("{BASE}{burst}period = \"6ns\"\n");
    Scenario::parse(&ok, Path::new("dir/ok.toml")).unwrap_or_else(|e| panic!("{e}"));
    // The window standing in for the period keeps the same rule.
    let window = |w: &str| format!("{}{burst}", BASE.replace("window = \"10s\"", w));
    assert!(
        error_of(&window("window = \"5ns\"")).starts_with("dir/bad.toml:9:10: `spread` of 2ns")
    );
    Scenario::parse(&window("window = \"6ns\""), Path::new("dir/ok.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Every check the builder makes on the scenario and its sources, each at the value to
/// change and saying what was expected.
#[test]
fn each_invalid_setting_is_an_error_at_its_value_saying_what_was_expected() {
    let uniform = "[[traffic]]\nkind = \"uniform\"\nrate = 1\n";
    let source = |fields: &str| error_of(&format!("{BASE}[[traffic]]\n{fields}\n"));
    let cases = [
        (
            error_of(&format!(
                "{}{uniform}",
                BASE.replace("duration = \"10s\"", "duration = 0")
            )),
            "dir/bad.toml:2:12: expected a duration above zero",
        ),
        (
            error_of(&format!(
                "{}{uniform}",
                BASE.replace("window = \"10s\"", "window = \"0s\"")
            )),
            "dir/bad.toml:5:10: window must be at least 1 ns",
        ),
        (
            error_of(&format!("algorithms = []\n{BASE}{uniform}")),
            "dir/bad.toml:1:14: expected at least one algorithm name, or [\"all\"]",
        ),
        (
            error_of(&format!("traffic = []\n{BASE}")),
            "dir/bad.toml:1:11: expected at least one [[traffic]] source",
        ),
        (
            error_of(&format!("{BASE}{uniform}[client]\nkind = \"patient\"\n")),
            "dir/bad.toml:10:8: unknown client kind `patient`; expected \"open\" or \"retry\"",
        ),
        (
            error_of(&format!("{BASE}{uniform}[client]\njitter = \"1s\"\n")),
            "dir/bad.toml:10:10: `jitter` applies only to kind = \"retry\"",
        ),
        (
            source("kind = \"boundary_burst\"\nsize = 0"),
            "dir/bad.toml:8:8: expected a size of at least 1",
        ),
        (
            source("kind = \"on_off\"\nrate = 1\non = 0\noff = \"1s\""),
            "dir/bad.toml:9:6: expected an `on` period above zero",
        ),
        (
            source("kind = \"on_off\"\nrate = 1\non = \"1s\""),
            "dir/bad.toml:7:8: a `on_off` source needs `off`",
        ),
        (
            source("kind = \"trace\""),
            "dir/bad.toml:7:8: a `trace` source needs `path`",
        ),
        (
            source("kind = \"trace\"\npath = \"t.csv\"\nkeys = 2"),
            "dir/bad.toml:9:8: `keys` does not apply to a `trace` source",
        ),
        (
            source("kind = \"trace\"\npath = \"t.csv\"\nstart = \"1s\""),
            "dir/bad.toml:9:9: `start` does not apply to a `trace` source",
        ),
        (
            source("kind = \"uniform\"\nrate = 1\ncost = \"bytes\""),
            "dir/bad.toml:9:8: found the string \"bytes\"; expected a whole number from 0 to \
             18446744073709551615, without quotes (only a `trace` source can name a field for \
             its cost)",
        ),
        (
            source("kind = \"uniform\"\nrate = 1\nkeys = 0"),
            "dir/bad.toml:9:8: expected between 1 and 4294967294 keys",
        ),
        (
            source("kind = \"uniform\"\nrate = 1\nkeys = 4294967295"),
            "dir/bad.toml:9:8: expected between 1 and 4294967294 keys",
        ),
        (
            source("kind = \"uniform\"\nrate = 1\nkey_popularity = \"pareto\""),
            "dir/bad.toml:9:18: unknown key_popularity `pareto`; expected \"uniform\" or \"zipf\"",
        ),
        (
            source("kind = \"uniform\"\nrate = 1\nzipf_exponent = 2"),
            "dir/bad.toml:9:17: `zipf_exponent` applies only to key_popularity = \"zipf\"",
        ),
        (
            source("kind = \"uniform\"\nrate = 1\nkey_popularity = \"zipf\"\nzipf_exponent = -0.5"),
            "dir/bad.toml:10:17: expected a zipf_exponent of 0 or more",
        ),
        (
            source("kind = \"uniform\"\nrate = 1\nkey_popularity = \"zipf\"\nzipf_exponent = nan"),
            "dir/bad.toml:10:17: expected a zipf_exponent of 0 or more",
        ),
        (
            source("kind = \"uniform\"\nrate = 1\nstart = \"10s\""),
            "dir/bad.toml:9:9: expected `start` before the source's end (10s)",
        ),
        (
            source("kind = \"uniform\"\nrate = 1\nstart = \"3s\"\nend = \"3s\""),
            "dir/bad.toml:9:9: expected `start` before the source's end (3s)",
        ),
    ];
    for (got, expected) in cases {
        assert_eq!(got, expected);
    }
}

/// Every setting a scenario file can hold reaches the [`Scenario`] as written, and every
/// one left out takes its documented default.
#[test]
fn every_setting_reaches_the_scenario_and_each_one_left_out_takes_its_default() {
    use ratesim::Rule;
    use ratesim::sim::{
        KeySpec, KeyTemplate, Popularity, Rate, SameSecond, StatusMatch, TimeFormat, TraceFormat,
        TraceOptions, TrafficKind, TrafficSpec,
    };
    let text = r#"
name = "  every.setting-1  "
description = "  what it teaches  "
seed = 7
duration = "60s"
algorithms = ["gcra", "all", "gcra"]
[limit]
max_requests = 5
window = "10s"
burst = 8
[[traffic]]
kind = "on_off"
rate = 2
on = "1s"
off = "3s"
keys = 4
key_popularity = "zipf"
zipf_exponent = 0
key_prefix = "user"
cost = 3
start = "2s"
end = "90s"
[[traffic]]
kind = "boundary_burst"
size = 5
spread = "1s"
period = "20s"
[[traffic]]
kind = "poisson"
rate = 0.5
key_popularity = "uniform"
end = "30s"
[[traffic]]
kind = "trace"
path = "logs/a.log"
format = "combined"
key = "{ip}"
cost = "bytes"
same_second = "spread"
reorder = "2s"
include_status = [200, "4xx"]
exclude_status = [404]
skip_bad_lines = true
[[traffic]]
kind = "trace"
path = "b.jsonl"
format = "jsonl"
time_field = "ts"
time_format = "rfc3339"
origin = "2024-01-01T00:00:00Z"
same_second = "keep"
[client]
kind = "retry"
max_retries = 5
jitter = "250ms"
"#;
    let s = Scenario::parse(text, Path::new("dir/s.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.name, "every.setting-1");
    assert_eq!(s.description, "what it teaches");
    assert_eq!((s.seed, s.duration), (7, Nanos::from_secs(60)));
    assert_eq!(
        s.rule,
        Rule::new(5, Nanos::from_secs(10))
            .unwrap()
            .with_burst(8)
            .unwrap()
    );
    // `all` expands in place; a name given twice runs once, at its first place.
    let all = ratesim::Registry::builtin().resolve(&["all"]).unwrap();
    let mut expected = vec!["gcra".to_string()];
    expected.extend(all.into_iter().filter(|a| a != "gcra"));
    assert_eq!(s.algorithms, expected);
    assert_eq!(
        s.client,
        ClientModel::Retry {
            max_retries: 5,
            jitter: Nanos::from_millis(250)
        }
    );
    assert_eq!(s.deployment, None);
    let clients = |count, popularity, prefix: &str| KeySpec {
        count,
        popularity,
        prefix: prefix.to_string(),
    };
    let one = clients(1, Popularity::Uniform, "client");
    let trace = |path: &str, options| TrafficSpec {
        kind: TrafficKind::Trace {
            path: Path::new(path).to_path_buf(),
            options,
        },
        keys: one.clone(),
        cost: 1,
        start: Nanos::ZERO,
        end: Nanos::from_secs(60),
    };
    let expected = [
        TrafficSpec {
            kind: TrafficKind::OnOff {
                rate: Rate::per_sec(2).unwrap(),
                on: Nanos::from_secs(1),
                off: Nanos::from_secs(3),
            },
            keys: clients(4, Popularity::Zipf { exponent: 0.0 }, "user"),
            cost: 3,
            // An end past the run's is the run's.
            start: Nanos::from_secs(2),
            end: Nanos::from_secs(60),
        },
        TrafficSpec {
            kind: TrafficKind::BoundaryBurst {
                size: 5,
                spread: Nanos::from_secs(1),
                period: Some(Nanos::from_secs(20)),
            },
            keys: one.clone(),
            cost: 1,
            start: Nanos::ZERO,
            end: Nanos::from_secs(60),
        },
        TrafficSpec {
            kind: TrafficKind::Poisson {
                rate: Rate::per_sec(1).unwrap(),
            },
            keys: one.clone(),
            cost: 1,
            start: Nanos::ZERO,
            end: Nanos::from_secs(30),
        },
        trace(
            "dir/logs/a.log",
            TraceOptions {
                format: TraceFormat::Combined,
                key: Some(KeyTemplate::parse("{ip}").unwrap()),
                cost_field: Some("bytes".to_string()),
                same_second: SameSecond::Spread,
                reorder: Nanos::from_secs(2),
                include_status: vec![
                    StatusMatch::code(200).unwrap(),
                    StatusMatch::parse("4xx").unwrap(),
                ],
                exclude_status: vec![StatusMatch::code(404).unwrap()],
                skip_bad_lines: true,
                ..TraceOptions::default()
            },
        ),
        trace(
            "dir/b.jsonl",
            TraceOptions {
                format: TraceFormat::Jsonl,
                time_field: Some("ts".to_string()),
                time_format: Some(TimeFormat::Rfc3339),
                origin: Some(1_704_067_200_000_000_000),
                same_second: SameSecond::Keep,
                ..TraceOptions::default()
            },
        ),
    ];
    // The poisson source's rate is half a request per second: compare it apart.
    let TrafficKind::Poisson { rate } = s.traffic[2].kind else {
        panic!("{:?}", s.traffic[2])
    };
    assert_eq!(rate.as_f64(), 0.5);
    let mut got = s.traffic.clone();
    got[2].kind = expected[2].kind.clone();
    for (got, expected) in got.iter().zip(&expected) {
        assert_eq!(got, expected);
    }
    assert_eq!(got.len(), expected.len());
}

/// A value of the wrong type (a boolean, a table, a number for a table) says what the
/// key takes, in words.
#[test]
fn a_value_of_the_wrong_type_says_what_the_key_takes() {
    let traffic = "[[traffic]]\nkind = \"uniform\"\nrate = 1\n";
    let whole = "a whole number from 0 to 18446744073709551615";
    let cases = [
        (
            error_of(&format!(
                "{}{traffic}",
                BASE.replace("max_requests = 5", "max_requests = true")
            )),
            format!("dir/bad.toml:4:16: invalid type: boolean `true`, expected {whole}"),
        ),
        (
            error_of(&format!("{BASE}{traffic}cost = false\n")),
            format!("dir/bad.toml:9:8: invalid type: boolean `false`, expected {whole}"),
        ),
        (
            error_of(&format!(
                "name = \"t\"\nduration = \"10s\"\nlimit = 5\n{traffic}"
            )),
            "dir/bad.toml:3:9: invalid type: integer `5`, expected a [limit] table or [[limit]] \
             tables"
                .to_string(),
        ),
        (
            error_of(&format!(
                "{BASE}[[traffic]]\nkind = \"trace\"\npath = \"t.log\"\n\
                 format = \"combined\"\ninclude_status = [true]\n"
            )),
            "dir/bad.toml:10:19: invalid type: boolean `true`, expected an HTTP status like 404 \
             or a class like \"4xx\""
                .to_string(),
        ),
        (
            error_of(&format!(
                "{}{traffic}",
                BASE.replace("window = \"10s\"", "window = true")
            )),
            "dir/bad.toml:5:10: invalid type: boolean `true`, expected a duration like \"10s\", \
             \"250ms\", \"1m\" or a number of seconds"
                .to_string(),
        ),
        (
            error_of(&format!(
                "{BASE}{}",
                traffic.replace("rate = 1", "rate = [1]")
            )),
            "dir/bad.toml:8:8: invalid type: sequence, expected a number of requests per second, \
             like 2 or 0.5, or a multiple of the limit's rate, like \"2x\""
                .to_string(),
        ),
    ];
    for (got, expected) in cases {
        assert_eq!(got, expected);
    }
}

// The presets in scenarios: the `presets` group, `[preset.nginx]` and the rounding note
// (moved here from src/presets/mod.rs, which must not import the simulator).

const PRESET_SCENARIO: &str = r#"
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
    let s = Scenario::parse(PRESET_SCENARIO, Path::new("s.toml")).unwrap();
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
    let n = presets.len();
    assert_eq!(s.algorithms[..n], presets, "every preset, in display order");
    assert_eq!(s.algorithms[n..], ["fixed_window"]);
    let all = Registry::standard().resolve(&["all"]).unwrap();
    assert_eq!(all.len(), 6);
    assert!(!all.iter().any(|n| n == "nginx" || n == "tower"));
    assert_eq!(s.nginx, None);
}

#[test]
fn a_preset_nginx_table_sets_limit_req_parameters_for_the_run() {
    let text = format!("{PRESET_SCENARIO}[preset.nginx]\nburst = 3\nnodelay = true\n");
    let s = Scenario::parse(&text, Path::new("s.toml")).unwrap();
    let params = NginxParams {
        burst: 3,
        nodelay: true,
        delay: 0,
    };
    assert_eq!(s.nginx, Some(params));
    let registry = s.registry(Registry::standard()).unwrap();
    let nginx = registry.create("nginx", s.rule).unwrap();
    assert_eq!(nginx.capacity(), 4, "burst 3 + the free first request");
    let plain = Registry::standard().create("nginx", s.rule).unwrap();
    assert_eq!(plain.capacity(), 1, "nginx's default burst is 0");
}

#[test]
fn a_rate_nginx_cannot_write_is_rounded_and_the_run_is_told() {
    let s = Scenario::parse(PRESET_SCENARIO, Path::new("s.toml")).unwrap();
    assert!(s.preset_notes().is_empty(), "5 per 1s is 5r/s");
    let odd = PRESET_SCENARIO.replace("window = \"1s\"", "window = \"13s\"");
    let s = Scenario::parse(&odd, Path::new("s.toml")).unwrap();
    let notes: Vec<String> = s
        .preset_notes()
        .into_iter()
        .filter(|n| n.starts_with("nginx"))
        .collect();
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("rate=23r/m"), "{}", notes[0]);
}

#[test]
fn an_unknown_preset_key_is_an_error_at_its_line() {
    let text = format!("{PRESET_SCENARIO}[preset.nginx]\nburts = 3\n");
    let err = Scenario::parse(&text, Path::new("s.toml")).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("burts") && msg.contains("s.toml:12"), "{msg}");
}
