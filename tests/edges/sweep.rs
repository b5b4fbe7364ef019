//! `ratesim sweep` and the limit overrides, through the command: the table's order at
//! ties, which row the "run it" line names, goals at their exact boundary, and what
//! burst a configuration gets when none is given.

use std::fs;
use std::path::Path;
use std::process::Output;

use assert_cmd::Command;
use ratesim::report::sweep::Goal;
use ratesim::sim::Metrics;

/// Runs `ratesim args` in `dir`.
fn ratesim(dir: &Path, args: &[&str]) -> Output {
    Command::cargo_bin("ratesim")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// Runs `ratesim args` in `dir`, which must succeed; its stdout.
fn ok(dir: &Path, args: &[&str]) -> String {
    let out = ratesim(dir, args);
    assert!(
        out.status.success(),
        "ratesim {}\n{}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `ratesim sweep SCENARIO args… --out o --quiet --no-charts` in `dir`; its stdout.
fn sweep(dir: &Path, scenario: &str, args: &[&str]) -> String {
    let common = ["--out", "o", "--quiet", "--no-charts"];
    ok(dir, &[&["sweep", scenario], args, &common[..]].concat())
}

/// A scenario no configuration below denies anything: one request a minute.
const QUIET: &str = "name = \"quiet\"\nduration = \"60s\"\n\
                     [limit]\nmax_requests = 100\nwindow = \"10s\"\n\
                     [[traffic]]\nkind = \"uniform\"\nrate = \"0.01\"\n";

/// Writes `text` as `dir/s.toml`.
fn write(dir: &Path, text: &str) -> String {
    fs::write(dir.join("s.toml"), text).unwrap();
    "s.toml".to_string()
}

/// The table's rows as `(algorithm, max, window, burst)`, top to bottom.
fn table_rows(stdout: &str) -> Vec<(String, String, String, String)> {
    stdout
        .lines()
        .filter(|l| l.starts_with('│') && !l.contains("algorithm"))
        .map(|l| {
            let cells: Vec<String> = l
                .trim_matches('│')
                .split('┆')
                .map(|c| c.trim().to_string())
                .collect();
            (
                cells[0].clone(),
                cells[1].clone(),
                cells[2].clone(),
                cells[3].clone(),
            )
        })
        .collect()
}

fn run_it(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.starts_with("run it:"))
        .collect()
}

/// Rows that differ only in burst: the largest burst is the least restrictive. Bursts
/// listed 50, 200, 100 (so neither the first nor the last listed is the largest) on a
/// stream none of them denies: the table lists 200, 100, 50, and the "run it" line
/// names 200. Rules out the smallest burst first, the order given, and the reverse.
#[test]
fn among_rows_equal_but_for_the_burst_the_largest_burst_is_least_restrictive() {
    let t = tempfile::tempdir().unwrap();
    let s = write(t.path(), QUIET);
    let stdout = sweep(
        t.path(),
        &s,
        &[
            "--set",
            "burst=50,200,100",
            "--algos",
            "token_bucket,gcra",
            "--goal",
            "clients_denied<=0",
        ],
    );
    let bursts: Vec<(String, String)> = table_rows(&stdout)
        .into_iter()
        .map(|(a, _, _, b)| (a, b))
        .collect();
    let expected: Vec<(String, String)> = ["200", "100", "50"]
        .iter()
        .flat_map(|b| ["token_bucket", "gcra"].map(|a| (a.to_string(), b.to_string())))
        .collect();
    assert_eq!(bursts, expected, "{stdout}");
    assert_eq!(
        run_it(&stdout),
        ["run it: ratesim run s.toml --limit 100/10s --burst 200 --algos token_bucket"],
        "{stdout}"
    );
}

/// Equal rows keep their order (the sort is stable): configuration order, then the
/// algorithms' order. 36 configurations (max 1 … 32 × window 1 s … 32 s) × 6
/// algorithms, none denying anything: rows tie on everything but the rate, and the six
/// configurations at 1 per second make 36 tied rows (the standard unstable sort leaves
/// a short slice in order, which is why the 18-row sweeps elsewhere could not tell).
/// The expected order is computed here with a stable sort on the rate alone. Rules out
/// an unstable sort.
#[test]
fn tied_rows_keep_configuration_then_algorithm_order_in_a_large_sweep() {
    let t = tempfile::tempdir().unwrap();
    let s = write(t.path(), QUIET);
    let powers = ["1", "2", "4", "8", "16", "32"];
    let windows = powers.map(|p| format!("{p}s"));
    let set_max = format!("max_requests={}", powers.join(","));
    let set_window = format!("window={}", windows.join(","));
    let stdout = sweep(
        t.path(),
        &s,
        &[
            "--set",
            &set_max,
            "--set",
            &set_window,
            "--set",
            "burst=64",
            "--top",
            "0",
        ],
    );
    // Rows in sweep.csv's order: max slowest, then window, then the algorithms (`all`:
    // the registry's order); the table shows a burst only where it is used.
    let mut expected: Vec<(String, String, String, String)> = Vec::new();
    for max in powers {
        for window in &windows {
            for a in ratesim::Registry::builtin()
                .entries()
                .filter(|e| !e.is_preset())
            {
                let burst = if a.uses_burst() { "64" } else { "-" };
                expected.push((a.name().into(), max.into(), window.clone(), burst.into()));
            }
        }
    }
    let rate = |r: &(String, String, String, String)| -> (u64, u64) {
        (
            r.1.parse().unwrap(),
            r.2.trim_end_matches('s').parse().unwrap(),
        )
    };
    // Highest rate first, compared exactly; sort_by is stable.
    expected.sort_by(|a, b| {
        let ((ma, wa), (mb, wb)) = (rate(a), rate(b));
        (mb * wa).cmp(&(ma * wb))
    });
    let got = table_rows(&stdout);
    assert_eq!(got.len(), 216, "{stdout}");
    assert_eq!(got, expected);
}

/// Without `--goal` the table is the whole answer: no row is singled out, so there is
/// no verdict and no "run it" line; with a goal no row meets, there is a verdict and
/// still no "run it" line. Rules out naming the table's first row when nothing was
/// asked (or nothing qualified).
#[test]
fn without_a_goal_met_no_row_is_named_to_run() {
    let t = tempfile::tempdir().unwrap();
    let s = write(t.path(), QUIET);
    let base = ["--set", "max_requests=50,100"];
    let none = sweep(t.path(), &s, &base);
    assert!(table_rows(&none).len() == 12, "{none}");
    assert!(run_it(&none).is_empty(), "{none}");
    assert!(!none.contains("least restrictive is"), "{none}");
    let mut unmet = base.to_vec();
    unmet.extend(["--goal", "clients_denied>=1"]);
    let unmet = sweep(t.path(), &s, &unmet);
    assert!(
        unmet.contains("goal clients_denied>=1: 0 of 12 rows meet it; none does"),
        "{unmet}"
    );
    assert!(run_it(&unmet).is_empty(), "{unmet}");
    let mut met = base.to_vec();
    met.extend(["--goal", "clients_denied<=0"]);
    let met = sweep(t.path(), &s, &met);
    assert_eq!(
        run_it(&met),
        ["run it: ratesim run s.toml --limit 100/10s --algos token_bucket"],
        "{met}"
    );
}

/// Goals are judged exactly, at their boundary too: the fixed window's over-admission
/// on a boundary burst is exactly 2, which meets `<=2` and `>=2` and not `<2`, `>2` or
/// `<=1.999999999`. Rules out `<=` read as `<` (and `>=` as `>`), and comparing at a
/// float's precision.
#[test]
fn a_goal_holds_at_exactly_its_value_through_the_command() {
    let t = tempfile::tempdir().unwrap();
    let s = write(
        t.path(),
        "name = \"b\"\nduration = \"30s\"\n[limit]\nmax_requests = 5\nwindow = \"10s\"\n\
         [[traffic]]\nkind = \"boundary_burst\"\nsize = 5\n",
    );
    for (goal, met) in [
        ("over_admission<=2", true),
        ("over_admission>=2", true),
        ("over_admission<2", false),
        ("over_admission>2", false),
        ("over_admission<=1.999999999", false),
        ("over_admission>=2.000000001", false),
    ] {
        let args = ["--algos", "fixed_window", "--goal", goal, "--format", "csv"];
        let csv = sweep(t.path(), &s, &args);
        let row = csv.lines().nth(1).unwrap();
        assert!(row.contains(",2.0,"), "over_admission 2: {row}");
        assert!(row.ends_with(&format!(",{met}")), "{goal}: {row}");
    }
}

fn over(max_in_window: u64, limit: u64) -> Metrics {
    Metrics {
        max_in_window,
        limit_max_requests: limit,
        ..Metrics::default()
    }
}

/// The documented example, 499 and 501 admitted of 400 against `over_admission<=1.25`,
/// with the boundary itself (500), and a count that no `f64` can tell from 1.25:
/// 12,500,000,000,000,001 of 10¹⁶ is 1.2500000000000001, which as a float is 1.25.
/// Rules out `<=` read as `<`, and comparing the float `over_admission` (or the ratio
/// and the goal as floats).
#[test]
fn a_goal_compares_the_exact_ratio_even_where_floats_cannot() {
    let at_most = Goal::parse("over_admission<=1.25").unwrap();
    let above = Goal::parse("over_admission>1.25").unwrap();
    for (admitted, of, within) in [
        (499, 400, true),
        (500, 400, true),
        (501, 400, false),
        (12_500_000_000_000_001, 10_000_000_000_000_000, false),
        (12_500_000_000_000_000, 10_000_000_000_000_000, true),
    ] {
        let m = over(admitted, of);
        assert_eq!(at_most.is_met_by(&m), Some(within), "{admitted}/{of}");
        assert_eq!(above.is_met_by(&m), Some(!within), "{admitted}/{of}");
    }
    assert_eq!(
        12_500_000_000_000_001u64 as f64 / 1e16,
        1.25,
        "floats cannot tell"
    );
}

/// The burst a configuration gets when `--set burst` is not given: each configuration's
/// `max_requests`, unless the scenario sets a burst *other than* its `max_requests`,
/// which is then kept. A scenario that writes `burst = 100` beside `max_requests = 100`
/// follows the swept max (200, 400); one with `burst = 150` keeps 150. Rules out keeping
/// any burst the file writes, and never keeping one.
#[test]
fn a_sweep_keeps_the_scenarios_burst_only_when_it_differs_from_its_max() {
    let t = tempfile::tempdir().unwrap();
    for (burst, expected) in [("100", ["200", "400"]), ("150", ["150", "150"])] {
        let text = QUIET.replace(
            "window = \"10s\"\n",
            &format!("window = \"10s\"\nburst = {burst}\n"),
        );
        let s = write(t.path(), &text);
        let args = ["--set", "max_requests=200,400", "--algos", "token_bucket"];
        let csv = sweep(t.path(), &s, &[&args[..], &["--format", "csv"]].concat());
        // The column named `burst`, wherever the table puts it.
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let column = header
            .iter()
            .position(|&c| c == "burst")
            .expect("a burst column");
        let bursts: Vec<&str> = lines.map(|l| l.split(',').nth(column).unwrap()).collect();
        assert_eq!(bursts, expected, "burst = {burst}: {csv}");
    }
}

/// `run --limit MAX/WINDOW` without `--burst` gives the buckets the new limit's MAX as
/// their burst (the flag's documented default), even when the scenario had a burst of
/// its own; `--burst` sets it. Rules out keeping the scenario's burst.
#[test]
fn run_limit_without_burst_takes_the_new_max_as_the_burst() {
    let t = tempfile::tempdir().unwrap();
    let text = QUIET.replace("window = \"10s\"\n", "window = \"10s\"\nburst = 150\n");
    let s = write(t.path(), &text);
    for (extra, burst) in [(&[][..], "40"), (&["--burst", "25"][..], "25")] {
        let mut args = vec![
            "run",
            &s,
            "--limit",
            "40/1s",
            "--algos",
            "token_bucket",
            "--format",
            "json",
            "--out",
            "o",
            "--quiet",
            "--no-charts",
            "--no-decisions",
        ];
        args.extend(extra);
        let json = ok(t.path(), &args);
        let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            rows[0]["limit_burst"].to_string(),
            burst,
            "{extra:?}: {json}"
        );
        assert_eq!(rows[0]["limit_max_requests"], 40);
    }
}
