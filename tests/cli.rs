//! The `ratesim` command line, end to end: every command, every bundled scenario, the
//! files it writes, and a matrix of bad inputs that must exit 2 with one clear message
//! and write nothing. Each test runs in its own temporary directory.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

/// A temporary working directory holding a copy of `scenarios/`.
struct TestDir {
    dir: tempfile::TempDir,
}

impl TestDir {
    fn new() -> TestDir {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios"),
            &dir.path().join("scenarios"),
        );
        TestDir { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path().join(name);
        fs::write(&path, content).unwrap();
        path
    }

    /// Runs `ratesim args` here; on a failed expectation the caller prints `describe`.
    fn run(&self, args: &[&str]) -> Output {
        Command::cargo_bin("ratesim")
            .unwrap()
            .current_dir(self.path())
            .args(args)
            .output()
            .unwrap()
    }

    /// Runs and asserts success, returning stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "{}", describe(args, &out));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Every file under `dir` (relative paths), for "nothing was written" checks.
    fn files_under(&self, dir: &str) -> Vec<String> {
        let mut found = Vec::new();
        walk(&self.path().join(dir), &mut found);
        found.sort();
        found
    }
}

fn walk(dir: &Path, found: &mut Vec<String>) {
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else {
                found.push(path.display().to_string());
            }
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
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

const EVERY_FILE: [&str; 10] = [
    "decisions.csv",
    "window_counts.csv",
    "summary.csv",
    "summary.json",
    "timeline.png",
    "timeline_zoom.png",
    "window_counts.png",
    "over_admission.png",
    "report.html",
    "run.json",
];

/// Width and height from a PNG's IHDR chunk, after checking the signature.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    let rows = reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect();
    (header, rows)
}

#[test]
fn every_bundled_scenario_runs_and_writes_every_file() {
    let t = TestDir::new();
    let mut scenarios: Vec<String> = fs::read_dir(t.path().join("scenarios"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".toml"))
        .collect();
    scenarios.sort();
    assert_eq!(scenarios.len(), 13, "{scenarios:?}");
    for file in &scenarios {
        let name = file.trim_end_matches(".toml");
        let path = format!("scenarios/{file}");
        let stdout = t.ok(&["run", &path, "--quiet"]);
        assert!(
            stdout.contains("sliding_window_log"),
            "{file}: the summary table lists the algorithms:\n{stdout}"
        );
        let out = t.path().join("output").join(name);
        for expected in EVERY_FILE {
            let file_path = out.join(expected);
            let len = fs::metadata(&file_path).map(|m| m.len()).unwrap_or(0);
            assert!(len > 0, "{file}: {expected} missing or empty");
        }
        let nodes_csv = out.join("nodes.csv").is_file();
        assert_eq!(nodes_csv, name.starts_with("nodes_"), "{file}: nodes.csv");
        assert!(
            t.files_under(&format!("output/{name}"))
                .iter()
                .all(|f| !f.contains(".tmp-") && !f.contains(".part")),
            "{file}: temporary files left behind"
        );
    }
}

#[test]
fn decisions_csv_has_the_design_header_and_one_row_per_algorithm_and_attempt() {
    let t = TestDir::new();
    t.ok(&[
        "run",
        "scenarios/retry_clients.toml",
        "--quiet",
        "--no-charts",
    ]);
    let out = t.path().join("output/retry_clients");
    let (header, rows) = read_csv(&out.join("decisions.csv"));
    let design = [
        "algorithm",
        "seq",
        "time_s",
        "key",
        "cost",
        "allowed",
        "remaining",
        "retry_after_s",
    ];
    assert_eq!(
        &header[..8],
        design,
        "the documented header first (docs/design.md §7)"
    );
    let summary: Vec<serde_json::Value> =
        serde_json::from_slice(&fs::read(out.join("summary.json")).unwrap()).unwrap();
    let mut per_algorithm: BTreeMap<String, u64> = BTreeMap::new();
    for row in &rows {
        *per_algorithm.entry(row[0].clone()).or_default() += 1;
        assert!(
            row[5] == "true" || row[5] == "false",
            "allowed is true/false: {row:?}"
        );
        // Exact decimal seconds: at most nine decimals, no exponent.
        assert!(
            !row[2].contains('e') && row[2].split('.').nth(1).is_none_or(|f| f.len() <= 9),
            "{row:?}"
        );
    }
    for s in &summary {
        let name = s["algorithm"].as_str().unwrap();
        assert_eq!(
            per_algorithm.get(name).copied(),
            s["attempts"].as_u64(),
            "{name}: one row per attempt"
        );
    }
    // Rows come in algorithm order, each algorithm's in decision order.
    let order: Vec<&str> = summary
        .iter()
        .map(|s| s["algorithm"].as_str().unwrap())
        .collect();
    let mut seen: Vec<&str> = Vec::new();
    for row in &rows {
        if seen.last() != Some(&row[0].as_str()) {
            seen.push(&row[0]);
        }
    }
    assert_eq!(seen, order);
}

#[test]
fn summary_json_agrees_with_summary_csv() {
    let t = TestDir::new();
    t.ok(&[
        "run",
        "scenarios/poisson.toml",
        "--quiet",
        "--no-charts",
        "--no-decisions",
    ]);
    let out = t.path().join("output/poisson");
    let (header, rows) = read_csv(&out.join("summary.csv"));
    let json: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_slice(&fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(rows.len(), json.len());
    for (row, object) in rows.iter().zip(&json) {
        assert_eq!(header.len(), object.len());
        for (field, cell) in header.iter().zip(row) {
            let value = &object[field];
            let as_text = match value {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if let (Ok(a), Ok(b)) = (cell.parse::<f64>(), as_text.parse::<f64>()) {
                assert_eq!(a, b, "{field}");
            } else {
                assert_eq!(cell, &as_text, "{field}");
            }
        }
    }
    assert!(
        !t.path().join("output/poisson/decisions.csv").exists(),
        "--no-decisions"
    );
    assert!(
        !t.path().join("output/poisson/timeline.png").exists(),
        "--no-charts"
    );
}

#[test]
fn charts_are_pngs_of_the_expected_size_and_not_blank() {
    let t = TestDir::new();
    t.ok(&["run", "scenarios/burst.toml", "--quiet", "--no-decisions"]);
    for chart in ["timeline.png", "window_counts.png", "over_admission.png"] {
        let bytes = fs::read(t.path().join("output/burst").join(chart)).unwrap();
        let (w, h) = png_size(&bytes);
        assert!(w >= 1000 && h >= 600, "{chart}: {w}x{h}");
        // A blank 1200x700 PNG compresses to a few kB; drawn charts are far larger.
        assert!(
            bytes.len() > 20_000,
            "{chart}: only {} bytes, looks blank",
            bytes.len()
        );
    }
}

#[test]
fn the_burst_scenario_shows_the_fixed_window_at_twice_the_limit() {
    let t = TestDir::new();
    let json = t.ok(&[
        "run",
        "scenarios/burst.toml",
        "--quiet",
        "--no-charts",
        "--no-decisions",
        "--format",
        "json",
    ]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let ratio = |name: &str| {
        rows.iter().find(|r| r["algorithm"] == name).unwrap()["over_admission"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(ratio("fixed_window"), 2.0);
    assert_eq!(ratio("sliding_window_log"), 1.0);
    let (_, counts) = read_csv(&t.path().join("output/burst/window_counts.csv"));
    let peak = counts
        .iter()
        .filter(|r| r[0] == "fixed_window")
        .map(|r| r[3].parse::<u64>().unwrap())
        .max();
    assert_eq!(
        peak,
        Some(10),
        "window_counts.csv shows the spike the chart draws"
    );
}

#[test]
fn run_honours_algos_seed_out_and_format_csv() {
    let t = TestDir::new();
    let run = |out: &str| {
        t.ok(&[
            "run",
            "scenarios/poisson.toml",
            "--algos",
            "gcra,fixed_window",
            "--seed",
            "99",
            "--out",
            out,
            "--format",
            "csv",
            "--quiet",
            "--no-charts",
        ])
    };
    let stdout = run("mine");
    let mut reader = csv::Reader::from_reader(stdout.as_bytes());
    let names: Vec<String> = reader
        .records()
        .map(|r| r.unwrap()[0].to_string())
        .collect();
    assert_eq!(names, ["gcra", "fixed_window"]);
    assert!(t.path().join("mine/summary.csv").exists());
    let again = run("again");
    assert_eq!(stdout, again, "same seed, same numbers");
    assert_eq!(
        fs::read(t.path().join("mine/decisions.csv")).unwrap(),
        fs::read(t.path().join("again/decisions.csv")).unwrap(),
        "same seed, byte-identical decisions"
    );
}

#[test]
fn one_thread_and_several_threads_write_identical_files() {
    let t = TestDir::new();
    for (threads, out) in [("1", "one"), ("4", "four")] {
        t.ok(&[
            "run",
            "scenarios/retry_clients.toml",
            "--threads",
            threads,
            "--out",
            out,
            "--quiet",
            "--no-charts",
        ]);
    }
    for file in [
        "decisions.csv",
        "window_counts.csv",
        "summary.csv",
        "summary.json",
    ] {
        assert_eq!(
            fs::read(t.path().join("one").join(file)).unwrap(),
            fs::read(t.path().join("four").join(file)).unwrap(),
            "{file} differs between 1 and 4 threads"
        );
    }
}

/// An output folder says what made it: the scenario, its file and that file's hash, the
/// limits, seed, duration, algorithms, the command line and the version.
#[test]
fn every_run_folder_carries_a_run_json_that_says_what_made_it() {
    let t = TestDir::new();
    t.ok(&[
        "run",
        "scenarios/burst.toml",
        "--seed",
        "9",
        "--algos",
        "gcra,fixed_window",
        "-q",
        "--no-charts",
    ]);
    let text = fs::read_to_string(t.path().join("output/burst/run.json")).unwrap();
    let meta: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(meta["scenario"], "burst", "{text}");
    assert_eq!(meta["source"]["file"], "scenarios/burst.toml", "{text}");
    assert_eq!(
        meta["source"]["fnv1a64"].as_str().unwrap().len(),
        16,
        "{text}"
    );
    assert_eq!(meta["seed"], 9);
    assert_eq!(meta["duration_ns"], 60_000_000_000_u64);
    assert_eq!(meta["limits"][0]["max_requests"], 5);
    assert_eq!(meta["limits"][0]["window_ns"], 10_000_000_000_u64);
    assert_eq!(
        meta["algorithms"],
        serde_json::json!(["gcra", "fixed_window"])
    );
    assert_eq!(meta["client"], "open");
    assert_eq!(meta["ratesim_version"], env!("CARGO_PKG_VERSION"));
    let command: Vec<&str> = meta["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(command[1..3], ["run", "scenarios/burst.toml"], "{text}");
    // The summary rows say which limit "over" was measured against.
    let summary = fs::read_to_string(t.path().join("output/burst/summary.csv")).unwrap();
    let header = summary.lines().next().unwrap();
    assert!(
        header.ends_with(",limit_max_requests,limit_window_ns,limit_burst"),
        "{header}"
    );
    assert!(
        summary
            .lines()
            .skip(1)
            .all(|row| row.ends_with(",5,10000000000,5")),
        "{summary}"
    );
    // Another version of the file hashes differently.
    let edited = fs::read_to_string(t.path().join("scenarios/burst.toml")).unwrap() + "\n";
    t.write("scenarios/edited.toml", edited);
    t.ok(&[
        "run",
        "scenarios/edited.toml",
        "-q",
        "--no-charts",
        "--out",
        "e",
    ]);
    let other: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(t.path().join("e/run.json")).unwrap()).unwrap();
    assert_ne!(other["source"]["fnv1a64"], meta["source"]["fnv1a64"]);
}

/// `compare` keeps its folders apart from `run`'s (output/compare/<scenario>/) and writes
/// its over-admission matrix beside them.
#[test]
fn compare_writes_under_output_compare_with_its_matrix() {
    let t = TestDir::new();
    t.ok(&[
        "compare",
        "--algos",
        "fixed_window,sliding_window_log",
        "-q",
        "--no-charts",
        "--no-decisions",
    ]);
    for scenario in ["uniform", "poisson", "burst"] {
        let run = t
            .path()
            .join("output/compare")
            .join(scenario)
            .join("run.json");
        assert!(run.exists(), "{}", run.display());
        assert!(
            !t.path().join("output").join(scenario).exists(),
            "{scenario}"
        );
    }
    let matrix =
        fs::read_to_string(t.path().join("output/compare/over_admission_matrix.csv")).unwrap();
    let lines: Vec<&str> = matrix.lines().collect();
    // Long form: one row per scenario and algorithm (no deployment: `nodes` empty).
    assert_eq!(
        lines[0], "scenario,nodes,algorithm,over_admission",
        "{matrix}"
    );
    assert_eq!(lines.len(), 7, "{matrix}");
    assert!(lines[1].starts_with("uniform,,fixed_window,"), "{matrix}");
    for (i, scenario) in ["uniform", "poisson", "burst"].iter().enumerate() {
        assert_eq!(
            lines[2 + 2 * i],
            format!("{scenario},,sliding_window_log,1.0"),
            "{matrix}"
        );
    }
    assert_eq!(lines[5], "burst,,fixed_window,2.0", "{matrix}");
    assert!(
        !t.path()
            .join("output/compare/over_admission_matrix.png")
            .exists(),
        "--no-charts"
    );
}

#[test]
fn compare_draws_its_matrix_beside_the_csv() {
    let t = TestDir::new();
    t.ok(&[
        "compare",
        "--algos",
        "fixed_window,sliding_window_log",
        "-q",
        "--no-decisions",
        "--out",
        "c",
    ]);
    let bytes = fs::read(t.path().join("c/over_admission_matrix.png")).unwrap();
    let (w, h) = png_size(&bytes);
    assert!(w >= 1000 && h >= 300, "{w}x{h}");
}

#[test]
fn compare_runs_the_built_in_suite_and_prints_a_matrix() {
    let t = TestDir::new();
    let stdout = t.ok(&[
        "compare",
        "--algos",
        "all",
        "--quiet",
        "--no-charts",
        "--no-decisions",
        "--out",
        "cmp",
    ]);
    for scenario in ["uniform", "poisson", "burst"] {
        assert!(stdout.contains(scenario), "{stdout}");
        assert!(
            t.path()
                .join("cmp")
                .join(scenario)
                .join("summary.csv")
                .exists(),
            "{scenario}"
        );
    }
    assert!(stdout.contains("Over-admission"), "{stdout}");
    let json = t.ok(&[
        "compare",
        "--limit",
        "3/1s",
        "--quiet",
        "--no-charts",
        "--no-decisions",
        "--out",
        "cmp2",
        "--format",
        "json",
    ]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(rows.len(), 18, "3 scenarios × 6 algorithms");
    assert!(rows.iter().all(|r| r["scenario"].is_string()));
}

#[test]
fn validate_list_and_help_teach_the_user() {
    let t = TestDir::new();
    let out = t.ok(&[
        "validate",
        "scenarios/burst.toml",
        "scenarios/trace_replay.toml",
    ]);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.starts_with("ok: scenarios/burst.toml"), "{out}");
    let list = t.ok(&["list"]);
    for needle in [
        "token_bucket",
        "gcra",
        "2N",
        "B + N - 1",
        "burst.toml",
        "trace_replay.toml",
    ] {
        assert!(list.contains(needle), "list lacks {needle}:\n{list}");
    }
    for command in ["run", "compare"] {
        let help = t.ok(&[command, "--help"]);
        assert!(
            help.contains("Examples:"),
            "{command} --help has examples:\n{help}"
        );
    }
    assert!(
        t.ok(&["--help"])
            .contains("ratesim run scenarios/burst.toml")
    );
    assert!(
        t.files_under("output").is_empty(),
        "validate and list write nothing"
    );
}

#[test]
fn validate_checks_every_file_and_fails_if_any_is_bad() {
    let t = TestDir::new();
    t.write("bad.toml", scenario_with("max_requests", "0"));
    let args = [
        "validate",
        "scenarios/burst.toml",
        "bad.toml",
        "missing.toml",
        "scenarios/uniform.toml",
    ];
    let out = t.run(&args);
    let context = describe(&args, &out);
    assert_eq!(out.status.code(), Some(2), "{context}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ok: Vec<&str> = stdout.lines().collect();
    assert_eq!(ok.len(), 2, "one ok line per good file: {context}");
    assert!(ok[0].starts_with("ok: scenarios/burst.toml ("), "{context}");
    assert!(
        ok[1].starts_with("ok: scenarios/uniform.toml ("),
        "{context}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        errors.len(),
        3,
        "one line per bad file and a total: {context}"
    );
    assert!(
        errors[0].starts_with("ratesim: error: bad.toml:5:16: "),
        "{context}"
    );
    assert!(
        errors[1].starts_with("ratesim: error: missing.toml: cannot read"),
        "{context}"
    );
    assert_eq!(
        errors[2], "ratesim: error: 2 of 4 scenario files are invalid",
        "{context}"
    );
}

/// Each command's help describes that command only: no files it does not write, no
/// flags of another command, and examples for every command that takes input.
#[test]
fn help_describes_only_what_each_command_does() {
    let t = TestDir::new();
    for command in ["worst-case", "calibrate"] {
        let help = t.ok(&[command, "--help"]);
        assert!(!help.contains("summary.csv"), "{command} --help:\n{help}");
        assert!(
            help.contains("One CSV row per algorithm"),
            "{command} --help:\n{help}"
        );
    }
    let worst = t.ok(&["worst-case", "--help"]);
    assert!(!worst.contains("calibrate"), "{worst}");
    assert!(worst.contains("Do not list the files written"), "{worst}");
    let calibrate = t.ok(&["calibrate", "--help"]);
    assert!(!calibrate.contains("files written"), "{calibrate}");
    assert!(!calibrate.contains("--quiet"), "{calibrate}");
    assert!(
        calibrate.contains("Seed of the randomised search and of the Poisson traffic"),
        "{calibrate}"
    );
    let run = t.ok(&["run", "--help"]);
    assert!(!run.contains("compare"), "{run}");
    assert!(
        run.contains("Output directory [default: output/<scenario>]"),
        "{run}"
    );
    let compare = t.ok(&["compare", "--help"]);
    assert!(
        compare.contains(
            "each scenario's files go to <DIR>/<scenario>/, the over-admission matrix to \
             <DIR>/over_admission_matrix.csv and .png [default: output/compare]"
        ),
        "{compare}"
    );
    let validate = t.ok(&["validate", "--help"]);
    assert!(
        validate.contains(
            "Examples:\n  ratesim validate scenarios/burst.toml\n  ratesim validate scenarios/*.toml"
        ),
        "{validate}"
    );
}

/// A scenario of about 8.6 × 10^13 requests (10^9 a second for a day).
fn enormous_scenario() -> String {
    scenario_with("duration", "\"1d\"").replace("rate = 2", "rate = 1000000000")
}

#[test]
fn validate_warns_about_an_enormous_run_without_failing() {
    let t = TestDir::new();
    t.write("big.toml", enormous_scenario());
    let out = t.ok(&["validate", "big.toml", "scenarios/burst.toml"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("ok: big.toml (x: "), "{out}");
    assert_eq!(
        lines[1],
        "warning: big.toml: about 86,400,000,000,000 requests to simulate; decisions.csv \
         would hold about 518,400,000,000,000 rows (6 algorithms), about 36 PB \
         (--no-decisions skips it)",
    );
    assert!(lines[2].starts_with("ok: scenarios/burst.toml ("), "{out}");
}

#[test]
fn run_warns_about_an_enormous_run_before_starting_it() {
    use std::io::BufRead;
    let t = TestDir::new();
    t.write("big.toml", enormous_scenario());
    for (extra, expected) in [
        (
            None,
            "ratesim: warning: about 86,400,000,000,000 requests to simulate; decisions.csv \
             would hold about 518,400,000,000,000 rows (6 algorithms), about 36 PB \
             (--no-decisions skips it)",
        ),
        (
            Some("--no-decisions"),
            "ratesim: warning: about 86,400,000,000,000 requests to simulate",
        ),
    ] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ratesim"))
            .current_dir(t.path())
            // --force: a 36 PB decisions.csv is otherwise refused (tests/report_words.rs).
            .args([
                "run",
                "big.toml",
                "--out",
                "o",
                "--quiet",
                "--no-charts",
                "--force",
            ])
            .args(extra)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Read the first line on another thread: without a warning the run would
        // keep stderr silent for hours.
        let stderr = child.stderr.take().unwrap();
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let _ = std::io::BufReader::new(stderr).read_line(&mut first);
            let _ = send.send(first);
        });
        let first = receive.recv_timeout(std::time::Duration::from_secs(60));
        // The run is not refused: it is still going when the warning arrives.
        let still_running = child.try_wait().unwrap().is_none();
        child.kill().unwrap();
        child.wait().unwrap();
        let first = first.unwrap_or_else(|_| panic!("{extra:?}: no warning within 60 s"));
        assert_eq!(first.trim_end(), expected, "{extra:?}");
        assert!(still_running, "{extra:?}: the run was refused");
    }
}

#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read;
    use std::process::{Command as Std, Stdio};
    let mut child = Std::new(assert_cmd::cargo::cargo_bin("ratesim"))
        .arg("list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before anything is read
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "status {status}, stderr {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A minimal valid scenario with one field replaced, for the bad-input matrix.
fn scenario_with(field: &str, value: &str) -> String {
    let mut fields = vec![
        ("name", "\"x\"".to_string()),
        ("duration", "\"10s\"".to_string()),
        ("max_requests", "5".to_string()),
        ("window", "\"1s\"".to_string()),
        ("kind", "\"uniform\"".to_string()),
        ("rate", "2".to_string()),
    ];
    for f in &mut fields {
        if f.0 == field {
            f.1 = value.to_string();
        }
    }
    let get = |k: &str| fields.iter().find(|f| f.0 == k).unwrap().1.clone();
    format!(
        "name = {}\nduration = {}\n\n[limit]\nmax_requests = {}\nwindow = {}\n\n[[traffic]]\nkind = {}\nrate = {}\n",
        get("name"),
        get("duration"),
        get("max_requests"),
        get("window"),
        get("kind"),
        get("rate")
    )
}

const TRACE_SCENARIO: &str = "name = \"t\"\nduration = \"10s\"\n[limit]\nmax_requests = 5\nwindow = \"1s\"\n[[traffic]]\nkind = \"trace\"\npath = \"trace.csv\"\n";

/// Every bad input exits 2 with one line on stderr that names the place (file, or
/// flag) and says what was expected, never panics, and writes nothing.
#[test]
fn bad_inputs_exit_2_with_one_clear_message_and_write_nothing() {
    struct Case {
        what: &'static str,
        files: Vec<(&'static str, Vec<u8>)>,
        args: Vec<&'static str>,
        /// Every one of these must appear in the message.
        expect: Vec<&'static str>,
    }
    let case = |what,
                files: Vec<(&'static str, Vec<u8>)>,
                args: Vec<&'static str>,
                expect: Vec<&'static str>| Case {
        what,
        files,
        args,
        expect,
    };
    let bad = |field: &str, value: &str| scenario_with(field, value).into_bytes();
    let with_trace = |trace: &str| {
        vec![
            ("s.toml", TRACE_SCENARIO.as_bytes().to_vec()),
            ("trace.csv", trace.as_bytes().to_vec()),
        ]
    };
    let cases = vec![
        case("missing file", vec![], vec!["run", "nope.toml"], vec!["nope.toml"]),
        case("empty file", vec![("s.toml", vec![])], vec!["run", "s.toml"], vec!["s.toml"]),
        case("a directory", vec![], vec!["run", "scenarios"], vec!["scenarios"]),
        case("binary file", vec![("s.toml", vec![0, 159, 146, 150, 0, 1, 2])], vec!["run", "s.toml"], vec!["s.toml"]),
        case("non-UTF-8 text", vec![("s.toml", b"name = \"\xff\xfe\"\n".to_vec())], vec!["run", "s.toml"], vec!["s.toml"]),
        case("TOML syntax error", vec![("s.toml", b"name = \"x\n".to_vec())], vec!["run", "s.toml"], vec!["s.toml:1:"]),
        case("unknown top-level key", vec![("s.toml", [bad("name", "\"x\""), b"\ncolour = 1\n".to_vec()].concat())], vec!["run", "s.toml"], vec!["s.toml:", "colour"]),
        case("wrong type", vec![("s.toml", bad("max_requests", "\"five\""))], vec!["run", "s.toml"], vec!["s.toml:5:"]),
        case("zero limit", vec![("s.toml", bad("max_requests", "0"))], vec!["run", "s.toml"], vec!["s.toml:5:", "max_requests"]),
        case("negative limit", vec![("s.toml", bad("max_requests", "-5"))], vec!["run", "s.toml"], vec!["s.toml:5:"]),
        case("fractional limit", vec![("s.toml", bad("max_requests", "2.5"))], vec!["run", "s.toml"], vec!["s.toml:5:"]),
        case("absurd limit", vec![("s.toml", bad("max_requests", "99999999999999999999999"))], vec!["run", "s.toml"], vec!["s.toml:5:"]),
        case("zero window", vec![("s.toml", bad("window", "\"0s\""))], vec!["run", "s.toml"], vec!["s.toml:6:", "window"]),
        case("negative window", vec![("s.toml", bad("window", "\"-1s\""))], vec!["run", "s.toml"], vec!["s.toml:6:", "negative"]),
        case("non-numeric window", vec![("s.toml", bad("window", "\"soon\""))], vec!["run", "s.toml"], vec!["s.toml:6:"]),
        case("absurd window", vec![("s.toml", bad("window", "\"9999999999d\""))], vec!["run", "s.toml"], vec!["s.toml:6:", "too large"]),
        case("NaN rate", vec![("s.toml", bad("rate", "nan"))], vec!["run", "s.toml"], vec!["s.toml:10:"]),
        case("infinite rate", vec![("s.toml", bad("rate", "inf"))], vec!["run", "s.toml"], vec!["s.toml:10:"]),
        case("negative rate", vec![("s.toml", bad("rate", "-3"))], vec!["run", "s.toml"], vec!["s.toml:10:"]),
        case("zero duration", vec![("s.toml", bad("duration", "\"0s\""))], vec!["run", "s.toml"], vec!["s.toml:2:", "duration"]),
        case("absurd duration", vec![("s.toml", bad("duration", "\"1e400\""))], vec!["run", "s.toml"], vec!["s.toml:2:"]),
        case("unknown traffic kind", vec![("s.toml", bad("kind", "\"tsunami\""))], vec!["run", "s.toml"], vec!["s.toml:9:", "tsunami"]),
        case("unknown algorithm in the file", vec![("s.toml", [b"algorithms = [\"bogus\"]\n".to_vec(), bad("name", "\"x\"")].concat())], vec!["run", "s.toml"], vec!["s.toml:", "bogus"]),
        case("empty traffic list", vec![("s.toml", b"name = \"x\"\nduration = \"10s\"\ntraffic = []\n[limit]\nmax_requests = 5\nwindow = \"1s\"\n".to_vec())], vec!["run", "s.toml"], vec!["s.toml"]),
        case("unsorted trace", with_trace("time_s,key\n2,a\n1,a\n"), vec!["run", "s.toml"], vec!["trace.csv:3"]),
        case("malformed trace time", with_trace("time_s,key\nsoon,a\n"), vec!["run", "s.toml"], vec!["trace.csv:2"]),
        case("negative trace time", with_trace("time_s,key\n-1,a\n"), vec!["run", "s.toml"], vec!["trace.csv:2"]),
        case("missing trace", vec![("s.toml", TRACE_SCENARIO.as_bytes().to_vec())], vec!["run", "s.toml"], vec!["trace.csv"]),
        case("unknown --algos", vec![], vec!["run", "scenarios/burst.toml", "--algos", "nope"], vec!["--algos", "nope", "token_bucket"]),
        case("trailing comma in --algos", vec![], vec!["worst-case", "--limit", "5/1s", "--algos", "gcra,"], vec!["--algos: empty algorithm name (a trailing comma?)"]),
        case("empty name in run --algos", vec![], vec!["run", "scenarios/burst.toml", "--algos", ",gcra"], vec!["--algos: empty algorithm name (a trailing comma?)"]),
        case("misspelt --algos", vec![], vec!["calibrate", "--limit", "5/1s", "--algos", "gcr"], vec!["--algos: unknown algorithm `gcr` (did you mean `gcra`?); expected one of: token_bucket"]),
        case("shortened run --algos", vec![], vec!["run", "scenarios/burst.toml", "--algos", "gcra,sliding_log"], vec!["--algos: unknown algorithm `sliding_log` (did you mean `sliding_window_log`?)"]),
        case("file in the way of --out", vec![("taken", b"x".to_vec())], vec!["run", "scenarios/burst.toml", "--out", "taken"], vec!["--out", "taken"]),
        case("unwritable --out", vec![], vec!["run", "scenarios/burst.toml", "--out", "/proc/ratesim-test"], vec!["--out", "/proc/ratesim-test"]),
        case("bad --limit", vec![], vec!["compare", "--limit", "100"], vec!["--limit", "MAX/WINDOW"]),
        case("zero --limit", vec![], vec!["compare", "--limit", "0/1s"], vec!["--limit", "`0` is too small; expected a whole number from 1 to 18446744073709551615"]),
        case("fractional --limit", vec![], vec!["compare", "--limit", "1.5/10s"], vec!["--limit", "`1.5` is not a whole number; expected a whole number from 1 to"]),
        case("zero run --limit", vec![], vec!["run", "scenarios/burst.toml", "--limit", "0/1s"], vec!["--limit", "`0` is too small"]),
        case("negative --seed", vec![], vec!["run", "scenarios/burst.toml", "--seed", "-1"], vec!["--seed", "`-1` is negative; expected a whole number from 0 to"]),
        case("negative worst-case --seed", vec![], vec!["worst-case", "--limit", "5/1s", "--seed", "-3"], vec!["--seed", "`-3` is negative"]),
        case("a trace given to validate", vec![("t.csv", b"time_s,key\n1,a\n".to_vec())], vec!["validate", "t.csv"], vec!["t.csv: this looks like a CSV trace, not a scenario", "kind = \"trace\""]),
        case("too large --limit", vec![], vec!["compare", "--limit", "18446744073709551616/1s"], vec!["--limit", "`18446744073709551616` is too large (at most 18446744073709551615)"]),
        case("negative --limit", vec![], vec!["compare", "--limit=-5/1s"], vec!["--limit", "`-5` is negative; expected a whole number from 1 to 18446744073709551615"]),
        case("zero --threads", vec![], vec!["run", "scenarios/burst.toml", "--threads", "0"], vec!["--threads"]),
        case("unknown flag", vec![], vec!["run", "scenarios/burst.toml", "--colour"], vec!["--colour"]),
        case("validate a bad file", vec![("s.toml", bad("max_requests", "0"))], vec!["validate", "s.toml"], vec!["s.toml:5:"]),
        case("a name with a slash", vec![("s.toml", bad("name", "\"/tmp/escaped\""))], vec!["run", "s.toml"], vec!["s.toml:1:", "output folder"]),
        case("a name that climbs out", vec![("s.toml", bad("name", "\"..\""))], vec!["run", "s.toml"], vec!["s.toml:1:"]),
        case(
            "compare with a bad trace after a good scenario",
            [with_trace("time_s,key\n2,a\n1,a\n"), vec![("ok.toml", bad("name", "\"ok\""))]].concat(),
            vec!["compare", "--scenario", "ok.toml", "--scenario", "s.toml"],
            vec!["trace.csv:3"],
        ),
        case("compare with two scenarios of one name", vec![("a.toml", bad("name", "\"same\"")), ("b.toml", bad("name", "\"same\""))], vec!["compare", "--scenario", "a.toml", "--scenario", "b.toml"], vec!["same"]),
        case("worst-case with a huge limit", vec![], vec!["worst-case", "--limit", "20000000/1s"], vec!["too large", "100000"]),
        case("calibrate with a bad --burst", vec![], vec!["calibrate", "--limit", "5/1s", "--burst", "0"], vec!["--burst", "`0` is too small; expected a whole number from 1 to"]),
        case("worst-case with a huge --burst", vec![], vec!["worst-case", "--limit", "5/1s", "--burst", "18446744073709551616"], vec!["--burst", "`18446744073709551616` is too large (at most 18446744073709551615)"]),
    ];
    assert!(cases.len() >= 25);
    for c in cases {
        let t = TestDir::new();
        for (name, content) in &c.files {
            t.write(name, content);
        }
        let before = t.files_under(".");
        let out = t.run(&c.args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let context = format!("case `{}`\n{}", c.what, describe(&c.args, &out));
        assert_eq!(out.status.code(), Some(2), "{context}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
            "{context}"
        );
        // A bad value for a known flag is explained, never mistaken for a flag of its
        // own (clap's "to pass '-1' as a value, use '-- -1'").
        if c.what.contains("--seed") || c.what.contains("--limit") {
            assert!(!stderr.contains("to pass '"), "{context}");
        }
        let first = stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("ratesim: error: "), "{context}");
        for needle in &c.expect {
            assert!(
                stderr.contains(needle),
                "{context}\nexpected the message to mention `{needle}`"
            );
        }
        // Every error, clap's usage errors included, is one line (issue 31 item 16).
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {context}");
        assert_eq!(
            t.files_under("."),
            before,
            "nothing may be written: {context}"
        );
        assert!(out.stdout.is_empty(), "{context}");
    }
}

#[test]
fn worst_case_and_calibrate_print_tables_and_write_replayable_streams() {
    let t = TestDir::new();
    let table = t.ok(&["worst-case", "--limit", "5/10s", "--out", "wc", "-q"]);
    assert!(
        table.contains("fixed_window") && table.contains("reached"),
        "{table}"
    );
    let json = t.ok(&[
        "worst-case",
        "--limit",
        "5/10s",
        "--out",
        "wc",
        "-q",
        "--format",
        "json",
    ]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    for r in &rows {
        assert_eq!(r["analytic"], r["max_in_window"], "{r}");
    }
    let fixed = rows
        .iter()
        .find(|r| r["algorithm"] == "fixed_window")
        .unwrap();
    assert_eq!(fixed["max_in_window"], 10);
    // The written scenario replays the stream and shows the same count.
    let replay = t.ok(&[
        "run",
        "wc/fixed_window.toml",
        "--quiet",
        "--no-charts",
        "--format",
        "json",
    ]);
    let replayed: Vec<serde_json::Value> = serde_json::from_str(&replay).unwrap();
    assert_eq!(replayed[0]["max_in_window"], 10);
    let csv = t.ok(&[
        "calibrate",
        "--limit",
        "10/1s",
        "--format",
        "csv",
        "--algos",
        "gcra,fixed_window",
    ]);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    assert!(header.iter().any(|h| h == "strict_worst"), "{header:?}");
    let rows: Vec<BTreeMap<String, String>> = reader.deserialize().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(
            row["window_ns"], "1000000000",
            "the window is a column: {row:?}"
        );
    }
    // A burst only for the algorithm that has one: GCRA's strict setting is 6/1s with a
    // burst of 5; the fixed window's (5/1s) has none to set.
    assert_eq!(
        (&*rows[0]["algorithm"], &*rows[0]["strict_burst"]),
        ("gcra", "5")
    );
    assert_eq!(
        (&*rows[1]["algorithm"], &*rows[1]["strict_burst"]),
        ("fixed_window", "")
    );
}

#[test]
fn a_killed_run_leaves_no_complete_looking_output_file() {
    let t = TestDir::new();
    // Long enough that it is still simulating when it is killed.
    let scenario = scenario_with("duration", "\"100000s\"").replace("rate = 2", "rate = 500");
    t.write("long.toml", scenario);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ratesim"))
        .current_dir(t.path())
        .args(["run", "long.toml", "--out", "out", "--quiet", "--force"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the run is under way (decision parts exist), then kill it hard.
    let started = std::time::Instant::now();
    while t.files_under("out").is_empty() && started.elapsed() < std::time::Duration::from_secs(30)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run finished before it could be interrupted"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let left = t.files_under("out");
    assert!(!left.is_empty(), "the run had started writing");
    for file in &left {
        let name = Path::new(file)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with('.'),
            "{name}: a killed run left a complete-looking file"
        );
        assert!(!EVERY_FILE.contains(&name.as_str()), "{name}");
    }
}

#[test]
fn compare_limit_moves_the_boundary_bursts_to_the_new_windows() {
    let t = TestDir::new();
    let json = t.ok(&[
        "compare",
        "--limit",
        "5/7s",
        "--algos",
        "fixed_window,sliding_window_log",
        "--quiet",
        "--no-charts",
        "--no-decisions",
        "--out",
        "cmp",
        "--format",
        "json",
    ]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let burst_fixed = rows
        .iter()
        .find(|r| r["scenario"] == "burst" && r["algorithm"] == "fixed_window")
        .unwrap();
    assert_eq!(
        burst_fixed["over_admission"], 2.0,
        "the teaching case survives a new window: {burst_fixed}"
    );
}

/// The README's `compare --limit 100/10s` used to leave the built-in uniform and
/// Poisson traffic far under the new limit (the sliding log denied nothing, every
/// algorithm showed 0.3x): their rates are now multiples of the limit's rate, so the
/// limit binds in every scenario of the suite under any --limit.
#[test]
fn compare_limit_keeps_every_scenario_of_the_suite_binding() {
    let t = TestDir::new();
    // Windows up to half the burst scenario's minute: a longer one leaves it less than
    // two windows, which `compare` warns about (a test below).
    for limit in ["100/10s", "3/1s", "1000/30s"] {
        let json = t.ok(&[
            "compare",
            "--limit",
            limit,
            "--algos",
            "sliding_window_log",
            "--quiet",
            "--no-charts",
            "--no-decisions",
            "--out",
            "cmp",
            "--format",
            "json",
        ]);
        let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
        assert_eq!(rows.len(), 3, "{json}");
        for row in &rows {
            let denied = row["denied"].as_u64().unwrap();
            assert!(
                denied > 0,
                "--limit {limit}: the log denied nothing in {row}"
            );
            assert_eq!(row["over_admission"], 1.0, "{row}");
        }
    }
}

#[test]
fn worst_case_searches_for_two_limits_keep_both_results() {
    let t = TestDir::new();
    t.ok(&["worst-case", "--limit", "5/10s", "--algos", "gcra", "-q"]);
    t.ok(&[
        "worst-case",
        "--limit",
        "3/1s",
        "--burst",
        "2",
        "--algos",
        "gcra",
        "-q",
    ]);
    let files = t.files_under("output");
    for expected in [
        "output/worst-case/5-per-10s/gcra.toml",
        "output/worst-case/3-per-1s-burst-2/gcra.toml",
    ] {
        assert!(
            files.iter().any(|f| f.ends_with(expected)),
            "{expected} in {files:?}"
        );
    }
    let replay = t.ok(&[
        "run",
        "output/worst-case/5-per-10s/gcra.toml",
        "-q",
        "--no-charts",
        "--format",
        "json",
    ]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&replay).unwrap();
    assert_eq!(rows[0]["max_in_window"], 9, "B + N - 1 replayed: {replay}");
}

#[test]
fn run_limit_replaces_the_scenarios_limit_and_moves_its_bursts() {
    let t = TestDir::new();
    let table = t.ok(&[
        "run",
        "scenarios/burst.toml",
        "--limit",
        "10/1s",
        "--algos",
        "fixed_window,sliding_window_log",
        "--quiet",
        "--no-charts",
        "--out",
        "r",
    ]);
    assert!(table.starts_with("burst — limit 10 per 1s\n"), "{table}");
    let (header, rows) = read_csv(&t.path().join("r/summary.csv"));
    let column = header.iter().position(|h| h == "max_in_window").unwrap();
    let fixed = rows.iter().find(|r| r[0] == "fixed_window").unwrap();
    assert_eq!(
        fixed[column], "20",
        "a full quota of 10 on each side: {rows:?}"
    );
}

#[test]
fn compare_limit_too_short_for_the_built_in_bursts_says_which_and_why() {
    let t = TestDir::new();
    let args = ["compare", "--limit", "5/1ns"];
    let out = t.run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    // The suite's uniform traffic (each client at twice the limit's rate) is the first
    // to say why such a window cannot be simulated.
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "ratesim: error: --limit: the built-in uniform scenario: the rate: 2x the limit of \
         5/1ns for each of 50 clients is more than about 18 billion requests per second\n",
        "{}",
        describe(&args, &out)
    );
    // A scenario file the user gave is named by its path.
    t.write(
        "b.toml",
        scenario_with("kind", "\"boundary_burst\"")
            .replace("rate = 2", "size = 2\nspread = \"1s\"")
            .replace("window = \"1s\"", "window = \"10s\""),
    );
    let args = ["compare", "--scenario", "b.toml", "--limit", "5/2s"];
    let out = t.run(&args);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "ratesim: error: --limit: b.toml: the window of 2s is too short to be the boundary \
         bursts' period (spread 1s; `period` is not set): boundary bursts need 2 × spread + \
         1ns < period; use a window of at least 2.000000002s or set `period`\n",
        "{}",
        describe(&args, &out)
    );
}

#[test]
fn boundary_bursts_sit_on_the_window_edges_even_with_a_later_start() {
    let t = TestDir::new();
    let text = scenario_with("kind", "\"boundary_burst\"")
        .replace("rate = 2", "size = 5\nstart = \"3s\"")
        .replace("window = \"1s\"", "window = \"2s\"");
    t.write("late.toml", text);
    t.ok(&[
        "run",
        "late.toml",
        "--quiet",
        "--no-charts",
        "--out",
        "late",
    ]);
    let (_, rows) = read_csv(&t.path().join("late/decisions.csv"));
    let first: Vec<&str> = rows
        .iter()
        .filter(|r| r[0] == "fixed_window")
        .take(10)
        .map(|r| r[2].as_str())
        .collect();
    assert_eq!(
        &first[..5],
        ["3.999999999"; 5],
        "first burst ends 1 ns before the 4 s edge"
    );
    assert_eq!(&first[5..], ["4"; 5]);
}

#[test]
fn window_counts_follow_the_key_named_worst() {
    // Keys a and b tie at 2 admitted per window: the series and its label must agree.
    let t = TestDir::new();
    t.write("trace.csv", "time_s,key\n0,a\n1,b\n2,b\n3,a\n");
    let scenario = TRACE_SCENARIO
        .replace("max_requests = 5", "max_requests = 2")
        .replace("window = \"1s\"", "window = \"10s\"")
        .replace("duration = \"10s\"", "duration = \"20s\"");
    t.write("s.toml", scenario);
    t.ok(&[
        "run",
        "s.toml",
        "--algos",
        "sliding_window_log",
        "--quiet",
        "--no-charts",
        "--out",
        "o",
    ]);
    let summary: Vec<serde_json::Value> =
        serde_json::from_slice(&fs::read(t.path().join("o/summary.json")).unwrap()).unwrap();
    let worst = summary[0]["worst_key"].as_str().unwrap().to_string();
    let (_, decisions) = read_csv(&t.path().join("o/decisions.csv"));
    let admitted: Vec<&str> = decisions
        .iter()
        .filter(|r| r[3] == worst && r[5] == "true")
        .map(|r| r[2].as_str())
        .collect();
    let (_, counts) = read_csv(&t.path().join("o/window_counts.csv"));
    assert!(counts.iter().all(|r| r[1] == worst), "{counts:?}");
    let mut rising = Vec::new();
    let mut last = 0u64;
    for r in &counts {
        let c: u64 = r[3].parse().unwrap();
        if c > last {
            rising.push(r[2].as_str());
        }
        last = c;
    }
    assert_eq!(
        rising, admitted,
        "the series rises exactly at {worst}'s admissions"
    );
}

#[test]
fn a_request_that_can_never_fit_has_an_empty_retry_after() {
    let t = TestDir::new();
    t.write("trace.csv", "time_s,key,cost\n0,a,1\n1,a,9\n");
    t.write("s.toml", TRACE_SCENARIO);
    t.ok(&[
        "run",
        "s.toml",
        "--algos",
        "fixed_window",
        "--quiet",
        "--no-charts",
        "--out",
        "o",
    ]);
    let (_, rows) = read_csv(&t.path().join("o/decisions.csv"));
    assert_eq!(rows[1][4], "9");
    assert_eq!(rows[1][5], "false");
    assert_eq!(
        rows[1][7], "",
        "no wait would help a cost above the capacity"
    );
}

#[test]
fn files_left_by_an_earlier_run_are_pointed_out_not_passed_off() {
    let t = TestDir::new();
    t.ok(&["run", "scenarios/burst.toml", "--out", "d", "--quiet"]);
    let args = [
        "run",
        "scenarios/uniform.toml",
        "--out",
        "d",
        "--quiet",
        "--no-charts",
        "--no-decisions",
    ];
    let out = t.run(&args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for stale in [
        "decisions.csv",
        "timeline.png",
        "window_counts.png",
        "over_admission.png",
    ] {
        assert!(
            stderr.contains(&format!("{stale} is from an earlier run")),
            "{stale} not pointed out: {stderr}"
        );
    }
    for fresh in ["summary.csv", "summary.json", "window_counts.csv"] {
        assert!(
            !stderr.contains(fresh),
            "{fresh} was written by this run: {stderr}"
        );
    }
    assert!(
        t.path().join("d/timeline.png").exists(),
        "nothing is deleted"
    );
    // The same run again into a clean directory says nothing of the kind.
    let args = [
        "run",
        "scenarios/uniform.toml",
        "--out",
        "clean",
        "--quiet",
        "--no-charts",
    ];
    let out = t.run(&args);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("earlier run"),
        "{}",
        describe(&args, &out)
    );
}

#[test]
fn a_run_without_requests_leaves_rates_and_keys_empty_not_zero() {
    let t = TestDir::new();
    t.write("empty.csv", "time_s,key\n");
    t.write(
        "empty.toml",
        "name = \"empty\"\nduration = \"10s\"\n[limit]\nmax_requests = 5\nwindow = \"1s\"\n\
         [[traffic]]\nkind = \"trace\"\npath = \"empty.csv\"\n\
         [client]\nkind = \"retry\"\nmax_retries = 2\n",
    );
    t.ok(&["run", "empty.toml", "--out", "o", "--quiet", "--no-charts"]);
    let json: Vec<serde_json::Value> =
        serde_json::from_str(&fs::read_to_string(t.path().join("o/summary.json")).unwrap())
            .unwrap();
    for row in &json {
        for field in [
            "allow_rate",
            "worst_key",
            "latency_p50_ns",
            "latency_max_ns",
        ] {
            assert!(row[field].is_null(), "{field}: {row}");
        }
        assert_eq!(row["requests"], 0, "{row}");
    }
    let (header, rows) = read_csv(&t.path().join("o/summary.csv"));
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    for row in &rows {
        for field in ["allow_rate", "worst_key", "latency_p50_ns"] {
            assert_eq!(row[column(field)], "", "{field} in {row:?}");
        }
    }
}

#[test]
fn compare_limit_warns_when_a_run_is_shorter_than_two_of_its_windows() {
    let t = TestDir::new();
    let args = [
        "compare",
        "--limit",
        "100/60s",
        "--quiet",
        "--no-charts",
        "--no-decisions",
        "--out",
        "cmp",
    ];
    let out = t.run(&args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("less than two windows"))
        .collect();
    assert_eq!(warned.len(), 1, "only burst (60 s) is too short: {stderr}");
    assert!(warned[0].contains("burst: the run lasts 1m"), "{stderr}");
}

/// Three clients, each bursting at every boundary; client-1 alone sends more.
const THREE_CLIENTS: &str = r#"
name = "three"
duration = "30s"
algorithms = ["fixed_window", "sliding_window_log"]
[limit]
max_requests = 5
window = "10s"
[[traffic]]
kind = "boundary_burst"
size = 5
spread = 0
keys = 3
"#;

#[test]
fn key_picks_the_client_every_keyed_chart_and_window_counts_csv_follow() {
    let t = TestDir::new();
    t.write("three.toml", THREE_CLIENTS);
    t.ok(&["run", "three.toml", "--key", "client-2", "--out", "k", "-q"]);
    let csv = fs::read_to_string(t.path().join("k/window_counts.csv")).unwrap();
    let keys: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert!(
        !keys.is_empty() && keys.iter().all(|&k| k == "client-2"),
        "{csv}"
    );
    assert!(t.path().join("k/timeline_zoom.png").exists());
}

#[test]
fn an_unknown_key_is_refused_naming_the_closest_clients() {
    let t = TestDir::new();
    t.write("three.toml", THREE_CLIENTS);
    let args = ["run", "three.toml", "--key", "client-7", "--out", "k", "-q"];
    let out = t.run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no client named `client-7`")
            && stderr.contains("did you mean `client-0`, `client-1`, `client-2`?"),
        "{stderr}"
    );
}

#[test]
fn chart_format_svg_writes_svg_charts_and_embeds_them_in_the_report() {
    let t = TestDir::new();
    t.ok(&[
        "run",
        "scenarios/burst.toml",
        "--chart-format",
        "svg",
        "--out",
        "s",
        "-q",
    ]);
    for chart in [
        "timeline",
        "timeline_zoom",
        "window_counts",
        "over_admission",
    ] {
        let svg = fs::read_to_string(t.path().join("s").join(format!("{chart}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{chart}");
        assert!(
            !t.path().join("s").join(format!("{chart}.png")).exists(),
            "{chart}"
        );
    }
    let html = fs::read_to_string(t.path().join("s/report.html")).unwrap();
    assert_eq!(html.matches("src=\"data:image/svg+xml;base64,").count(), 4);
}

#[test]
fn gif_writes_the_sliding_window_animation() {
    let t = TestDir::new();
    t.ok(&[
        "run",
        "scenarios/burst.toml",
        "--gif",
        "--no-charts",
        "--no-decisions",
        "--out",
        "g",
        "-q",
    ]);
    let bytes = fs::read(t.path().join("g/window_slide.gif")).unwrap();
    assert_eq!(&bytes[..6], b"GIF89a");
    let le16 = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    assert_eq!((le16(6), le16(8)), (1200, 560));
    // One image descriptor per frame: far more than one frame.
    let frames = bytes.windows(2).filter(|w| w == b"\x21\xf9").count();
    assert!(frames > 20, "{frames} frames");
}

#[test]
fn compare_takes_key_for_every_scenario_it_runs() {
    let t = TestDir::new();
    t.write("three.toml", THREE_CLIENTS);
    let args = ["compare", "--scenario", "three.toml", "--key", "client-1"];
    t.ok(&[&args[..], &["--out", "c", "-q", "--no-charts"]].concat());
    let csv = fs::read_to_string(t.path().join("c/three/window_counts.csv")).unwrap();
    assert!(
        csv.lines().skip(1).all(|l| l.contains(",client-1,")),
        "{csv}"
    );
}

/// Without the `redis` feature, `--store` says how to get it, and runs nothing.
#[cfg(not(feature = "redis"))]
#[test]
fn store_without_the_redis_feature_says_how_to_build_it() {
    let t = TestDir::new();
    let args = [
        "run",
        "scenarios/burst.toml",
        "--out",
        "out",
        "--store",
        "redis://127.0.0.1:6379",
    ];
    let out = t.run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--features redis"),
        "{}",
        describe(&args, &out)
    );
    assert!(!t.path().join("out").exists());
}
