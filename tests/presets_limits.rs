//! Differential test: the three `limits_*` presets against Python `limits` 5.8 itself
//! (its `MemoryStorage`, its clock patched, its expiry timer stopped), over traces with
//! off-grid instants, same-instant arrivals, hits exactly `W` apart, boundary bursts,
//! costs up to `N + 1`, and the first window (where its counter double-counts). Every
//! decision must be identical.
//!
//! The peer runs in a venv under the target directory, created on first use
//! (`python3 -m venv`, `pip install limits==5.8.0`). Without python3 or PyPI the test
//! skips loudly, unless `RATESIM_REQUIRE_LIMITS=1` or `CI=true`, where it fails.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use ratesim::{Nanos, Registry, Rule};

const LIMITS_VERSION: &str = "5.8.0";

/// `limits` keeps time as float seconds. Multiples of 2⁻⁹ s (1 953 125 ns) are exact
/// floats, so on them its comparisons are exact and must match the presets'.
const DYADIC: u64 = 1_953_125;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn required() -> bool {
    std::env::var("RATESIM_REQUIRE_LIMITS").is_ok_and(|v| v == "1")
        || std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The venv's python with `limits` installed, or `None` (said loudly) when it cannot
/// be made here.
fn peer_python() -> Option<PathBuf> {
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("limits-venv");
    let python = venv.join("bin/python");
    let installed = |python: &PathBuf| {
        Command::new(python)
            .args([
                "-c",
                "import limits, sys; sys.exit(limits.__version__ != sys.argv[1])",
            ])
            .arg(LIMITS_VERSION)
            .status()
            .is_ok_and(|s| s.success())
    };
    if !installed(&python) {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success())
            && Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", &format!("limits=={LIMITS_VERSION}")])
                .status()
                .is_ok_and(|s| s.success());
        if !made || !installed(&python) {
            let why = format!("cannot make a venv with limits {LIMITS_VERSION} at {venv:?}");
            assert!(!required(), "{why} (RATESIM_REQUIRE_LIMITS=1 or CI=true)");
            eprintln!("SKIPPED presets_limits: {why} (needs python3-venv and PyPI)");
            return None;
        }
    }
    Some(python)
}

/// A case: the strategy (as the peer names it), `N`, `W` in whole seconds, and hits.
struct Case {
    strategy: &'static str,
    n: u64,
    w_secs: u64,
    hits: Vec<(u64, u64)>,
}

impl Case {
    fn json(&self) -> String {
        let hits: Vec<String> = self
            .hits
            .iter()
            .map(|(t, c)| format!("[{t},{c}]"))
            .collect();
        format!(
            r#"{{"strategy":"{}","n":{},"w_secs":{},"hits":[{}]}}"#,
            self.strategy,
            self.n,
            self.w_secs,
            hits.join(",")
        )
    }

    fn preset(&self) -> &'static str {
        match self.strategy {
            "fixed" => "limits_fixed_window",
            "moving" => "limits_moving_window",
            _ => "limits_sliding_window_counter",
        }
    }

    /// The preset's decisions, as the peer prints them.
    fn replay(&self) -> String {
        let rule = Rule::new(self.n, Nanos::from_secs(self.w_secs)).unwrap();
        let algo = Registry::standard().create(self.preset(), rule).unwrap();
        let mut state = algo.new_state(Nanos::ZERO);
        let hits = self.hits.iter();
        hits.map(|&(t, c)| {
            if algo.try_acquire(&mut state, Nanos::new(t), c) {
                '1'
            } else {
                '0'
            }
        })
        .collect()
    }
}

use ratesim::Algorithm;

/// Hits from `start`: same-instant runs, hits exactly `W` after an earlier one, bursts
/// just before and at a window boundary, idle gaps, costs from 1 to `N + 1`; on the
/// dyadic grid when `dyadic`, else at arbitrary nanoseconds.
fn hits(rng: &mut Rng, n: u64, w_secs: u64, start: u64, dyadic: bool) -> Vec<(u64, u64)> {
    let w = w_secs * 1_000_000_000;
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut t = start;
    while out.len() < 300 {
        let step = if dyadic { DYADIC } else { 1 };
        let next = match rng.below(9) {
            0 | 1 => t,
            2 => out
                .get(rng.below(out.len() as u64 + 1) as usize)
                .map_or(t, |h| h.0 + w),
            3 => (t / w + 1) * w - step,
            4 => (t / w + 1) * w,
            5 => t + w + rng.below(3) * step,
            _ => t + rng.below(w / step / (2 * n)) * step + step,
        };
        t = next.max(t);
        let cost = if rng.below(6) == 0 {
            1 + rng.below(n + 1)
        } else {
            1
        };
        out.push((t, cost));
    }
    out
}

fn cases() -> Vec<Case> {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut out = Vec::new();
    let s = 1_000_000_000;
    for strategy in ["fixed", "moving", "sliding"] {
        // The first window, where limits' counter counts its hits twice.
        let first = vec![(0, 1), (0, 1), (s / 4, 1), (s / 4, 1), (s + s / 4, 1)];
        out.push(Case {
            strategy,
            n: 3,
            w_secs: 1,
            hits: first,
        });
        // The boundary burst: 5 just before each 2 s boundary and 5 on it.
        let burst = (1..=3).flat_map(|k| {
            let before = std::iter::repeat_n((2 * k * s - DYADIC, 1), 5);
            before.chain(std::iter::repeat_n((2 * k * s, 1), 5))
        });
        out.push(Case {
            strategy,
            n: 5,
            w_secs: 2,
            hits: burst.collect(),
        });
        for (n, w_secs) in [(5, 1), (3, 2), (10, 4), (1, 1), (7, 2)] {
            for start in [0, 1_000 * 1_000_000_000 + 3 * DYADIC] {
                for _ in 0..4 {
                    let hits = hits(&mut rng, n, w_secs, start, true);
                    out.push(Case {
                        strategy,
                        n,
                        w_secs,
                        hits,
                    });
                }
            }
        }
    }
    out
}

fn run_peer(python: &PathBuf, cases: &[Case]) -> Vec<String> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/presets_support/limits_peer.py"
    );
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the limits peer");
    let mut stdin = child.stdin.take().unwrap();
    let input: String = cases.iter().map(|c| c.json() + "\n").collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("the peer's output");
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "the limits peer failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn every_decision_matches_python_limits() {
    let Some(python) = peer_python() else { return };
    let cases = cases();
    let peer = run_peer(&python, &cases);
    assert_eq!(peer.len(), cases.len(), "one line per case");
    let mut compared = 0;
    for (case, real) in cases.iter().zip(&peer) {
        let ours = case.replay();
        assert_eq!(real.len(), case.hits.len());
        if let Some(i) = (0..real.len()).find(|&i| real.as_bytes()[i] != ours.as_bytes()[i]) {
            panic!(
                "{} N={} W={}s: hit {i} at {} ns cost {}: limits says {}, the preset {}\nhits: {:?}",
                case.preset(),
                case.n,
                case.w_secs,
                case.hits[i].0,
                case.hits[i].1,
                &real[i..=i],
                &ours[i..=i],
                &case.hits[..=i]
            );
        }
        compared += real.len();
        assert!(
            real.contains('0') && real.contains('1'),
            "a case that decides both ways"
        );
    }
    eprintln!("presets_limits: {compared} decisions identical");
    assert_eq!(compared, 3 * (5 * 2 * 4 * 300 + 5 + 30));
}
