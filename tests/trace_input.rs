//! Trace input: gzip read transparently and streamed, lines that are not requests
//! (garbage, truncated, binary) as errors at file:line or skipped and reported, and
//! arbitrary bytes giving an error, never a panic. Also the bundled nginx log.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use flate2::Compression;
use flate2::write::GzEncoder;
use ratesim::sim::{Scenario, SkippedLines, TraceFormat, TraceOptions, TraceReader, TraceRow};

fn combined() -> TraceOptions {
    TraceOptions {
        format: TraceFormat::Combined,
        ..TraceOptions::default()
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Every row of `bytes` read as `options` say, or the first error's text.
fn read(bytes: Vec<u8>, options: &TraceOptions) -> Result<Vec<TraceRow>, String> {
    let mut reader =
        TraceReader::from_reader_with(Path::new("t.log"), std::io::Cursor::new(bytes), options);
    let mut rows = Vec::new();
    while let Some(row) = reader.next_row().map_err(|e| e.to_string())? {
        rows.push(row);
    }
    Ok(rows)
}

/// Every row of the combined log `text` read with `skip_bad_lines`, and what was skipped.
fn read_skipping(text: String) -> (Vec<TraceRow>, SkippedLines) {
    let o = TraceOptions {
        skip_bad_lines: true,
        ..combined()
    };
    let mut reader = TraceReader::from_reader_with(
        Path::new("t.log"),
        std::io::Cursor::new(text.into_bytes()),
        &o,
    );
    let mut rows = Vec::new();
    while let Some(row) = reader.next_row().unwrap() {
        rows.push(row);
    }
    (rows, reader.skipped().clone())
}

fn log(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "10.0.0.{} - - [14/May/2024:09:{:02}:{:02} +0000] \"GET /{i} HTTP/1.1\" 200 {i} \"-\" \"t\"\n",
                i % 7,
                i / 60 % 60,
                i % 60
            )
        })
        .collect()
}

#[test]
fn a_gzipped_trace_reads_exactly_like_the_plain_one() {
    let plain = log(500);
    let want = read(plain.clone().into_bytes(), &combined()).unwrap();
    assert_eq!(want.len(), 500);
    assert_eq!(read(gzip(plain.as_bytes()), &combined()), Ok(want.clone()));
    // Several gzip members one after another (as `cat a.gz b.gz`) are one stream.
    let middle = plain[..plain.len() / 2].rfind('\n').unwrap() + 1;
    let mut members = gzip(&plain.as_bytes()[..middle]);
    members.extend(gzip(&plain.as_bytes()[middle..]));
    assert_eq!(read(members, &combined()), Ok(want));
    // The classic CSV, gzipped, too.
    let csv = gzip(b"time_s,key\n0,a\n1.5,b\n");
    assert_eq!(read(csv, &TraceOptions::default()).unwrap().len(), 2);
}

#[test]
fn a_gzip_file_is_opened_from_disk_by_its_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log.gz");
    fs::write(&path, gzip(log(3).as_bytes())).unwrap();
    let mut reader = TraceReader::open_with(&path, &combined()).unwrap();
    let mut n = 0;
    while reader.next_row().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 3);
}

#[test]
fn a_truncated_or_corrupt_gzip_stream_is_an_error_not_a_panic() {
    let whole = gzip(log(200).as_bytes());
    let cut = whole[..whole.len() / 2].to_vec();
    let err = read(cut, &combined()).unwrap_err();
    assert!(err.starts_with("t.log: cannot read trace"), "{err}");
    let mut corrupt = whole.clone();
    for b in corrupt.iter_mut().skip(20).step_by(7) {
        *b ^= 0x5a;
    }
    assert!(read(corrupt, &combined()).is_err());
}

#[test]
fn a_line_that_is_not_a_request_is_an_error_at_its_line() {
    let good = log(3);
    let cases: [(&str, Vec<u8>); 5] = [
        ("garbage", format!("{good}hello world\n").into_bytes()),
        ("truncated", format!("{good}{}", &good[..40]).into_bytes()),
        ("binary", [good.as_bytes(), b"\x00\xff\xfe\x01\n"].concat()),
        (
            "no status",
            format!("{good}1.2.3.4 - - [14/May/2024:10:00:00 +0000] \"GET / HTTP/1.1\" abc 1\n")
                .into_bytes(),
        ),
        (
            "bad time",
            format!("{good}1.2.3.4 - - [14/Mai/2024:10:00:00 +0000] \"GET / HTTP/1.1\" 200 1\n")
                .into_bytes(),
        ),
    ];
    for (what, bytes) in cases {
        let err = read(bytes, &combined()).unwrap_err();
        assert!(err.starts_with("t.log:4:1: "), "{what}: {err}");
    }
}

#[test]
fn skip_bad_lines_counts_them_and_keeps_the_requests() {
    let good = log(4);
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(1, "garbage");
    lines.insert(3, "\u{0}\u{1}binary");
    let text = lines.join("\n") + "\n";
    let (rows, skipped) = read_skipping(text);
    assert_eq!(rows.len(), 4);
    assert_eq!(skipped.count, 2);
    assert_eq!(skipped.first.as_ref().map(|f| f.0), Some(2));
}

#[test]
fn validate_and_run_report_the_lines_they_skipped() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.log"), format!("junk\n{}", log(5))).unwrap();
    fs::write(
        dir.path().join("s.toml"),
        "name = \"s\"\nduration = \"10s\"\n[limit]\nmax_requests = 2\nwindow = \"1s\"\n\
         [[traffic]]\nkind = \"trace\"\npath = \"a.log\"\nformat = \"combined\"\nskip_bad_lines = true\n",
    )
    .unwrap();
    let ratesim = |args: &[&str]| {
        let out = Command::cargo_bin("ratesim")
            .unwrap()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (stdout, _) = ratesim(&["validate", "s.toml"]);
    assert!(
        stdout.contains(
            "\nwarning: a.log: skipped 1 line that is not a request (skip_bad_lines = true); \
             the first, line 1: no ident field"
        ),
        "{stdout}"
    );
    let (_, stderr) = ratesim(&["run", "s.toml", "--quiet", "--no-charts", "--out", "o"]);
    assert!(
        stderr.contains("ratesim: warning: ") && stderr.contains("skipped 1 line"),
        "{stderr}"
    );
    let decisions = fs::read_to_string(dir.path().join("o/decisions.csv")).unwrap();
    assert_eq!(decisions.lines().count(), 1 + 5 * 6, "{decisions}");
}

/// A small deterministic byte generator (xorshift), so the test needs no extra crate.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly log-like bytes, sometimes anything.
            let alphabet = b" -[]\"/:0123456789.{}aGET\n,\\";
            if x.is_multiple_of(5) {
                (x >> 8) as u8
            } else {
                alphabet[(x >> 16) as usize % alphabet.len()]
            }
        })
        .collect()
}

#[test]
fn arbitrary_bytes_in_any_format_give_rows_or_an_error_never_a_panic() {
    let formats = [TraceFormat::Csv, TraceFormat::Combined, TraceFormat::Jsonl];
    for seed in 0..300u64 {
        let bytes = noise(seed, 64 + (seed as usize * 37) % 2000);
        for format in formats {
            for skip in [false, true] {
                let o = TraceOptions {
                    format,
                    skip_bad_lines: skip,
                    reorder: ratesim::Nanos::from_secs(seed % 3),
                    same_second: if seed.is_multiple_of(2) {
                        ratesim::sim::SameSecond::Spread
                    } else {
                        ratesim::sim::SameSecond::Keep
                    },
                    ..TraceOptions::default()
                };
                let _ = read(bytes.clone(), &o);
                let _ = read(gzip(&bytes), &o);
                let mut fake_gzip = vec![0x1f, 0x8b];
                fake_gzip.extend(&bytes);
                let _ = read(fake_gzip, &o);
            }
        }
    }
}

#[test]
fn the_bundled_nginx_log_scenario_replays_every_recorded_request() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scenario = Scenario::load(&root.join("scenarios/nginx_log.toml")).unwrap();
    assert!(
        scenario.read_traces().unwrap().is_empty(),
        "no line skipped"
    );
    let ratesim::sim::TrafficKind::Trace { path, options } = &scenario.traffic[0].kind else {
        panic!("a trace source")
    };
    let mut reader = TraceReader::open_with(path, options).unwrap();
    let (mut n, mut last, mut scraper) = (0u64, ratesim::Nanos::ZERO, 0u64);
    while let Some(row) = reader.next_row().unwrap() {
        n += 1;
        last = row.time;
        scraper += u64::from(row.key == "127.0.0.66");
    }
    assert!((5_000..=50_000).contains(&n), "{n} requests");
    assert!(
        last < scenario.duration,
        "the run covers the whole log ({last:?})"
    );
    assert!(
        scraper * 2 > n,
        "the scraper sends most requests ({scraper} of {n})"
    );
}

#[test]
fn a_line_up_to_one_mebibyte_is_read_and_a_longer_one_is_a_bad_line() {
    const MAX: usize = 1 << 20; // counting its newline
    let line = |len: usize| {
        let head = "10.0.0.1 - - [14/May/2024:09:00:00 +0000] \"GET /";
        let tail = " HTTP/1.1\" 200 1 \"-\" \"t\"\n";
        format!("{head}{}{tail}", "a".repeat(len - head.len() - tail.len()))
    };
    let rows = read(line(MAX).into_bytes(), &combined()).unwrap();
    assert_eq!(rows.len(), 1, "a line of exactly {MAX} bytes is a request");
    let text = format!("{}{}", line(MAX + 1), log(2));
    let err = read(text.clone().into_bytes(), &combined()).unwrap_err();
    assert!(
        err.starts_with("t.log:1:1: a line longer than 1048576 bytes"),
        "{}",
        &err[..err.len().min(200)]
    );
    let skipping = TraceOptions {
        skip_bad_lines: true,
        ..combined()
    };
    let rows = read(text.into_bytes(), &skipping).unwrap();
    assert_eq!(
        rows.len(),
        2,
        "the long line is consumed, the next ones read"
    );
}

/// `ratesim ARGS` in `dir`: (success, stderr).
fn ratesim_in(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::cargo_bin("ratesim")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const TRACE_SCENARIO: &str = "name = \"s\"\nduration = \"10s\"\n[limit]\nmax_requests = 2\n\
    window = \"1s\"\n[[traffic]]\nkind = \"trace\"\npath = \"a.log\"\nformat = \"combined\"\n";

#[test]
fn key_is_checked_against_the_trace_before_running_and_no_empty_out_folder_stays() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.log"), log(5)).unwrap();
    fs::write(dir.path().join("s.toml"), TRACE_SCENARIO).unwrap();
    let (ok, stderr) = ratesim_in(
        dir.path(),
        &["run", "s.toml", "--key", "alice", "--out", "o"],
    );
    assert!(!ok);
    assert!(
        stderr.starts_with("ratesim: error: --key: no client named `alice`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("named like `"),
        "examples of names: {stderr}"
    );
    assert!(
        !dir.path().join("o").exists(),
        "no output folder on failure"
    );
    // A name the trace holds runs.
    let first = log(1).split(' ').next().unwrap().to_string();
    let (ok, stderr) = ratesim_in(
        dir.path(),
        &[
            "run",
            "s.toml",
            "--key",
            &first,
            "--out",
            "o",
            "--no-charts",
            "--quiet",
        ],
    );
    assert!(ok, "{stderr}");
    assert!(dir.path().join("o/summary.csv").exists());
}

#[test]
fn a_run_that_fails_on_its_trace_leaves_no_output_folder() {
    let dir = tempfile::tempdir().unwrap();
    // The error is on the last line: the run has started when it finds it.
    fs::write(dir.path().join("a.log"), format!("{}junk\n", log(5))).unwrap();
    fs::write(dir.path().join("s.toml"), TRACE_SCENARIO).unwrap();
    let (ok, stderr) = ratesim_in(dir.path(), &["run", "s.toml", "--out", "o/deep"]);
    assert!(!ok);
    assert!(stderr.starts_with("ratesim: error: "), "{stderr}");
    assert!(stderr.contains("a.log:6:1: no ident field"), "{stderr}");
    assert!(!dir.path().join("o").exists(), "{stderr}");
    // A folder that was there before is left alone.
    fs::create_dir(dir.path().join("keep")).unwrap();
    let (ok, _) = ratesim_in(dir.path(), &["run", "s.toml", "--out", "keep"]);
    assert!(!ok);
    assert!(dir.path().join("keep").is_dir());
}

/// A line that splits into its fields but has a bad one (a month that does not exist)
/// is not a request either: an error at its line, or with `skip_bad_lines` skipped,
/// counted with the garbage, and reported when it is the first.
#[test]
fn skip_bad_lines_counts_a_line_with_one_bad_field_and_reports_the_first() {
    let good = log(4);
    let mut lines: Vec<&str> = good.lines().collect();
    let bad_month =
        "10.0.0.9 - - [14/Mai/2024:09:00:01 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"t\"";
    lines.insert(1, bad_month);
    lines.insert(3, "garbage");
    let text = lines.join("\n") + "\n";
    let err = read(text.clone().into_bytes(), &combined()).unwrap_err();
    assert!(err.starts_with("t.log:2:"), "{err}");
    let (rows, skipped) = read_skipping(text);
    let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["10.0.0.0", "10.0.0.1", "10.0.0.2", "10.0.0.3"]);
    assert_eq!(skipped.count, 2);
    assert_eq!(skipped.first.as_ref().map(|f| f.0), Some(2));
}
