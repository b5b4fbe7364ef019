//! `ratesim compare --nodes`: one scenario on several numbers of servers.

use std::path::Path;

use assert_cmd::Command;

fn ratesim(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::cargo_bin("ratesim")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn compare_nodes_writes_one_row_per_node_count_and_algorithm_and_the_chart() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/nodes_local.toml");
    let scenario = scenario.to_str().unwrap();
    let args = [
        "compare",
        "--nodes",
        "4,1,2",
        "--scenario",
        scenario,
        "--algos",
        "fixed_window,sliding_window_log",
        "--no-decisions",
        "--quiet",
    ];
    let out = ratesim(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let root = dir.path().join("output/compare");
    let csv = std::fs::read_to_string(root.join("over_admission_vs_nodes.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(
        rows[0],
        "nodes,algorithm,allowed,denied,max_in_window,over_admission,false_allow,false_deny"
    );
    let log: Vec<&str> = rows
        .iter()
        .filter(|r| r.contains(",sliding_window_log,"))
        .map(|r| r.split(',').nth(5).unwrap())
        .collect();
    assert_eq!(log, ["1.0", "2.0", "4.0"], "{csv}");
    assert_eq!(rows.len(), 1 + 3 * 2);
    let png = std::fs::read(root.join("over_admission_vs_nodes.png")).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    assert!(root.join("nodes_local-2-nodes/nodes.csv").is_file());
}

#[test]
fn compare_nodes_needs_exactly_one_scenario_and_a_splittable_limit() {
    let dir = tempfile::tempdir().unwrap();
    let out = ratesim(dir.path(), &["compare", "--nodes", "1,2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exactly one --scenario"));
    let split = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/nodes_split_sticky.toml");
    let args = [
        "compare",
        "--nodes",
        "8,64",
        "--scenario",
        split.to_str().unwrap(),
    ];
    let out = ratesim(dir.path(), &args);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("local_split"), "{stderr}");
    assert!(
        !dir.path().join("output").exists(),
        "nothing written: {stderr}"
    );
}
