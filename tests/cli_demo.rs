//! `ratesim demo` reproduces the seed's demo byte for byte.

use assert_cmd::Command;

/// What the seed's demo prints (the seed is described in docs/design.md).
const SEED_DEMO: &str = include_str!("data/demo-output.txt");

#[test]
fn demo_prints_exactly_the_seed_demo_output() {
    let out = Command::cargo_bin("ratesim")
        .unwrap()
        .arg("demo")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    if stdout != SEED_DEMO {
        for (i, (got, want)) in stdout.lines().zip(SEED_DEMO.lines()).enumerate() {
            assert_eq!(got, want, "first difference at line {}", i + 1);
        }
        assert_eq!(
            stdout.len(),
            SEED_DEMO.len(),
            "same lines, different length"
        );
    }
}

#[test]
fn the_library_demo_text_is_what_the_binary_prints() {
    assert_eq!(ratesim::demo::demo_text(), SEED_DEMO);
}
