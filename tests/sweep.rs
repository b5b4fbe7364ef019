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

#[test]
fn a_sweeps_progress_counts_every_algorithm_of_every_configuration_to_the_end() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/burst.toml");
    let scenario = load(&path);
    let rules = rules();
    let seen = std::sync::Mutex::new(Vec::new());
    let callback = |done: u64, total: u64| seen.lock().unwrap().push((done, total));
    let options = RunOptions {
        threads: 2,
        progress: Some(&callback),
        ..RunOptions::default()
    };
    sim::sweep(&scenario, &rules, &options).unwrap();
    let seen = seen.into_inner().unwrap();
    let total = (rules.len() * scenario.algorithms.len()) as u64 * sim::PROGRESS_STEPS;
    assert!(
        seen.iter().all(|&(done, t)| t == total && done <= total),
        "{seen:?}"
    );
    let most = seen.iter().map(|&(done, _)| done).max();
    assert_eq!(most, Some(total), "{seen:?}");
}

#[test]
fn a_sweep_with_more_configurations_than_threads_works_on_exactly_that_many_threads() {
    // Each worker reports its algorithms' progress from its own thread; four
    // configurations keep one or two workers busy.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/burst.toml");
    let scenario = load(&path);
    let rules = rules();
    for threads in [1, 2] {
        let workers = std::sync::Mutex::new(std::collections::HashSet::new());
        let callback = |_: u64, _: u64| {
            workers.lock().unwrap().insert(std::thread::current().id());
        };
        let options = RunOptions {
            threads,
            progress: Some(&callback),
            ..RunOptions::default()
        };
        sim::sweep(&scenario, &rules, &options).unwrap();
        let workers = workers.into_inner().unwrap().len();
        assert_eq!(workers, threads, "{} configurations", rules.len());
    }
}

mod cli {
    use std::fs;
    use std::path::Path;
    use std::process::Output;

    use assert_cmd::Command;

    /// Runs `ratesim args` in `dir` (the repository's scenarios are reached by path).
    fn ratesim(dir: &Path, args: &[&str]) -> Output {
        Command::cargo_bin("ratesim")
            .unwrap()
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap()
    }

    fn describe(args: &[&str], out: &Output) -> String {
        format!(
            "command: ratesim {}\nstatus: {}\nstdout:\n{}\nstderr:\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    fn ok(dir: &Path, args: &[&str]) -> String {
        let out = ratesim(dir, args);
        assert!(out.status.success(), "{}", describe(args, &out));
        String::from_utf8(out.stdout).unwrap()
    }

    fn nginx() -> String {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/nginx_log.toml")
            .display()
            .to_string()
    }

    #[test]
    fn a_row_of_sweep_csv_is_the_summary_row_of_a_run_with_that_configuration() {
        let t = tempfile::tempdir().unwrap();
        let scenario = nginx();
        ok(
            t.path(),
            &[
                "sweep",
                &scenario,
                "--set",
                "max_requests=50,200",
                "--set",
                "window=10s,1m",
                "--set",
                "burst=100,300",
                "--algos",
                "token_bucket,fixed_window,gcra",
                "--out",
                "s",
                "--quiet",
                "--no-charts",
            ],
        );
        let meta: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(t.path().join("s/run.json")).unwrap())
                .unwrap();
        assert_eq!(
            meta["configurations"].as_array().unwrap().len(),
            8,
            "{meta}"
        );
        assert_eq!(
            meta["limits"][0]["max_requests"], 100,
            "the scenario's own: {meta}"
        );
        let sweep = fs::read_to_string(t.path().join("s/sweep.csv")).unwrap();
        let mut lines = sweep.lines();
        let header = lines.next().unwrap();
        assert!(header.starts_with("max_requests,window,window_ns,burst,algorithm,requests,"));
        let rows: Vec<&str> = lines.collect();
        assert_eq!(rows.len(), 2 * 2 * 2 * 3, "{sweep}");
        for (limit, burst, algo) in [
            ("200/10s", "300", "token_bucket"),
            ("50/1m", "100", "fixed_window"),
            ("50/10s", "300", "gcra"),
        ] {
            let (max, window) = limit.split_once('/').unwrap();
            // `window_ns` is the window in nanoseconds, as `limit_window_ns` is.
            let ns = match window {
                "10s" => 10_000_000_000u64,
                "1m" => 60_000_000_000,
                _ => unreachable!(),
            };
            let prefix = format!("{max},{window},{ns},{burst},{algo},");
            let row = rows
                .iter()
                .find(|r| r.starts_with(&prefix))
                .unwrap_or_else(|| panic!("no row {prefix} in {sweep}"));
            let out = format!("r-{algo}");
            ok(
                t.path(),
                &[
                    "run",
                    &scenario,
                    "--limit",
                    limit,
                    "--burst",
                    burst,
                    "--algos",
                    algo,
                    "--out",
                    &out,
                    "--quiet",
                    "--no-charts",
                    "--no-decisions",
                ],
            );
            let summary = fs::read_to_string(t.path().join(&out).join("summary.csv")).unwrap();
            let (summary_header, summary_row) = summary.trim_end().split_once('\n').unwrap();
            assert_eq!(
                &header["max_requests,window,window_ns,burst,".len()..],
                summary_header
            );
            assert_eq!(
                &row[prefix.len() - algo.len() - 1..],
                summary_row,
                "{prefix}"
            );
        }
    }

    #[test]
    fn a_sweep_is_byte_identical_for_any_thread_count() {
        let t = tempfile::tempdir().unwrap();
        let scenario = nginx();
        let mut outputs = Vec::new();
        for threads in ["1", "3"] {
            let out = format!("t{threads}");
            let stdout = ok(
                t.path(),
                &[
                    "sweep",
                    &scenario,
                    "--set",
                    "max_requests=50,100",
                    "--set",
                    "window=10s,1m",
                    "--goal",
                    "over_admission<=1",
                    "--threads",
                    threads,
                    "--out",
                    &out,
                    "--quiet",
                ],
            );
            let files: Vec<Vec<u8>> = ["sweep.csv", "sweep.json", "frontier.png"]
                .iter()
                .map(|f| fs::read(t.path().join(&out).join(f)).unwrap())
                .collect();
            outputs.push((stdout, files));
        }
        assert!(outputs[0] == outputs[1], "threads changed the output");
        let (stdout, files) = &outputs[0];
        assert!(stdout.contains("goal over_admission<=1: "), "{stdout}");
        assert!(stdout.contains("the least restrictive is "), "{stdout}");
        assert!(stdout.contains("run it: ratesim run "), "{stdout}");
        let csv = String::from_utf8(files[0].clone()).unwrap();
        assert!(
            csv.lines()
                .next()
                .unwrap()
                .ends_with(",limit_burst,meets_goal")
        );
        assert_eq!(&files[2][1..4], b"PNG");
    }

    #[test]
    fn the_least_restrictive_row_meets_the_goal_and_denies_the_fewest_clients() {
        let t = tempfile::tempdir().unwrap();
        let scenario = nginx();
        let mut args = vec![
            "sweep",
            &scenario,
            "--set",
            "max_requests=50,100,200",
            "--goal",
            "over_admission<=1.0",
            "--goal",
            "false_deny<=0",
            "--out",
            "s",
            "--quiet",
            "--no-charts",
        ];
        let table = ok(t.path(), &args);
        args.extend(["--format", "json"]);
        let stdout = ok(t.path(), &args);
        let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
        assert_eq!(rows.len(), 3 * 6);
        let met: Vec<&serde_json::Value> =
            rows.iter().filter(|r| r["meets_goal"] == true).collect();
        assert!(!met.is_empty());
        for r in &met {
            assert!(r["over_admission"].as_f64().unwrap() <= 1.0, "{r}");
            assert_eq!(r["false_deny"], 0, "{r}");
        }
        // The sliding log is exact, so it always meets both.
        assert!(met.iter().any(|r| r["algorithm"] == "sliding_window_log"));
        let fewest = met
            .iter()
            .map(|r| r["clients_denied"].as_u64().unwrap())
            .min();
        let line = table
            .lines()
            .find(|l| l.contains("least restrictive is"))
            .unwrap();
        assert!(
            line.contains(&format!("clients denied {}", fewest.unwrap())),
            "{line}"
        );
    }

    #[test]
    fn bad_sets_and_goals_name_the_field_and_value_and_write_nothing() {
        let t = tempfile::tempdir().unwrap();
        let scenario = nginx();
        for (flag, value, says) in [
            (
                "--set",
                "speed=1",
                "unknown field `speed`; expected one of max_requests",
            ),
            ("--set", "window=10s,abc", "window=abc"),
            ("--set", "window=", "window: no values"),
            (
                "--set",
                "max_requests=0",
                "max_requests=0: `0` is too small",
            ),
            ("--set", "burst=5,,6", "burst: an empty value"),
            ("--set", "window=10s,10s", "window: `10s` is listed twice"),
            ("--set", "window", "expected FIELD=V1,V2"),
            ("--goal", "fast<=1", "unknown metric `fast`"),
            ("--goal", "over_admission<=x", "`x` is not a number"),
        ] {
            let args = ["sweep", &scenario, flag, value, "--out", "o"];
            let out = ratesim(t.path(), &args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
            assert!(stderr.contains(says), "{}", describe(&args, &out));
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
        let args = [
            "sweep",
            &scenario,
            "--set",
            "window=10s",
            "--set",
            "window=1m",
            "--out",
            "o",
        ];
        let out = ratesim(t.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--set window is given twice"),
            "{}",
            describe(&args, &out)
        );
        assert!(
            !t.path().join("o").exists(),
            "nothing is written on bad input"
        );
    }

    #[test]
    fn a_scenario_with_a_deployment_is_refused_not_swept_as_one_server() {
        let t = tempfile::tempdir().unwrap();
        let scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/nodes_local.toml")
            .display()
            .to_string();
        let args = [
            "sweep",
            &scenario,
            "--set",
            "max_requests=5,10",
            "--out",
            "o",
        ];
        let out = ratesim(t.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("has a [deployment] table"),
            "{}",
            describe(&args, &out)
        );
        assert!(!t.path().join("o").exists(), "nothing is written");
    }

    #[test]
    fn sweep_help_teaches_with_examples() {
        let t = tempfile::tempdir().unwrap();
        let help = ok(t.path(), &["sweep", "--help"]);
        for needle in [
            "Examples:",
            "--set max_requests=",
            "--goal",
            "least restrictive",
        ] {
            assert!(help.contains(needle), "{needle}: {help}");
        }
    }
}
