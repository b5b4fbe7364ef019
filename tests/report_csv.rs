//! decisions.csv, window_counts.csv and summary.csv/json: exact headers, exact times.

use std::fs;

use ratesim::Nanos;
use ratesim::report::SummaryRow;
use ratesim::report::csvout::{
    DECISIONS_HEADER, DecisionCsvWriter, DecisionRecord, WINDOW_COUNTS_HEADER, WindowCountRecord,
    WindowCountsCsvWriter, json_string, write_json, write_summary,
};
use serde::Serialize;

/// `wait_ns`: `None` for a cost that can never fit.
fn record<'a>(
    seq: u64,
    ns: u64,
    key: &'a str,
    allowed: bool,
    wait_ns: Option<u64>,
) -> DecisionRecord<'a> {
    DecisionRecord {
        algorithm: "fixed_window",
        seq,
        attempt: (seq % 3) as u32,
        time: Nanos::new(ns),
        key,
        cost: 1 + seq,
        allowed,
        remaining: 4 - seq.min(4),
        retry_after: wait_ns.map(Nanos::new),
        delay: Nanos::new(if allowed { seq * 1_000_000_001 } else { 0 }),
        node: (seq % 3 == 1).then_some(seq as u32),
        denied_by: (!allowed).then_some("10/1s"),
    }
}

#[test]
fn decisions_csv_has_the_exact_header_and_rows_parse_back_to_the_nanosecond() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("decisions.csv");
    let keys = [
        "user_1",
        "a,comma",
        "a \"quote\"",
        "line\nbreak",
        "",
        "ünïcode key",
    ];
    let times = [
        0u64,
        1,
        9_999_999_999,
        10_000_000_000,
        10_000_000_001,
        u64::MAX,
    ];
    // The last two: a wait past the end of the clock's range (it fits: a number), and a
    // cost that can never fit (no number).
    let waits = [
        Some(0u64),
        Some(1),
        Some(100_000_000),
        Some(9_900_000_000),
        Some(u64::MAX),
        None,
    ];
    let mut writer = DecisionCsvWriter::create(&path).unwrap();
    for i in 0..keys.len() {
        writer
            .write(&record(i as u64, times[i], keys[i], i % 2 == 0, waits[i]))
            .unwrap();
    }
    assert_eq!(writer.rows(), keys.len() as u64);
    assert!(!path.exists(), "not visible before finish");
    writer.finish().unwrap();

    let text = fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with(
            "algorithm,seq,time_s,key,cost,allowed,remaining,retry_after_s,attempt,\
             delay_s,node,denied_by\n"
        ),
        "{text}"
    );
    let mut reader = csv::Reader::from_path(&path).unwrap();
    assert_eq!(reader.headers().unwrap(), &DECISIONS_HEADER[..]);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), keys.len());
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(&row[0], "fixed_window");
        assert_eq!(row[1].parse::<u64>().unwrap(), i as u64);
        assert_eq!(
            Nanos::parse_decimal_secs(&row[2]).unwrap(),
            Nanos::new(times[i]),
            "time_s {:?}",
            &row[2]
        );
        assert_eq!(&row[3], keys[i], "keys survive quoting");
        assert_eq!(row[4].parse::<u64>().unwrap(), 1 + i as u64);
        assert_eq!(&row[5], if i % 2 == 0 { "true" } else { "false" });
        assert_eq!(row[6].parse::<u64>().unwrap(), 4 - (i as u64).min(4));
        match waits[i] {
            Some(wait) => assert_eq!(
                Nanos::parse_decimal_secs(&row[7]).unwrap(),
                Nanos::new(wait)
            ),
            None => assert_eq!(&row[7], "", "a request that can never fit has no wait"),
        }
        assert_eq!(row[8].parse::<u32>().unwrap(), (i % 3) as u32);
        let delay = if i % 2 == 0 {
            i as u64 * 1_000_000_001
        } else {
            0
        };
        assert_eq!(
            Nanos::parse_decimal_secs(&row[9]).unwrap(),
            Nanos::new(delay),
            "delay_s {:?}",
            &row[9]
        );
        let node = if i % 3 == 1 {
            i.to_string()
        } else {
            String::new()
        };
        assert_eq!(&row[10], node, "node, empty without a deployment");
        assert_eq!(&row[11], if i % 2 == 0 { "" } else { "10/1s" }, "denied_by");
    }
    // Exact decimals, not floats: 10 s + 1 ns is not rounded to 10.
    assert_eq!(&rows[4][2], "10.000000001");
    assert_eq!(&rows[2][2], "9.999999999");
    assert_eq!(&rows[0][2], "0");
}

#[test]
fn decisions_csv_to_a_stream_matches_the_file_form() {
    let mut writer = DecisionCsvWriter::from_writer(Vec::new()).unwrap();
    writer
        .write(&record(0, 2_500_000_000, "k", true, Some(0)))
        .unwrap();
    let bytes = writer.into_inner().unwrap();
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        "algorithm,seq,time_s,key,cost,allowed,remaining,retry_after_s,attempt,delay_s,node,\
         denied_by\nfixed_window,0,2.5,k,1,true,4,0,0,0,,\n"
    );
}

#[test]
fn an_unfinished_decisions_csv_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("decisions.csv");
    {
        let mut writer = DecisionCsvWriter::create(&path).unwrap();
        for i in 0..10_000 {
            writer.write(&record(i % 4, i, "k", true, Some(0))).unwrap();
        }
    }
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn window_counts_csv_has_the_exact_header_and_exact_times() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("window_counts.csv");
    let mut writer = WindowCountsCsvWriter::create(&path).unwrap();
    for (ns, count) in [(0u64, 1u64), (9_950_000_000, 5), (10_050_000_000, 10)] {
        writer
            .write(&WindowCountRecord {
                algorithm: "fixed_window",
                key: "client,1",
                time: Nanos::new(ns),
                count,
            })
            .unwrap();
    }
    writer.finish().unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "algorithm,key,time_s,count\n\
         fixed_window,\"client,1\",0,1\n\
         fixed_window,\"client,1\",9.95,5\n\
         fixed_window,\"client,1\",10.05,10\n"
    );
    let mut reader = csv::Reader::from_path(&path).unwrap();
    assert_eq!(reader.headers().unwrap(), &WINDOW_COUNTS_HEADER[..]);
}

#[derive(Serialize)]
struct Row {
    algorithm: String,
    allowed: u64,
    over_admission: f64,
    false_allow: Option<u64>,
}

#[test]
fn summary_json_agrees_with_summary_csv() {
    let dir = tempfile::tempdir().unwrap();
    let rows = vec![
        Row {
            algorithm: "fixed_window".into(),
            allowed: 60,
            over_admission: 2.0,
            false_allow: Some(30),
        },
        Row {
            algorithm: "sliding_window_log".into(),
            allowed: 30,
            over_admission: 1.0,
            false_allow: None,
        },
        Row {
            algorithm: "gcra".into(),
            allowed: 31,
            over_admission: 0.1 + 0.2,
            false_allow: Some(0),
        },
    ];
    let (csv_path, json_path) = write_summary(dir.path(), &rows).unwrap();
    assert_json_agrees_with_csv(&csv_path, &json_path, 3);
}

#[test]
fn summary_rows_with_missing_metrics_agree_between_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let mut fixed = SummaryRow::new("fixed_window", 40, 80, 10, 5);
    fixed.false_allow = Some(5);
    fixed.retry_late = Some(3);
    let empty = SummaryRow::new("gcra", 0, 0, 0, 0); // NaN ratios
    let (csv_path, json_path) = write_summary(dir.path(), &[fixed, empty]).unwrap();
    assert_json_agrees_with_csv(&csv_path, &json_path, 2);
    let text = fs::read_to_string(&csv_path).unwrap();
    assert!(
        text.starts_with("algorithm,allowed,denied,allow_rate,max_in_window,limit,over_admission,"),
        "{text}"
    );
    assert!(
        text.contains("fixed_window,40,80,0.3333333333333333,10,5,2.0,0,5,,,,3\n"),
        "{text}"
    );
}

fn assert_json_agrees_with_csv(csv_path: &std::path::Path, json_path: &std::path::Path, n: usize) {
    let json: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(&fs::read_to_string(json_path).unwrap()).unwrap();
    let mut reader = csv::Reader::from_path(csv_path).unwrap();
    let headers = reader.headers().unwrap().clone();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), n);
    assert_eq!(records.len(), json.len());
    for (record, object) in records.iter().zip(&json) {
        assert_eq!(headers.len(), object.len());
        for (name, field) in headers.iter().zip(record.iter()) {
            let value = &object[name];
            match value {
                serde_json::Value::Null => assert_eq!(field, "", "{name}"),
                serde_json::Value::String(s) => assert_eq!(field, s, "{name}"),
                serde_json::Value::Number(n) => {
                    assert_eq!(field.parse::<f64>().unwrap(), n.as_f64().unwrap(), "{name}")
                }
                other => panic!("unexpected JSON value {other}"),
            }
        }
    }
}

/// Throughput check, run by hand:
/// `cargo test --release --test report_csv -- --ignored --nocapture`
#[test]
#[ignore = "timing; run manually in release mode"]
fn decisions_csv_throughput() {
    let n: u64 = 5_000_000;
    let keys: Vec<String> = (0..100).map(|i| format!("client_{i}")).collect();
    let algorithms = ["token_bucket", "fixed_window", "sliding_window_counter"];
    let record = |i: u64| DecisionRecord {
        algorithm: algorithms[(i % 3) as usize],
        seq: i,
        attempt: 0,
        time: Nanos::new(i * 12_345_679),
        key: &keys[(i % 100) as usize],
        cost: 1,
        allowed: !i.is_multiple_of(4),
        remaining: i % 5,
        retry_after: Some(Nanos::new((i % 4) * 1_250_000_001)),
        delay: Nanos::ZERO,
        node: None,
        denied_by: None,
    };

    let mut writer = DecisionCsvWriter::from_writer(std::io::sink()).unwrap();
    let start = std::time::Instant::now();
    for i in 0..n {
        writer.write(&record(i)).unwrap();
    }
    writer.into_inner().unwrap();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "to a sink: {n} rows in {secs:.3} s: {:.2} M rows/s",
        n as f64 / secs / 1e6
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("decisions.csv");
    let start = std::time::Instant::now();
    let mut writer = DecisionCsvWriter::create(&path).unwrap();
    for i in 0..n {
        writer.write(&record(i)).unwrap();
    }
    writer.finish().unwrap();
    let secs = start.elapsed().as_secs_f64();
    let bytes = fs::metadata(&path).unwrap().len();
    println!(
        "to a file (incl. fsync): {n} rows, {} MB in {secs:.3} s: {:.2} M rows/s",
        bytes / 1_000_000,
        n as f64 / secs / 1e6
    );
}

#[test]
fn json_text_for_stdout_is_the_text_a_json_file_gets() {
    #[derive(Serialize)]
    struct Row {
        algorithm: &'static str,
        allowed: u64,
    }
    let rows = [
        Row {
            algorithm: "gcra",
            allowed: 5,
        },
        Row {
            algorithm: "fixed_window",
            allowed: 10,
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = write_json(&dir.path().join("rows.json"), &rows[..]).unwrap();
    let text = json_string(&rows[..]).unwrap();
    assert_eq!(text, fs::read_to_string(path).unwrap());
    assert!(
        text.ends_with("}\n]\n"),
        "pretty, with a final newline: {text:?}"
    );
    let back: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(back[1]["algorithm"], "fixed_window");
    assert_eq!(back[1]["allowed"], 10);
}
