//! What a run records per request and per rule, end to end through `ratesim run`: a
//! shaper's delay (`decisions.csv`'s `delay_s`, the summary's delayed counts and exact
//! delay percentiles), the server that decided each request in a deployment (`node`),
//! and, with several `[[limit]]`s, every rule measured (`summary.csv` rows per rule)
//! and the rule that denied each request (`denied_by`).
//!
//! Each expectation is recomputed here from the library or by brute force over the
//! run's own decisions, never copied from the run.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::Path;

use assert_cmd::Command;
use ratesim::presets::{Nginx, NginxParams, Tower};
use ratesim::{Algorithm, BoxedAlgorithm, Nanos, Rule, SlidingWindowLog};

/// Writes `scenario` into a fresh directory, runs `ratesim run` on it with `extra`
/// arguments, and returns the directory and the output folder.
fn run(scenario: &str, extra: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    fs::write(&file, scenario).unwrap();
    let out = dir.path().join("out");
    let mut args = vec![
        "run".to_string(),
        file.display().to_string(),
        "--out".to_string(),
        out.display().to_string(),
        "--no-charts".to_string(),
        "--quiet".to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let output = Command::cargo_bin("ratesim")
        .unwrap()
        .args(&args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ratesim {args:?}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (dir, out)
}

/// The rows of a CSV file, each as column name → cell.
fn rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            headers
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn secs(cell: &str) -> Nanos {
    Nanos::parse_decimal_secs(cell).unwrap_or_else(|e| panic!("{cell:?}: {e}"))
}

const SHAPERS: &str = r#"
name = "shapers"
seed = 3
duration = "40s"
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

/// Nearest-rank percentile of sorted values, the textbook way.
fn nearest_rank(sorted: &[u64], percent: usize) -> u64 {
    let rank = (percent * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

#[test]
fn a_shapers_delays_are_in_decisions_csv_and_summarised_exactly_for_nginx_and_tower() {
    let (_dir, out) = run(SHAPERS, &[]);
    let decisions = rows(&out.join("decisions.csv"));
    let summary = rows(&out.join("summary.csv"));
    let rule = Rule::new(5, Nanos::from_secs(10)).unwrap();
    let params = NginxParams {
        burst: 6,
        ..NginxParams::default()
    };
    let models: [(&str, Option<BoxedAlgorithm>); 3] = [
        ("tower", Some(BoxedAlgorithm::new(Tower::new(rule)))),
        ("nginx", Some(BoxedAlgorithm::new(Nginx::new(rule, params)))),
        ("fixed_window", None),
    ];
    for (name, model) in &models {
        let mut states = HashMap::new();
        let mut delays = Vec::new();
        for row in decisions.iter().filter(|r| r["algorithm"] == *name) {
            let time = secs(&row["time_s"]);
            let delay = secs(&row["delay_s"]);
            // The library's own answer to the same arrival, replayed here.
            let expected = match model {
                Some(m) => {
                    let state = states
                        .entry(row["key"].clone())
                        .or_insert_with(|| m.new_state(time));
                    let outcome = m.acquire(state, time, 1);
                    assert_eq!(outcome.admitted().to_string(), row["allowed"], "{name}");
                    outcome.delay()
                }
                None => Nanos::ZERO,
            };
            assert_eq!(delay, expected, "{name} at {time}: delay_s");
            if row["allowed"] == "false" {
                assert_eq!(delay, Nanos::ZERO, "{name}: a denial has no delay");
            }
            if delay > Nanos::ZERO {
                delays.push(delay.as_u64());
            }
        }
        delays.sort_unstable();
        let s = summary.iter().find(|r| r["algorithm"] == *name).unwrap();
        assert_eq!(s["delayed"], delays.len().to_string(), "{name}: delayed");
        let cell = |p: usize| {
            if delays.is_empty() {
                String::new()
            } else {
                nearest_rank(&delays, p).to_string()
            }
        };
        assert_eq!(s["delay_p50_ns"], cell(50), "{name}: p50");
        assert_eq!(s["delay_p99_ns"], cell(99), "{name}: p99");
        assert_eq!(s["delay_max_ns"], cell(100), "{name}: max");
        if *name == "fixed_window" {
            assert!(delays.is_empty(), "a policer delays nothing");
        } else {
            assert!(delays.len() > 5, "{name} delayed only {}", delays.len());
        }
    }
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(json[1]["delay_max_ns"].is_u64(), "exact integer ns in JSON");
    assert!(json[2]["delay_max_ns"].is_null(), "none for a policer");
}

#[test]
fn the_summary_table_shows_delayed_counts_and_formatted_percentiles_only_when_some_delay() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    fs::write(&file, SHAPERS).unwrap();
    let output = Command::cargo_bin("ratesim")
        .unwrap()
        .args([
            "run",
            file.to_str().unwrap(),
            "--no-decisions",
            "--no-charts",
        ])
        .args(["--out", dir.path().join("o").to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{stdout}");
    let summary = rows(&dir.path().join("o/summary.csv"));
    let nginx = summary.iter().find(|r| r["algorithm"] == "nginx").unwrap();
    let line = stdout
        .lines()
        .find(|l| l.contains("nginx") && l.contains("s / "))
        .unwrap_or_else(|| panic!("no delay row for nginx:\n{stdout}"));
    let cells: Vec<&str> = line
        .split(['│', '┆'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(cells[1], nginx["delayed"], "{line}");
    // p50 / p99 / max, each rounded for people: within 1 % of the exact ns.
    for (shown, column) in
        cells[2]
            .split(" / ")
            .zip(["delay_p50_ns", "delay_p99_ns", "delay_max_ns"])
    {
        let (number, scale) = match shown.strip_suffix("ms") {
            Some(ms) => (ms, 1e6),
            None => (shown.strip_suffix('s').unwrap(), 1e9),
        };
        let shown_ns = number.parse::<f64>().unwrap() * scale;
        let exact: f64 = nginx[column].parse().unwrap();
        assert!(
            (shown_ns - exact).abs() <= exact / 100.0,
            "{column}: {shown} for {exact} ns"
        );
    }
    let fixed = stdout
        .lines()
        .filter(|l| l.contains("fixed_window"))
        .nth(1)
        .unwrap_or_else(|| panic!("fixed_window has a delay row too:\n{stdout}"));
    assert!(fixed.contains(" 0 ") && fixed.contains('–'), "{fixed}");

    let without = SHAPERS.replace(r#"["tower", "nginx", "fixed_window"]"#, r#"["gcra"]"#);
    fs::write(&file, without).unwrap();
    let output = Command::cargo_bin("ratesim")
        .unwrap()
        .args([
            "run",
            file.to_str().unwrap(),
            "--no-decisions",
            "--no-charts",
        ])
        .args(["--out", dir.path().join("o2").to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(!stdout.contains("delayed"), "no delay table:\n{stdout}");
}

const DEPLOYED: &str = r#"
name = "deployed"
seed = 11
duration = "30s"
algorithms = ["sliding_window_log", "fixed_window"]
[limit]
max_requests = 4
window = "2s"
[[traffic]]
kind = "poisson"
rate = 9
keys = 3
[deployment]
nodes = 3
balancer = "random"
store = "local"
"#;

#[test]
fn each_decision_names_the_server_that_made_it() {
    let (_dir, out) = run(DEPLOYED, &[]);
    let decisions = rows(&out.join("decisions.csv"));
    let rule = Rule::new(4, Nanos::from_secs(2)).unwrap();
    // With `local` stores each server decides alone: replaying each node's requests
    // through its own sliding log gives every decision back only if `node` is right.
    let log = SlidingWindowLog::new(rule);
    let mut states = HashMap::new();
    let mut per_node: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for row in &decisions {
        let node = row["node"].clone();
        assert!(
            matches!(node.as_str(), "0" | "1" | "2"),
            "node {node:?} in a 3-server deployment"
        );
        let counts = per_node
            .entry((row["algorithm"].clone(), node.clone()))
            .or_default();
        counts.0 += 1;
        counts.1 += u64::from(row["allowed"] == "true");
        if row["algorithm"] != "sliding_window_log" {
            continue;
        }
        let time = secs(&row["time_s"]);
        let state = states
            .entry((node, row["key"].clone()))
            .or_insert_with(|| log.new_state(time));
        let allowed = log.try_acquire(state, time, 1);
        assert_eq!(allowed.to_string(), row["allowed"], "{row:?}");
    }
    let used: Vec<_> = per_node.keys().filter(|k| k.0 == "fixed_window").collect();
    assert_eq!(used.len(), 3, "the random balancer used every server");
    // nodes.csv counts the same decisions per server.
    for n in rows(&out.join("nodes.csv")) {
        let (attempts, allowed) = per_node[&(n["algorithm"].clone(), n["node"].clone())];
        assert_eq!(n["attempts"], attempts.to_string(), "{n:?}");
        assert_eq!(n["allowed"], allowed.to_string(), "{n:?}");
    }
    // Without a deployment the column is there, and empty.
    let single = DEPLOYED.split("[deployment]").next().unwrap();
    let (_dir2, out2) = run(single, &[]);
    let decisions = rows(&out2.join("decisions.csv"));
    assert!(!decisions.is_empty());
    assert!(decisions.iter().all(|r| r["node"].is_empty()));
}

const TWO_RULES: &str = r#"
name = "two"
duration = "60s"
seed = 3
algorithms = ["sliding_window_log", "token_bucket", "fixed_window"]
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

/// The most admitted in any `(t − W, t]` of one key, by brute force.
fn brute_max(admitted: &[(Nanos, String)], window: u64) -> u64 {
    let mut best = 0;
    for (t, key) in admitted {
        let n = admitted
            .iter()
            .filter(|(s, k)| k == key && s <= t && s.as_u64() + window > t.as_u64())
            .count() as u64;
        best = best.max(n);
    }
    best
}

#[test]
fn with_several_limits_every_rule_is_measured_and_each_denial_names_its_rule() {
    let (_dir, out) = run(TWO_RULES, &[]);
    let decisions = rows(&out.join("decisions.csv"));
    let summary = rows(&out.join("summary.csv"));
    let rules = [
        ("10/1s", 10u64, 1_000_000_000u64),
        ("30/10s", 30, 10_000_000_000),
    ];
    for name in ["sliding_window_log", "token_bucket", "fixed_window"] {
        let mine: Vec<_> = decisions
            .iter()
            .filter(|r| r["algorithm"] == name)
            .collect();
        let admitted: Vec<(Nanos, String)> = mine
            .iter()
            .filter(|r| r["allowed"] == "true")
            .map(|r| (secs(&r["time_s"]), r["key"].clone()))
            .collect();
        let per_rule: Vec<_> = summary.iter().filter(|r| r["algorithm"] == name).collect();
        assert_eq!(per_rule.len(), 2, "{name}: one summary row per rule");
        for (row, (label, limit, window)) in per_rule.iter().zip(rules) {
            assert_eq!(row["rule"], label);
            assert_eq!(row["limit_max_requests"], limit.to_string());
            assert_eq!(row["limit_window_ns"], window.to_string());
            let max = brute_max(&admitted, window);
            assert_eq!(row["max_in_window"], max.to_string(), "{name} {label}");
            let ratio: f64 = row["over_admission"].parse().unwrap();
            assert_eq!(ratio, max as f64 / limit as f64, "{name} {label}");
            assert_eq!(row["allowed"], admitted.len().to_string());
        }
        let mut named = BTreeMap::new();
        for r in &mine {
            let by = r["denied_by"].as_str();
            if r["allowed"] == "true" {
                assert_eq!(by, "", "{name}: an admission names no rule");
                continue;
            }
            *named.entry(by.to_string()).or_insert(0) += 1;
            if name != "sliding_window_log" {
                continue;
            }
            // The sliding log denies by a rule exactly when that rule's trailing count
            // is full: check the rule it names is.
            let t = secs(&r["time_s"]);
            let (_, limit, window) = rules.iter().find(|x| x.0 == by).expect("a known rule");
            let inside = admitted
                .iter()
                .filter(|(s, k)| *k == r["key"] && *s <= t && s.as_u64() + window > t.as_u64())
                .count() as u64;
            assert!(inside >= *limit, "{name} at {t}: {by} holds only {inside}");
        }
        assert!(
            named.len() == 2,
            "{name}: both rules deny some requests here: {named:?}"
        );
    }
}

#[test]
fn with_one_rule_summary_rows_stay_one_per_algorithm_and_name_the_rule() {
    let (_dir, out) = run(SHAPERS, &[]);
    let summary = rows(&out.join("summary.csv"));
    assert_eq!(summary.len(), 3);
    assert!(summary.iter().all(|r| r["rule"] == "5/10s"), "{summary:?}");
    let decisions = rows(&out.join("decisions.csv"));
    for r in decisions.iter().filter(|r| r["allowed"] == "false") {
        assert_eq!(r["denied_by"], "5/10s", "the only rule denied it");
    }
}

/// The text of `report.html` in `out`, tags removed (cells separated by spaces).
fn html_text(out: &Path) -> String {
    let page = fs::read_to_string(out.join("report.html")).unwrap();
    let mut text = String::new();
    let mut in_tag = false;
    for c in page.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn report_html_shows_every_rule_and_names_the_worst() {
    let (_dir, out) = run(TWO_RULES, &[]);
    let text = html_text(&out);
    assert!(text.contains("Every rule"), "{text}");
    for r in rows(&out.join("summary.csv")) {
        let numbers = format!("{} / {}", r["max_in_window"], r["limit_max_requests"]);
        let row = |mark: &str| format!("{} {}{mark} {numbers}", r["algorithm"], r["rule"]);
        assert!(
            text.contains(&row("")) || text.contains(&row(" (worst)")),
            "{} missing from the per-rule table",
            row("")
        );
    }
    // token_bucket over-admits 30/10s more than 10/1s here (59/30 > 19/10): named.
    let summary = rows(&out.join("summary.csv"));
    let tb: Vec<_> = summary
        .iter()
        .filter(|r| r["algorithm"] == "token_bucket")
        .collect();
    let ratio = |r: &BTreeMap<String, String>| {
        r["max_in_window"].parse::<u64>().unwrap() * 1_000
            / r["limit_max_requests"].parse::<u64>().unwrap()
    };
    let worst = if ratio(tb[1]) > ratio(tb[0]) {
        tb[1]
    } else {
        tb[0]
    };
    assert!(
        text.contains(&format!("token_bucket: {}", worst["rule"])),
        "the worst rule of token_bucket ({}) is named: {text}",
        worst["rule"]
    );
}

#[test]
fn report_html_shows_each_servers_attempts_and_admissions_and_the_delays() {
    let (_dir, out) = run(DEPLOYED, &[]);
    let text = html_text(&out);
    assert!(text.contains("Each server"), "{text}");
    let nodes = rows(&out.join("nodes.csv"));
    for algorithm in ["sliding_window_log", "fixed_window"] {
        let cells: Vec<String> = nodes
            .iter()
            .filter(|n| n["algorithm"] == algorithm)
            .map(|n| format!("{} / {}", n["allowed"], n["attempts"]))
            .collect();
        let row = format!("{algorithm} {}", cells.join(" "));
        assert!(text.contains(&row), "{row} missing: {text}");
    }
    let (_dir, out) = run(SHAPERS, &[]);
    let text = html_text(&out);
    let summary = rows(&out.join("summary.csv"));
    let tower = summary.iter().find(|r| r["algorithm"] == "tower").unwrap();
    let row = format!("tower {} {}", tower["delayed"], tower["allowed"]);
    assert!(text.contains(&row), "{row} missing: {text}");
    assert!(
        !text.contains("Each server"),
        "no servers without a deployment"
    );
}

/// The most cost of one key passing in any `(t − W, t]`, over passes before `end`.
fn brute_max_passing(passes: &[(Nanos, String)], window: u64, end: Nanos) -> u64 {
    let passes: Vec<_> = passes.iter().filter(|(t, _)| *t < end).cloned().collect();
    brute_max(&passes, window)
}

#[test]
fn in_a_deployment_a_shapers_admissions_count_when_they_pass() {
    let scenario = DEPLOYED
        .replace(
            r#"["sliding_window_log", "fixed_window"]"#,
            r#"["nginx", "tower"]"#,
        )
        .replace("store = \"local\"", "store = \"shared\"")
        .replace("[deployment]", "[preset.nginx]\nburst = 5\n[deployment]");
    let (_dir, out) = run(&scenario, &[]);
    let decisions = rows(&out.join("decisions.csv"));
    let summary = rows(&out.join("summary.csv"));
    for name in ["nginx", "tower"] {
        let passes: Vec<(Nanos, String)> = decisions
            .iter()
            .filter(|r| r["algorithm"] == name && r["allowed"] == "true")
            .map(|r| {
                let t = secs(&r["time_s"]).saturating_add(secs(&r["delay_s"]));
                (t, r["key"].clone())
            })
            .collect();
        let delayed = decisions
            .iter()
            .filter(|r| r["algorithm"] == name && secs(&r["delay_s"]) > Nanos::ZERO)
            .count();
        let s = summary.iter().find(|r| r["algorithm"] == name).unwrap();
        assert!(delayed > 0, "{name} delayed nothing on a shared store");
        assert_eq!(s["delayed"], delayed.to_string(), "{name}");
        let expected = brute_max_passing(&passes, 2_000_000_000, Nanos::from_secs(30));
        assert_eq!(s["max_in_window"], expected.to_string(), "{name}");
    }
}
