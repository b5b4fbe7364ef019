//! Issue 31 item 13: one rule for every command — a file an earlier run left in the
//! folder that this run did not rewrite is named on stderr (`.svg`/`.gif` included).

use std::path::Path;

use assert_cmd::Command;

fn scenario(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.toml"))
        .display()
        .to_string()
}

/// Runs `ratesim args` in `dir`, asserting success; returns stderr.
fn stderr_of(dir: &Path, args: &[&str]) -> String {
    let out = Command::cargo_bin("ratesim")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ratesim {args:?}\n{stderr}");
    stderr
}

fn stale_named(stderr: &str, file: &str) -> bool {
    stderr
        .lines()
        .any(|l| l.contains(file) && l.contains("is from an earlier run"))
}

#[test]
fn compare_no_charts_names_the_matrix_png_it_did_not_redraw() {
    let t = tempfile::tempdir().unwrap();
    let burst = scenario("burst");
    let base = [
        "compare",
        "--scenario",
        burst.as_str(),
        "--algos",
        "fixed_window",
        "--out",
        "c",
        "-q",
        "--no-decisions",
    ];
    let first = stderr_of(t.path(), &base);
    assert!(!first.contains("earlier run"), "{first}");
    assert!(t.path().join("c/over_admission_matrix.png").is_file());
    let mut again = base.to_vec();
    again.extend(["--limit", "7/10s", "--no-charts"]);
    let second = stderr_of(t.path(), &again);
    assert!(
        stale_named(&second, "over_admission_matrix.png"),
        "the old matrix chart beside the new CSV: {second}"
    );
    assert!(
        !stale_named(&second, "over_admission_matrix.csv"),
        "{second}"
    );
}

#[test]
fn a_run_in_svg_names_the_pngs_and_gif_an_earlier_run_left() {
    let t = tempfile::tempdir().unwrap();
    let burst = scenario("burst");
    let base = ["run", burst.as_str(), "--out", "r", "-q", "--no-decisions"];
    let mut first = base.to_vec();
    first.push("--gif");
    stderr_of(t.path(), &first);
    let mut svg = base.to_vec();
    svg.extend(["--chart-format", "svg"]);
    let stderr = stderr_of(t.path(), &svg);
    for file in ["timeline.png", "window_counts.png", "window_slide.gif"] {
        assert!(stale_named(&stderr, file), "{file}: {stderr}");
    }
    assert!(!stale_named(&stderr, "timeline.svg"), "{stderr}");
}

#[test]
fn a_sweep_without_charts_names_the_frontier_an_earlier_sweep_drew() {
    let t = tempfile::tempdir().unwrap();
    let burst = scenario("burst");
    let base = [
        "sweep",
        burst.as_str(),
        "--set",
        "max_requests=5,6",
        "--algos",
        "gcra",
        "--out",
        "s",
        "-q",
    ];
    let first = stderr_of(t.path(), &base);
    assert!(!first.contains("earlier run"), "{first}");
    let mut again = base.to_vec();
    again.push("--no-charts");
    let stderr = stderr_of(t.path(), &again);
    assert!(stale_named(&stderr, "frontier.png"), "{stderr}");
}
