//! What the reports and the help say, checked against what the runs write (issue 31:
//! items 7, 8, 16, 17 and 19): help that counts the charts a run writes, the bundled
//! scenarios all named in the README, one-line usage errors, the `clients_denied`
//! column, and the global sliding log named as the reference in a deployment.

use std::fs;
use std::path::Path;

use assert_cmd::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `ratesim args` in `dir`, asserting success; returns stdout.
fn ok(dir: &Path, args: &[&str]) -> String {
    let out = Command::cargo_bin("ratesim")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ratesim {args:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn scenario(name: &str) -> String {
    repo()
        .join("scenarios")
        .join(format!("{name}.toml"))
        .display()
        .to_string()
}

fn files_with(dir: &Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(ext))
        .collect();
    names.sort();
    names
}

const COUNT_WORDS: [&str; 7] = ["one", "two", "three", "four", "five", "six", "seven"];

#[test]
fn run_help_names_every_chart_a_run_writes_and_counts_them_right() {
    let t = tempfile::tempdir().unwrap();
    ok(t.path(), &["run", &scenario("burst"), "--out", "o", "-q"]);
    let pngs = files_with(&t.path().join("o"), ".png");
    assert!(!pngs.is_empty());
    let help = ok(t.path(), &["run", "--help"]).replace('\n', " ");
    let count = COUNT_WORDS[pngs.len() - 1];
    assert!(
        help.contains(&format!("{count} PNG charts")),
        "run writes {pngs:?}; --help says:\n{help}"
    );
    for png in &pngs {
        let stem = png.trim_end_matches(".png");
        assert!(help.contains(stem), "--help does not name {png}:\n{help}");
    }
}

#[test]
fn the_readme_lists_every_bundled_scenario_and_gif_on_compare() {
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme.find("Bundled in `scenarios/`").expect("the list");
    let list = &readme[start..start + readme[start..].find("\n\n").unwrap()];
    for (file, _) in ratesim::bundled::SCENARIOS {
        let name = file.trim_end_matches(".toml");
        assert!(
            list.contains(&format!("`{name}`")),
            "README's list omits {name}:\n{list}"
        );
    }
    assert!(readme.contains("| `--gif` | off | (`run`, `compare`)"));
    assert!(!readme.contains("the seed's deterministic demo"));
    let t = tempfile::tempdir().unwrap();
    let demo = ok(t.path(), &["--help"]);
    assert!(!demo.contains("seed's demo"), "{demo}");
    // --gif does work on compare, as the README now says.
    ok(
        t.path(),
        &[
            "compare",
            "--scenario",
            &scenario("burst"),
            "--gif",
            "--out",
            "c",
            "-q",
        ],
    );
    assert!(t.path().join("c/burst/window_slide.gif").is_file());
}

#[test]
fn usage_errors_are_one_line_starting_ratesim_error() {
    let t = tempfile::tempdir().unwrap();
    let cases: [&[&str]; 4] = [
        &["run", "--limt", "3", "x.toml"],
        &["frob"],
        &["run"],
        &["run", "x.toml", "--limit", "abc"],
    ];
    for args in cases {
        let out = Command::cargo_bin("ratesim")
            .unwrap()
            .current_dir(t.path())
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("ratesim: error: "), "{args:?}: {stderr}");
    }
    let out = Command::cargo_bin("ratesim")
        .unwrap()
        .args(["run", "--limt", "3", "x.toml"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("'--limit'"), "the tip is kept: {stderr}");
    assert!(stderr.contains("usage: ratesim run"), "{stderr}");
}

/// The value of `column` in each row of a CSV, by algorithm.
fn csv_column(path: &Path, column: &str) -> Vec<(String, String)> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    let at = headers.iter().position(|h| h == column).unwrap();
    let algo = headers.iter().position(|h| h == "algorithm").unwrap();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[algo].to_string(), r[at].to_string())
        })
        .collect()
}

#[test]
fn the_run_table_and_report_show_clients_denied_from_summary_csv() {
    let t = tempfile::tempdir().unwrap();
    let stdout = ok(
        t.path(),
        &[
            "run",
            &scenario("zipf_keys"),
            "--out",
            "o",
            "-q",
            "--no-decisions",
        ],
    );
    let html = fs::read_to_string(t.path().join("o/report.html")).unwrap();
    assert!(stdout.contains("clients"), "{stdout}");
    assert!(html.contains("<th>clients denied</th>"));
    let rows = csv_column(&t.path().join("o/summary.csv"), "clients_denied");
    let denied = csv_column(&t.path().join("o/summary.csv"), "denied");
    for ((algo, clients), (_, requests)) in rows.iter().zip(&denied) {
        let line = stdout
            .lines()
            .find(|l| l.contains(&format!(" {algo} ")))
            .unwrap_or_else(|| panic!("no row for {algo}:\n{stdout}"));
        let cells: Vec<&str> = line
            .split(['│', '┆'])
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        // algorithm, allowed, denied, clients denied, ...
        assert_eq!(cells[2], requests, "{line}");
        assert_eq!(cells[3], clients, "{line}");
        let row = format!("<tr><td>{algo}</td>");
        let at = html.find(&row).unwrap();
        let tr = &html[at..at + html[at..].find("</tr>").unwrap()];
        assert!(
            tr.contains(&format!("<td>{requests}</td><td>{clients}</td>")),
            "{tr}"
        );
    }
}

#[test]
fn a_deployment_names_the_global_sliding_log_as_the_reference() {
    let t = tempfile::tempdir().unwrap();
    let stdout = ok(
        t.path(),
        &[
            "run",
            &scenario("nodes_synced"),
            "--out",
            "o",
            "-q",
            "--no-decisions",
        ],
    );
    let html = fs::read_to_string(t.path().join("o/report.html")).unwrap();
    assert!(!html.contains("the exact reference the others are compared with"));
    assert!(html.contains("global sliding log (one server seeing every request)"));
    // nodes_synced's fixed window reads 8×: the cause sentence says why beyond 2×.
    assert!(html.contains("Here each of the 4 servers does this with the count it knows"));
    assert!(
        stdout.contains("global sliding log (one server seeing"),
        "{stdout}"
    );
    let nodes = ok(
        t.path(),
        &[
            "compare",
            "--nodes",
            "1,2",
            "--scenario",
            &scenario("nodes_synced"),
            "--out",
            "n",
            "-q",
            "--no-decisions",
            "--no-charts",
        ],
    );
    assert!(!nodes.contains("the sliding log is exact"), "{nodes}");
    assert!(
        nodes.contains("the exact reference is the global sliding log"),
        "{nodes}"
    );
    // Without a deployment the sliding log is the reference, as before.
    ok(
        t.path(),
        &[
            "run",
            &scenario("burst"),
            "--out",
            "b",
            "-q",
            "--no-decisions",
        ],
    );
    let html = fs::read_to_string(t.path().join("b/report.html")).unwrap();
    assert!(html.contains("the exact reference the others are compared with"));
}

#[test]
fn nodes_split_sticky_describes_the_load_nodes_csv_shows() {
    let text = fs::read_to_string(scenario("nodes_split_sticky")).unwrap();
    assert!(!text.contains("idle"), "{text}");
    let t = tempfile::tempdir().unwrap();
    ok(
        t.path(),
        &[
            "run",
            &scenario("nodes_split_sticky"),
            "--out",
            "o",
            "-q",
            "--no-decisions",
        ],
    );
    let mut reader = csv::Reader::from_path(t.path().join("o/nodes.csv")).unwrap();
    let mut attempts = [0u64; 4];
    for r in reader.records() {
        let r = r.unwrap();
        if &r[0] == "token_bucket" {
            attempts[r[1].parse::<usize>().unwrap()] = r[3].parse().unwrap();
        }
    }
    // "servers 0 and 3 each get two of the six clients (about 120 attempts), servers 1
    // and 2 one each": every server busy, 0 and 3 the busiest.
    assert!(attempts.iter().all(|&a| a > 0), "{attempts:?}");
    assert!(
        attempts[0].min(attempts[3]) > attempts[1].max(attempts[2]),
        "{attempts:?}"
    );
    assert!(text.contains("servers 0 and 3 each get two of the six clients"));
}

#[test]
fn the_matrix_csv_is_long_with_the_servers_of_each_scenario() {
    let t = tempfile::tempdir().unwrap();
    ok(
        t.path(),
        &[
            "compare",
            "--scenario",
            &scenario("burst"),
            "--scenario",
            &scenario("nodes_synced"),
            "--algos",
            "fixed_window,gcra",
            "--out",
            "c",
            "-q",
            "--no-decisions",
            "--no-charts",
        ],
    );
    let matrix = fs::read_to_string(t.path().join("c/over_admission_matrix.csv")).unwrap();
    let lines: Vec<&str> = matrix.lines().collect();
    assert_eq!(lines[0], "scenario,nodes,algorithm,over_admission");
    assert_eq!(lines.len(), 5, "{matrix}");
    // Each row is that run's summary.csv over_admission, with its number of servers.
    for line in &lines[1..] {
        let cells: Vec<&str> = line.split(',').collect();
        let nodes = if cells[0] == "nodes_synced" { "4" } else { "" };
        assert_eq!(cells[1], nodes, "{line}");
        let summary = csv_column(
            &t.path().join("c").join(cells[0]).join("summary.csv"),
            "over_admission",
        );
        let (_, ratio) = summary.iter().find(|(a, _)| a == cells[2]).unwrap();
        assert_eq!(cells[3], ratio, "{line}");
    }
}

/// Issue 31 item 14: a century-long scenario's decisions.csv (petabytes) is refused
/// before anything is written, unless --no-decisions or --force.
#[test]
fn a_run_whose_decisions_csv_cannot_fit_is_refused_before_it_starts() {
    let t = tempfile::tempdir().unwrap();
    let text = fs::read_to_string(scenario("uniform"))
        .unwrap()
        .lines()
        .map(|l| {
            if l.starts_with("duration") {
                "duration = \"36500d\""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    fs::write(t.path().join("century.toml"), text).unwrap();
    for args in [
        &["run", "century.toml", "--out", "o"][..],
        &["compare", "--scenario", "century.toml", "--out", "c"][..],
        &[
            "compare",
            "--nodes",
            "1,2",
            "--scenario",
            "century.toml",
            "--out",
            "n",
        ][..],
    ] {
        let out = Command::cargo_bin("ratesim")
            .unwrap()
            .current_dir(t.path())
            .args(args)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let error = stderr
            .lines()
            .find(|l| l.starts_with("ratesim: error: "))
            .unwrap_or_else(|| panic!("{args:?}: {stderr}"));
        assert!(error.contains("decisions.csv would be about"), "{error}");
        assert!(error.contains("--force"), "{error}");
        for dir in ["o", "c", "n"] {
            assert!(!t.path().join(dir).exists(), "{args:?} wrote {dir}");
        }
    }
    let out = Command::cargo_bin("ratesim")
        .unwrap()
        .args(["run", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("--force"));
}

/// Issue 31 item 5 (in part): report.html says in one sentence why the fixed window
/// over-admits, when it does, and says nothing of the kind when it does not.
#[test]
fn report_html_says_why_the_fixed_window_over_admits() {
    let t = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for name in ["burst", "uniform", "nodes_split_sticky"] {
        ok(
            t.path(),
            &[
                "run",
                &scenario(name),
                "--out",
                name,
                "-q",
                "--no-decisions",
                "--no-charts",
            ],
        );
        let html = fs::read_to_string(t.path().join(name).join("report.html")).unwrap();
        let said = html.contains("resets that count to 0 at each boundary");
        let summary = csv_column(&t.path().join(name).join("summary.csv"), "over_admission");
        let fixed = summary.iter().find(|(a, _)| a == "fixed_window").unwrap();
        let over = fixed.1.parse::<f64>().unwrap() > 1.0;
        assert_eq!(said, over, "{name}: over-admission {}", fixed.1);
        seen.push(over);
    }
    assert!(seen.contains(&true) && seen.contains(&false), "{seen:?}");
}

/// Issue 31 item 5 (in part): the boundary zoom has a y-axis title (read from its SVG).
#[test]
fn the_boundary_zoom_names_its_count_axis() {
    let t = tempfile::tempdir().unwrap();
    let args = [
        "run",
        &scenario("burst"),
        "--out",
        "o",
        "-q",
        "--chart-format",
        "svg",
    ];
    ok(t.path(), &args);
    let svg = fs::read_to_string(t.path().join("o/timeline_zoom.svg")).unwrap();
    // plotters' SVG puts each text on its own line between the tags.
    let titles = svg.lines().filter(|l| l.trim() == "in window").count();
    assert!(titles >= 1, "no y-axis title in the zoom");
}

/// Issue 31 item 4: over_admission_vs_nodes draws every algorithm in a panel of its own
/// (equal lines used to hide one another): with three identical series, each name is a
/// legend entry and a panel title.
#[test]
fn every_algorithm_has_its_own_panel_in_over_admission_vs_nodes() {
    use plotters::prelude::*;
    use ratesim::report::charts::{NodesChart, NodesSeries, draw_nodes};
    ratesim::report::register_fonts().unwrap();
    let names = [
        "fixed_window",
        "sliding_window_log",
        "sliding_window_counter",
    ];
    let input = NodesChart {
        title: "equal lines".to_string(),
        series: names
            .iter()
            .enumerate()
            .map(|(i, name)| NodesSeries {
                algorithm: name.to_string(),
                color_slot: i + 2,
                points: vec![(1, 1.0), (2, 2.0), (4, 4.0)],
            })
            .collect(),
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1200, 700)).into_drawing_area();
        draw_nodes(&input, &root).unwrap();
        root.present().unwrap();
    }
    for name in names {
        let texts = svg.lines().filter(|l| l.trim() == name).count();
        assert_eq!(texts, 2, "{name}: a legend entry and a panel title");
    }
}

/// Issue 31 item 5 (in part): window_counts.png names its peak circles in a legend and
/// titles its count axis (read from the SVG).
#[test]
fn window_counts_has_a_legend_for_its_peak_circles_and_a_count_axis_title() {
    let t = tempfile::tempdir().unwrap();
    let args = [
        "run",
        &scenario("burst"),
        "--out",
        "o",
        "-q",
        "--no-decisions",
        "--chart-format",
        "svg",
    ];
    ok(t.path(), &args);
    let svg = fs::read_to_string(t.path().join("o/window_counts.svg")).unwrap();
    let texts: Vec<&str> = svg.lines().map(str::trim).collect();
    assert!(
        texts.contains(&"peak (the most in one window)"),
        "no legend"
    );
    assert!(texts.contains(&"admitted in the window"), "no y-axis title");
}
