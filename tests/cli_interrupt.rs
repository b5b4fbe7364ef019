//! An interrupted run leaves nothing behind: Ctrl-C (SIGINT) or SIGTERM in the middle
//! of writing `decisions.csv` removes the hidden part files and exits with 130.
#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A run far too long to finish while the test watches: 10⁸ requests.
const ENDLESS: &str = r#"
name = "endless"
duration = "1000s"
[limit]
max_requests = 100
window = "1s"
[[traffic]]
kind = "poisson"
rate = 100000
keys = 1000
"#;

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn interrupt_mid_write(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("endless.toml");
    std::fs::write(&scenario, ENDLESS).unwrap();
    let out = dir.path().join("out");
    let child = Command::new(assert_cmd::cargo::cargo_bin("ratesim"))
        .args([
            "run",
            "--quiet",
            "--no-charts",
            "--force",
            "--threads",
            "2",
            "--out",
        ])
        .arg(&out)
        .arg(&scenario)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the part files exist (the run is writing), then interrupt.
    let started = Instant::now();
    while !entries(&out).iter().any(|n| n.contains(".tmp-")) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no temporary file appeared in {}: {:?}",
            out.display(),
            entries(&out)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success(), "kill {signal} failed");
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{signal}: {stderr}");
    assert!(stderr.contains("interrupted"), "{signal}: {stderr}");
    assert_eq!(
        entries(&out),
        Vec::<String>::new(),
        "{signal}: files left behind"
    );
}

#[test]
fn ctrl_c_removes_the_unfinished_files() {
    interrupt_mid_write("-INT");
}

#[test]
fn sigterm_removes_the_unfinished_files() {
    interrupt_mid_write("-TERM");
}
