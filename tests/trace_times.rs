//! Trace times: every `time_format` exact to the nanosecond, time zones, `origin`,
//! `same_second` and the bounded `reorder` buffer.

use std::path::Path;

use ratesim::Nanos;
use ratesim::sim::{
    self, NoopSink, RunOptions, SameSecond, Scenario, TimeFormat, TraceFormat, TraceOptions,
    TraceReader,
};

/// The times of `text` (JSON lines `{"t":…,"ip":"k"}`) read as `options` say.
fn times(text: &str, options: &TraceOptions) -> Result<Vec<u64>, String> {
    let mut reader = TraceReader::from_reader_with(
        Path::new("t.jsonl"),
        std::io::Cursor::new(text.as_bytes().to_vec()),
        options,
    );
    let mut out = Vec::new();
    while let Some(row) = reader.next_row().map_err(|e| e.to_string())? {
        out.push(row.time.as_u64());
    }
    Ok(out)
}

fn jsonl(format: TimeFormat) -> TraceOptions {
    TraceOptions {
        format: TraceFormat::Jsonl,
        time_field: Some("t".into()),
        time_format: Some(format),
        ..TraceOptions::default()
    }
}

/// One JSON line per time, written as `raw` JSON (a string needs its quotes).
fn lines(raw_times: &[&str]) -> String {
    raw_times
        .iter()
        .map(|t| format!("{{\"t\":{t},\"ip\":\"k\"}}\n"))
        .collect()
}

#[test]
fn every_epoch_unit_is_exact_to_the_nanosecond() {
    let cases = [
        (
            TimeFormat::EpochS,
            ["1715677200", "1715677200.000000001", "\"1715677201.5\""],
        ),
        (
            TimeFormat::EpochMs,
            ["1715677200000", "1715677200000.000001", "\"1715677201500\""],
        ),
        (
            TimeFormat::EpochUs,
            [
                "1715677200000000",
                "1715677200000000.001",
                "1715677201500000",
            ],
        ),
        (
            TimeFormat::EpochNs,
            [
                "1715677200000000000",
                "1715677200000000001",
                "1715677201500000000",
            ],
        ),
    ];
    for (format, raw) in cases {
        assert_eq!(
            times(&lines(&raw), &jsonl(format)),
            Ok(vec![0, 1, 1_500_000_000]),
            "{format:?}"
        );
    }
}

#[test]
fn a_time_finer_than_a_nanosecond_is_an_error_not_a_rounding() {
    let err = times(&lines(&["1", "1.0000000001"]), &jsonl(TimeFormat::EpochS)).unwrap_err();
    assert!(
        err.starts_with("t.jsonl:2:1: bad t: `1.0000000001` is finer than a nanosecond"),
        "{err}"
    );
    let err = times(&lines(&["1.5"]), &jsonl(TimeFormat::EpochNs)).unwrap_err();
    assert!(err.contains("finer than a nanosecond"), "{err}");
    // Trailing zeros are not finer.
    assert_eq!(
        times(&lines(&["1.0000000010"]), &jsonl(TimeFormat::EpochS)),
        Ok(vec![0])
    );
    let err = times(
        &lines(&["\"2024-05-14T09:00:00.0000000001Z\""]),
        &jsonl(TimeFormat::Rfc3339),
    )
    .unwrap_err();
    assert!(err.contains("not an RFC 3339 time"), "{err}");
}

#[test]
fn numbers_beyond_a_float_s_precision_keep_every_digit() {
    // 1715677200.123456789 as an f64 is 1715677200.1234567165…: reading through a float
    // would lose the last digits.
    let got = times(
        &lines(&["0", "1715677200.123456789"]),
        &TraceOptions {
            origin: Some(0),
            ..jsonl(TimeFormat::EpochS)
        },
    );
    assert_eq!(got, Ok(vec![0, 1_715_677_200_123_456_789]));
}

#[test]
fn time_zones_are_honoured_in_rfc3339_and_clf() {
    let rfc = [
        "\"2024-05-14T09:00:00Z\"",
        "\"2024-05-14T11:00:01+02:00\"",
        "\"2024-05-14t04:00:02.25-05:00\"",
        "\"2024-05-14 09:00:03z\"",
    ];
    assert_eq!(
        times(&lines(&rfc), &jsonl(TimeFormat::Rfc3339)),
        Ok(vec![0, 1_000_000_000, 2_250_000_000, 3_000_000_000])
    );
    let clf = [
        "\"14/May/2024:09:00:00 +0000\"",
        "\"[14/May/2024:02:00:01 -0700]\"",
        "\"15/May/2024:00:30:02 +1530\"",
    ];
    assert_eq!(
        times(&lines(&clf), &jsonl(TimeFormat::Clf)),
        Ok(vec![0, 1_000_000_000, 2_000_000_000])
    );
    // Across a year end and a leap day.
    let across = [
        "\"2023-12-31T23:59:59Z\"",
        "\"2024-01-01T00:00:00Z\"",
        "\"2024-03-01T00:00:00+00:00\"",
    ];
    assert_eq!(
        times(&lines(&across), &jsonl(TimeFormat::Rfc3339)),
        Ok(vec![0, 1_000_000_000, (1 + 60 * 86_400) * 1_000_000_000])
    );
}

#[test]
fn an_origin_sets_t_zero_and_a_request_before_it_is_an_error() {
    let o = TraceOptions {
        origin: Some(1_715_677_200_000_000_000 - 5_000_000_000),
        ..jsonl(TimeFormat::EpochS)
    };
    assert_eq!(
        times(&lines(&["1715677200", "1715677201"]), &o),
        Ok(vec![5_000_000_000, 6_000_000_000])
    );
    let err = times(&lines(&["1715677190"]), &o).unwrap_err();
    assert!(
        err.starts_with("t.jsonl:1:1: time 1715677190 is before the trace's `origin`"),
        "{err}"
    );
}

#[test]
fn same_second_keep_stacks_a_second_and_spread_spaces_it_evenly() {
    let raw = lines(&["100", "100", "100", "101", "103", "103"]);
    let keep = jsonl(TimeFormat::EpochS);
    let s = 1_000_000_000;
    assert_eq!(times(&raw, &keep), Ok(vec![0, 0, 0, s, 3 * s, 3 * s]));
    let spread = TraceOptions {
        same_second: SameSecond::Spread,
        ..keep
    };
    assert_eq!(
        times(&raw, &spread),
        Ok(vec![0, 333_333_333, 666_666_666, s, 3 * s, 3 * s + s / 2])
    );
}

#[test]
fn reorder_sorts_lines_within_its_bound_keeping_file_order_for_ties() {
    let raw = "{\"t\":10,\"ip\":\"a\"}\n{\"t\":12,\"ip\":\"b\"}\n{\"t\":9,\"ip\":\"c\"}\n\
               {\"t\":12,\"ip\":\"d\"}\n{\"t\":10,\"ip\":\"e\"}\n";
    let o = TraceOptions {
        reorder: Nanos::from_secs(3),
        ..jsonl(TimeFormat::EpochS)
    };
    let mut reader = TraceReader::from_reader_with(Path::new("t.jsonl"), raw.as_bytes(), &o);
    let mut got = Vec::new();
    while let Some(row) = reader.next_row().unwrap() {
        got.push((row.time.as_secs_f64(), row.key));
    }
    let want = [(0.0, "c"), (1.0, "a"), (1.0, "e"), (3.0, "b"), (3.0, "d")];
    let want: Vec<(f64, String)> = want.iter().map(|(t, k)| (*t, k.to_string())).collect();
    assert_eq!(
        got, want,
        "t = 0 is the earliest request, not the first line"
    );
}

#[test]
fn a_line_more_out_of_order_than_reorder_is_an_error_naming_it() {
    let o = TraceOptions {
        reorder: Nanos::from_secs(2),
        ..jsonl(TimeFormat::EpochS)
    };
    // Exactly 2 s back is in bound; 2 s and 1 ns is not.
    assert_eq!(
        times(&lines(&["10", "12", "10"]), &o),
        Ok(vec![0, 0, 2_000_000_000])
    );
    let err = times(&lines(&["10", "12", "9.999999999"]), &o).unwrap_err();
    assert!(
        err.starts_with(
            "t.jsonl:3:1: t 9.999999999 is 2.000000001s earlier than a previous line's 12"
        ),
        "{err}"
    );
    let sorted = jsonl(TimeFormat::EpochS);
    let err = times(&lines(&["10", "9"]), &sorted).unwrap_err();
    assert!(
        err.starts_with("t.jsonl:2:1: t 9 is earlier than the previous row's 10"),
        "{err}"
    );
}

#[test]
fn a_combined_log_s_clf_times_are_whole_seconds_in_their_zone() {
    let text = "a - - [31/Dec/1999:23:59:59 -0100] \"GET / HTTP/1.0\" 200 1\n\
                b - - [01/Jan/2000:01:00:00 +0000] \"GET / HTTP/1.0\" 200 1\n";
    let o = TraceOptions {
        format: TraceFormat::Combined,
        ..TraceOptions::default()
    };
    let mut reader = TraceReader::from_reader_with(Path::new("a.log"), text.as_bytes(), &o);
    let first = reader.next_row().unwrap().unwrap();
    let second = reader.next_row().unwrap().unwrap();
    assert_eq!(
        (first.time, second.time),
        (Nanos::ZERO, Nanos::from_secs(1))
    );
}

#[test]
fn a_scenario_files_reorder_reaches_the_trace_it_replays() {
    // The reader's bound is pinned above; this pins the scenario field that sets it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.jsonl"), lines(&["1", "3", "2"])).unwrap();
    let run = |reorder: &str| {
        let text = format!(
            "name = \"r\"\nduration = \"10s\"\n[limit]\nmax_requests = 5\nwindow = \"1s\"\n\
             [[traffic]]\nkind = \"trace\"\npath = \"t.jsonl\"\nformat = \"jsonl\"\n\
             time_field = \"t\"\ntime_format = \"epoch_s\"\n{reorder}"
        );
        let scenario = Scenario::parse(&text, &dir.path().join("s.toml")).unwrap();
        sim::run(&scenario, &RunOptions::default(), &mut |_| {
            Ok(Box::new(NoopSink))
        })
        .map(|report| report.algorithms[0].metrics.requests)
        .map_err(|e| e.to_string())
    };
    assert_eq!(run("reorder = \"1s\"\n"), Ok(3));
    let err = run("").unwrap_err();
    assert!(
        err.contains("t.jsonl:3:1: t 2 is earlier than the previous row's 3"),
        "{err}"
    );
}

/// `origin` is t = 0 itself: a request at exactly the origin is at 0, one a nanosecond
/// before it is an error (a bound at `<=`, or an origin rounded to the second, would
/// differ).
#[test]
fn a_request_at_exactly_the_origin_is_at_t_zero() {
    let o = TraceOptions {
        origin: Some(1_715_677_200_000_000_000),
        ..jsonl(TimeFormat::EpochS)
    };
    assert_eq!(
        times(&lines(&["1715677200", "1715677200.000000001"]), &o),
        Ok(vec![0, 1])
    );
    let err = times(&lines(&["1715677199.999999999"]), &o).unwrap_err();
    assert!(err.contains("is before the trace's `origin`"), "{err}");
}
