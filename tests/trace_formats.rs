//! Trace formats: CSV (positional and named), combined/common logs and JSON lines,
//! their keys, costs and status filters, scenario fields checked against the format,
//! and the same requests in every format giving byte-identical `decisions.csv`.

use std::fs;
use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use ratesim::Nanos;
use ratesim::sim::{
    KeyTemplate, Scenario, StatusMatch, TraceFormat, TraceOptions, TraceReader, TraceRow,
};

/// Every row of `text` read as `options` say, or the first error's text.
fn rows(text: &str, options: &TraceOptions) -> Result<Vec<TraceRow>, String> {
    let bytes = text.as_bytes().to_vec();
    let mut reader =
        TraceReader::from_reader_with(Path::new("t.log"), std::io::Cursor::new(bytes), options);
    let mut out = Vec::new();
    while let Some(row) = reader.next_row().map_err(|e| e.to_string())? {
        out.push(row);
    }
    Ok(out)
}

fn options(format: TraceFormat) -> TraceOptions {
    TraceOptions {
        format,
        ..TraceOptions::default()
    }
}

fn row(ns: u64, key: &str, cost: Option<u64>) -> TraceRow {
    TraceRow {
        time: Nanos::new(ns),
        key: key.to_string(),
        cost,
    }
}

const S: u64 = 1_000_000_000;

const COMBINED: &str = "\
10.0.0.1 - alice [14/May/2024:11:00:00 +0200] \"GET /a?x=1 HTTP/1.1\" 200 512 \"-\" \"curl/8\"
10.0.0.2 - - [14/May/2024:11:00:01 +0200] \"POST /b HTTP/2.0\" 404 - \"http://r/\" \"Mozilla \\\"q\\\"\"
10.0.0.1 - alice [14/May/2024:11:00:03 +0200] \"GET /a HTTP/1.1\" 503 7 \"-\" \"curl/8\"
";

#[test]
fn a_combined_log_is_keyed_by_ip_and_timed_from_its_first_line() {
    let got = rows(COMBINED, &options(TraceFormat::Combined)).unwrap();
    assert_eq!(
        got,
        [
            row(0, "10.0.0.1", None),
            row(S, "10.0.0.2", None),
            row(3 * S, "10.0.0.1", None)
        ]
    );
}

#[test]
fn a_combined_log_can_be_keyed_by_user_path_or_a_template_and_costed_by_bytes() {
    let with = |key: &str| TraceOptions {
        key: Some(KeyTemplate::parse(key).unwrap()),
        cost_field: Some("bytes".into()),
        ..options(TraceFormat::Combined)
    };
    let keys = |key: &str| -> Vec<(String, Option<u64>)> {
        rows(COMBINED, &with(key))
            .unwrap()
            .into_iter()
            .map(|r| (r.key, r.cost))
            .collect()
    };
    assert_eq!(
        keys("user"),
        [
            ("alice".into(), Some(512)),
            ("-".into(), Some(0)),
            ("alice".into(), Some(7))
        ]
    );
    let paths: Vec<String> = keys("path").into_iter().map(|k| k.0).collect();
    assert_eq!(paths, ["/a", "/b", "/a"], "the path drops the query string");
    let templated: Vec<String> = keys("{method} {ip}{{{status}}}")
        .into_iter()
        .map(|k| k.0)
        .collect();
    assert_eq!(
        templated,
        [
            "GET 10.0.0.1{200}",
            "POST 10.0.0.2{404}",
            "GET 10.0.0.1{503}"
        ]
    );
}

#[test]
fn a_common_log_line_without_referer_and_agent_is_read_too() {
    let line =
        "127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif HTTP/1.0\" 200 2326\n";
    let got = rows(line, &options(TraceFormat::Combined)).unwrap();
    assert_eq!(got, [row(0, "127.0.0.1", None)]);
}

#[test]
fn status_filters_keep_and_drop_codes_and_classes() {
    let keep_2xx = TraceOptions {
        include_status: vec![StatusMatch::parse("2xx").unwrap()],
        ..options(TraceFormat::Combined)
    };
    let times: Vec<u64> = rows(COMBINED, &keep_2xx)
        .unwrap()
        .iter()
        .map(|r| r.time.as_u64())
        .collect();
    assert_eq!(times, [0]);
    let drop_404 = TraceOptions {
        exclude_status: vec![StatusMatch::code(404).unwrap()],
        ..options(TraceFormat::Combined)
    };
    let times: Vec<u64> = rows(COMBINED, &drop_404)
        .unwrap()
        .iter()
        .map(|r| r.time.as_u64())
        .collect();
    assert_eq!(times, [0, 3 * S], "t = 0 is the first request kept");
    let both = TraceOptions {
        include_status: vec![
            StatusMatch::parse("4xx").unwrap(),
            StatusMatch::parse("5xx").unwrap(),
        ],
        exclude_status: vec![StatusMatch::code(503).unwrap()],
        ..options(TraceFormat::Combined)
    };
    assert_eq!(rows(COMBINED, &both).unwrap(), [row(0, "10.0.0.2", None)]);
    let csv = TraceOptions {
        exclude_status: vec![StatusMatch::code(404).unwrap()],
        ..TraceOptions::default()
    };
    let err = rows("time_s,key\n0,a\n", &csv).unwrap_err();
    assert!(err.starts_with("t.log:2:1: no `status` field"), "{err}");
}

#[test]
fn jsonl_fields_are_strings_or_exact_numbers() {
    let text = "{\"time\":\"2024-05-14T09:00:00Z\",\"ip\":\"a\",\"bytes\":3}\n\
                \n\
                {\"time\":\"2024-05-14T09:00:00.000000001Z\",\"ip\":\"b\",\"bytes\":\"4\",\"extra\":{\"x\":[1]}}\n";
    let o = TraceOptions {
        cost_field: Some("bytes".into()),
        ..options(TraceFormat::Jsonl)
    };
    assert_eq!(
        rows(text, &o).unwrap(),
        [row(0, "a", Some(3)), row(1, "b", Some(4))]
    );
    let objects = TraceOptions {
        key: Some(KeyTemplate::parse("extra").unwrap()),
        ..options(TraceFormat::Jsonl)
    };
    let err = rows(text, &objects).unwrap_err();
    assert!(err.starts_with("t.log:1:1: no `extra` field"), "{err}");
    let err = rows(
        &text.replace("\"ip\":\"a\"", "\"ip\":null"),
        &options(TraceFormat::Jsonl),
    )
    .unwrap_err();
    assert!(err.contains("no `ip` field"), "null is absent: {err}");
    let err = rows("[1,2]\n", &options(TraceFormat::Jsonl)).unwrap_err();
    assert!(
        err.starts_with("t.log:1:1: expected one JSON object per line"),
        "{err}"
    );
}

#[test]
fn named_csv_columns_follow_the_header() {
    let text = "# exported\nuser,ts,weight\nann,1715677200.5,2\nbob,1715677201,\n";
    let o = TraceOptions {
        key: Some(KeyTemplate::parse("user").unwrap()),
        time_field: Some("ts".into()),
        time_format: Some(ratesim::sim::TimeFormat::EpochS),
        cost_field: Some("weight".into()),
        ..TraceOptions::default()
    };
    let err = rows(text, &o).unwrap_err();
    assert!(
        err.starts_with("t.log:4:1: bad cost"),
        "an empty named cost is an error: {err}"
    );
    let o = TraceOptions {
        cost_field: None,
        ..o
    };
    assert_eq!(
        rows(text, &o).unwrap(),
        [row(0, "ann", None), row(S / 2, "bob", None)]
    );
    let err = rows("user,ts\nann,1,extra\n", &o).unwrap_err();
    assert!(
        err.starts_with("t.log:2:1: found 3 fields, more than the 2 columns"),
        "{err}"
    );
}

#[test]
fn the_classic_csv_reads_exactly_as_before() {
    let text = "time_s,key,cost\n0,alice,1\n0.5,alice\n1.25,bob,2\n";
    let got = rows(text, &TraceOptions::default()).unwrap();
    assert_eq!(
        got,
        [
            row(0, "alice", Some(1)),
            row(S / 2, "alice", None),
            row(S + S / 4, "bob", Some(2))
        ]
    );
    let err = rows("time_s,key\n2,a\n1,a\n", &TraceOptions::default()).unwrap_err();
    assert!(
        err.starts_with("t.log:3:1: time_s 1 is earlier than the previous row's 2"),
        "{err}"
    );
}

#[test]
fn csv_fields_and_headers_are_read_trimmed_and_blank_rows_skipped() {
    // Positional: a padded header is still the header, padded fields are trimmed, and a
    // row of spaces is blank.
    let text = "  time_s , key , cost \n 0 ,\talice\t, 2 \n   ,  \n0.5, bob \n";
    assert_eq!(
        rows(text, &TraceOptions::default()).unwrap(),
        [row(0, "alice", Some(2)), row(S / 2, "bob", None)]
    );
    // Named: the header's names are trimmed before they are matched.
    let o = TraceOptions {
        key: Some(KeyTemplate::parse("user").unwrap()),
        time_field: Some("ts".into()),
        ..TraceOptions::default()
    };
    let text = " user , ts \n ann , 1 \n";
    assert_eq!(rows(text, &o).unwrap(), [row(S, "ann", None)]);
}

/// A scenario `s.toml` whose one trace source has `fields`.
fn scenario_with(fields: &str) -> Result<Scenario, ratesim::sim::ScenarioError> {
    let text = format!(
        "name = \"t\"\nduration = \"10s\"\n[limit]\nmax_requests = 5\nwindow = \"1s\"\n\
         [[traffic]]\nkind = \"trace\"\npath = \"t.log\"\n{fields}"
    );
    Scenario::parse(&text, Path::new("s.toml"))
}

#[test]
fn a_field_that_does_not_apply_to_the_format_is_an_error_at_that_field() {
    let cases = [
        (
            "format = \"combined\"\ntime_format = \"epoch_s\"\n",
            (10, 15),
            "`time_format` does not apply",
        ),
        (
            "format = \"combined\"\ntime_field = \"ts\"\n",
            (10, 14),
            "`time_field` does not apply",
        ),
        (
            "format = \"combined\"\nkey = \"{ip} {host}\"\n",
            (10, 7),
            "`host`",
        ),
        (
            "format = \"combined\"\ncost = \"size\"\n",
            (10, 8),
            "`size`",
        ),
        (
            "origin = \"2024-01-01T00:00:00Z\"\n",
            (9, 10),
            "`origin` applies only to absolute",
        ),
        ("format = \"xml\"\n", (9, 10), "unknown trace format `xml`"),
        ("key = \"{ip\"\n", (9, 7), "not closed"),
        (
            "same_second = \"smear\"\n",
            (9, 15),
            "\"keep\" or \"spread\"",
        ),
        (
            "include_status = [200, \"6xx\"]\n",
            (9, 24),
            "`6xx` is not a status",
        ),
        (
            "exclude_status = [99]\n",
            (9, 19),
            "`99` is not an HTTP status",
        ),
        (
            "format = \"jsonl\"\ntime_format = \"iso\"\n",
            (10, 15),
            "unknown time_format `iso`",
        ),
        (
            "format = \"jsonl\"\norigin = \"yesterday\"\n",
            (10, 10),
            "bad origin",
        ),
    ];
    for (fields, position, needle) in cases {
        let err = scenario_with(fields).unwrap_err();
        assert_eq!(err.position, Some(position), "{fields}: {err}");
        assert!(err.message.contains(needle), "{fields}: {err}");
    }
    let err = Scenario::parse(
        "name = \"t\"\nduration = \"10s\"\n[limit]\nmax_requests = 5\nwindow = \"1s\"\n\
         [[traffic]]\nkind = \"uniform\"\nrate = 1\nformat = \"csv\"\n",
        Path::new("s.toml"),
    )
    .unwrap_err();
    assert_eq!(err.position, Some((9, 10)), "{err}");
    assert!(
        err.message
            .contains("`format` does not apply to a `uniform` source"),
        "{err}"
    );
    let err = Scenario::parse(
        "name = \"t\"\nduration = \"10s\"\n[limit]\nmax_requests = 5\nwindow = \"1s\"\n\
         [[traffic]]\nkind = \"uniform\"\nrate = 1\ncost = \"bytes\"\n",
        Path::new("s.toml"),
    )
    .unwrap_err();
    assert_eq!(err.position, Some((9, 8)), "{err}");
    assert!(err.message.contains("without quotes"), "{err}");
}

/// The same six requests (times, clients, a 404 to drop) in each format.
const REQUESTS: [(u64, &str, u16); 7] = [
    (0, "10.0.0.1", 200),
    (0, "10.0.0.2", 200),
    (1, "10.0.0.1", 200),
    (1, "10.0.0.1", 404),
    (2, "10.0.0.1", 200),
    (2, "10.0.0.1", 200),
    (11, "10.0.0.2", 200),
];

fn as_combined() -> String {
    // 2024-05-14T09:00:00Z written at +02:00.
    REQUESTS
        .iter()
        .map(|(s, ip, st)| {
            format!(
                "{ip} - - [14/May/2024:11:00:{s:02} +0200] \"GET / HTTP/1.1\" {st} 1 \"-\" \"t\"\n"
            )
        })
        .collect()
}

fn as_jsonl() -> String {
    // The same instants written at -05:00.
    REQUESTS
        .iter()
        .map(|(s, ip, st)| {
            format!(
                "{{\"time\":\"2024-05-14T04:00:{s:02}-05:00\",\"ip\":\"{ip}\",\"status\":{st}}}\n"
            )
        })
        .collect()
}

fn as_csv() -> String {
    let mut csv = String::from("ts,ip,status\n");
    for (s, ip, st) in REQUESTS {
        csv.push_str(&format!("{}{:03},{ip},{st}\n", 1_715_677_200 + s, 0));
    }
    csv
}

/// Runs `ratesim run` on a scenario replaying `trace` with `fields`; its decisions.csv.
fn decisions(dir: &Path, name: &str, trace: &str, fields: &str) -> Vec<u8> {
    let out_dir = format!("out-{name}");
    fs::write(dir.join(name), trace).unwrap();
    let scenario = format!(
        "name = \"x\"\nduration = \"20s\"\n[limit]\nmax_requests = 2\nwindow = \"10s\"\n\
         [[traffic]]\nkind = \"trace\"\npath = \"{name}\"\nexclude_status = [404]\n{fields}"
    );
    fs::write(dir.join("s.toml"), scenario).unwrap();
    let out = Command::cargo_bin("ratesim")
        .unwrap()
        .current_dir(dir)
        .args(["run", "s.toml", "--quiet", "--no-charts", "--out", &out_dir])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    fs::read(dir.join(out_dir).join("decisions.csv")).unwrap()
}

#[test]
fn the_same_requests_as_combined_jsonl_and_csv_give_byte_identical_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let combined = decisions(
        dir.path(),
        "a.log",
        &as_combined(),
        "format = \"combined\"\n",
    );
    let jsonl = decisions(dir.path(), "b.jsonl", &as_jsonl(), "format = \"jsonl\"\n");
    let csv = decisions(
        dir.path(),
        "c.csv",
        &as_csv(),
        "key = \"ip\"\ntime_field = \"ts\"\ntime_format = \"epoch_ms\"\n",
    );
    let text = String::from_utf8(combined.clone()).unwrap();
    assert_eq!(
        text.lines().count(),
        1 + 6 * 6,
        "a header, then 6 requests × 6 algorithms:\n{text}"
    );
    assert!(
        text.contains(",11,10.0.0.2,"),
        "t = 11 s for the last request:\n{text}"
    );
    assert!(combined == jsonl, "combined and jsonl differ");
    assert!(combined == csv, "combined and csv differ");
}

#[test]
fn a_bad_line_mid_trace_fails_the_run_on_one_thread_or_several() {
    // With several worker threads the stream is generated once and sent to all of
    // them; the error must still end the run, as it does on one thread.
    let dir = tempfile::tempdir().unwrap();
    let mut trace = String::from("time_s,key\n");
    for i in 0..5_000 {
        trace.push_str(&format!("{i}.5,k{}\n", i % 7));
    }
    trace.push_str("1.0,late\n"); // out of order, far past the first chunk
    fs::write(dir.path().join("t.csv"), trace).unwrap();
    let text = "name = \"t\"\nduration = \"6000s\"\nalgorithms = [\"all\"]\n\
                [limit]\nmax_requests = 5\nwindow = \"1s\"\n\
                [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n";
    let scenario = Scenario::parse(text, &dir.path().join("s.toml")).unwrap();
    for threads in [1, 2, 4] {
        let options = ratesim::sim::RunOptions {
            threads,
            ..ratesim::sim::RunOptions::default()
        };
        let mut sinks = |_: &str| -> std::io::Result<Box<dyn ratesim::sim::DecisionSink>> {
            Ok(Box::new(ratesim::sim::NoopSink))
        };
        let err = ratesim::sim::run(&scenario, &options, &mut sinks).unwrap_err();
        assert!(
            err.to_string()
                .contains("t.csv:5002:1: time_s 1.0 is earlier"),
            "{threads} threads: {err}"
        );
    }
}

#[test]
fn a_combined_log_s_quoted_fields_are_unescaped() {
    let line = "10.0.0.1 - - [14/May/2024:11:00:00 +0200] \"GET / HTTP/1.1\" 200 1 \
                \"http://r/?q=\\\"x\\\"\" \"agent \\\\ \\\"q\\\" \\x22\"\n";
    let by = |field: &str| -> String {
        let o = TraceOptions {
            key: Some(KeyTemplate::parse(field).unwrap()),
            ..options(TraceFormat::Combined)
        };
        rows(line, &o).unwrap().remove(0).key
    };
    assert_eq!(by("referer"), "http://r/?q=\"x\"");
    assert_eq!(
        by("user_agent"),
        "agent \\ \"q\" \\x22",
        "nginx's \\x22 kept as written"
    );
}

#[test]
fn a_request_line_that_is_not_method_target_protocol_has_none_of_them() {
    for request in [
        "-",
        "GET",
        " / HTTP/1.1",
        "GET  HTTP/1.1",
        "GET   HTTP/1.0  ",
    ] {
        let line =
            format!("10.0.0.1 - - [14/May/2024:11:00:00 +0200] \"{request}\" 400 0 \"-\" \"t\"\n");
        for field in ["method", "target", "path", "protocol"] {
            let o = TraceOptions {
                key: Some(KeyTemplate::parse(&format!("{{ip}}{{{field}}}")).unwrap()),
                ..options(TraceFormat::Combined)
            };
            let err = rows(&line, &o).unwrap_err();
            assert!(
                err.starts_with(&format!("t.log:1:1: no `{field}` field")),
                "{request:?}: {err}"
            );
        }
        let o = TraceOptions {
            key: Some(KeyTemplate::parse("request").unwrap()),
            ..options(TraceFormat::Combined)
        };
        assert_eq!(
            rows(&line, &o).unwrap()[0].key,
            request,
            "the request as written"
        );
    }
}

/// Field `field` of a combined line whose request line is `request`, or the error.
fn request_field(request: &str, field: &str) -> Result<String, String> {
    let line = format!("199.72.81.55 - - [01/Jul/1995:00:00:01 -0400] \"{request}\" 200 6245\n");
    let o = TraceOptions {
        key: Some(KeyTemplate::parse(&format!("{{{field}}}")).unwrap()),
        ..options(TraceFormat::Combined)
    };
    rows(&line, &o).map(|mut r| r.remove(0).key)
}

#[test]
fn request_lines_are_split_as_servers_log_them() {
    // (request line as the NASA log writes it, method, target, path, protocol)
    let cases = [
        ("GET /ksc.html", "GET", "/ksc.html", "/ksc.html", None),
        (
            "GET /x.html  HTTP/1.0",
            "GET",
            "/x.html",
            "/x.html",
            Some("HTTP/1.0"),
        ),
        (
            "GET /a b.html?q=1 HTTP/1.0",
            "GET",
            "/a b.html?q=1",
            "/a b.html",
            Some("HTTP/1.0"),
        ),
        (
            "GET  /x.html HTTP/1.0",
            "GET",
            "/x.html",
            "/x.html",
            Some("HTTP/1.0"),
        ),
        ("GET /a b c", "GET", "/a b c", "/a b c", None),
        ("GET / HTTP/1.1", "GET", "/", "/", Some("HTTP/1.1")),
    ];
    for (request, method, target, path, protocol) in cases {
        assert_eq!(
            request_field(request, "method").as_deref(),
            Ok(method),
            "{request}"
        );
        assert_eq!(
            request_field(request, "target").as_deref(),
            Ok(target),
            "{request}"
        );
        assert_eq!(
            request_field(request, "path").as_deref(),
            Ok(path),
            "{request}"
        );
        match protocol {
            Some(p) => assert_eq!(request_field(request, "protocol").as_deref(), Ok(p)),
            None => {
                let err = request_field(request, "protocol").unwrap_err();
                assert!(err.contains("no `protocol` field"), "{request}: {err}");
            }
        }
    }
    // The case: `{ip} {path}` on an HTTP/0.9 line.
    let line = "199.72.81.55 - - [01/Jul/1995:00:00:01 -0400] \"GET /ksc.html\" 200 7074\n";
    let o = TraceOptions {
        key: Some(KeyTemplate::parse("{ip} {path}").unwrap()),
        ..options(TraceFormat::Combined)
    };
    assert_eq!(rows(line, &o).unwrap()[0].key, "199.72.81.55 /ksc.html");
}

#[test]
fn a_common_log_line_with_an_escaped_request_keeps_its_byte_count() {
    let line = "10.0.0.1 - - [14/May/2024:11:00:00 +0200] \"GET /\\\"x HTTP/1.0\" 200 12\n";
    let o = |key: &str| TraceOptions {
        key: Some(KeyTemplate::parse(key).unwrap()),
        cost_field: Some("bytes".into()),
        ..options(TraceFormat::Combined)
    };
    let got = rows(line, &o("target")).unwrap();
    assert_eq!((got[0].key.as_str(), got[0].cost), ("/\"x", Some(12)));
}

#[test]
fn bytes_that_are_not_utf8_are_refused_only_in_the_fields_used() {
    let line = |agent: &[u8], user: &[u8]| {
        [
            b"10.0.0.1 - ".as_slice(),
            user,
            b" [14/May/2024:11:00:00 +0200] \"GET / HTTP/1.1\" 200 1 \"-\" \"",
            agent,
            b"\"\n",
        ]
        .concat()
    };
    let read = |bytes: Vec<u8>, key: &str| {
        let o = TraceOptions {
            key: Some(KeyTemplate::parse(key).unwrap()),
            ..options(TraceFormat::Combined)
        };
        let mut r =
            TraceReader::from_reader_with(Path::new("t.log"), std::io::Cursor::new(bytes), &o);
        let row = r.next_row().map_err(|e| e.to_string());
        (row, r.skipped().not_utf8)
    };
    // An invalid byte in the user agent: the line is a request, counted.
    let (row, lossy) = read(line(b"Mozilla \xff\xfe", b"bob"), "ip");
    assert_eq!(row.unwrap().map(|r| r.key).as_deref(), Some("10.0.0.1"));
    assert_eq!(lossy, 1);
    let (row, lossy) = read(line(b"curl", b"bob"), "ip");
    assert!(row.unwrap().is_some());
    assert_eq!(lossy, 0, "a clean line is not counted");
    // In the key's own field: refused, saying which field.
    let (row, _) = read(line(b"curl", b"b\xffb"), "user");
    let err = row.unwrap_err();
    assert!(
        err.starts_with("t.log:1:1: the `user` field is not UTF-8 text"),
        "{err}"
    );
    // And the warning says so.
    let skipped = ratesim::sim::SkippedLines {
        count: 0,
        first: None,
        not_utf8: 3,
    };
    assert_eq!(
        skipped.describe(Path::new("a.log")),
        "a.log: read 3 requests from lines with bytes that are not UTF-8 text in fields the \
         scenario does not use"
    );
}

#[test]
fn a_trace_with_no_request_left_is_an_error_that_says_why() {
    let bad = "garbage\nmore garbage\n";
    let o = TraceOptions {
        skip_bad_lines: true,
        ..options(TraceFormat::Combined)
    };
    let err = rows(bad, &o).unwrap_err();
    assert!(
        err.starts_with(
            "t.log: no request left to replay: of its lines, 2 skipped as not \
                         requests (the first, line 1: no ident field"
        ),
        "{err}"
    );
    let filtered = TraceOptions {
        exclude_status: vec![StatusMatch::parse("2xx").unwrap()],
        ..options(TraceFormat::Combined)
    };
    let err = rows(COMBINED.lines().next().unwrap(), &filtered).unwrap_err();
    assert!(
        err.contains("1 left out by include_status / exclude_status"),
        "{err}"
    );
    // A file with nothing that could be a request is not this error.
    assert_eq!(rows("\n", &options(TraceFormat::Combined)), Ok(vec![]));
}

#[test]
fn a_csv_without_a_header_row_keeps_its_first_row() {
    let positional = rows("0,alice\n1,bob,2\n", &TraceOptions::default()).unwrap();
    assert_eq!(positional, [row(0, "alice", None), row(S, "bob", Some(2))]);
    // Named columns without a header are `time_s,key,cost`.
    let named = TraceOptions {
        time_format: Some(ratesim::sim::TimeFormat::EpochS),
        ..TraceOptions::default()
    };
    assert_eq!(
        rows("1715677200,alice\n1715677201,bob,3\n", &named).unwrap(),
        [row(0, "alice", None), row(S, "bob", Some(3))]
    );
}

#[test]
fn only_the_first_row_can_be_a_header() {
    // Two exports concatenated: the second header is a row with a bad time.
    let err = rows(
        "time_s,key\n0,a\ntime_s,key\n1,b\n",
        &TraceOptions::default(),
    )
    .unwrap_err();
    assert!(err.starts_with("t.log:3:1: bad time_s"), "{err}");
}

#[test]
fn a_positional_csv_row_needs_two_or_three_fields() {
    let err = rows("0,a\n1\n", &TraceOptions::default()).unwrap_err();
    assert_eq!(
        err,
        "t.log:2:1: expected `time_s,key[,cost]`, found 1 field"
    );
    let err = rows("0,a\n1,a,1,x\n", &TraceOptions::default()).unwrap_err();
    assert_eq!(
        err,
        "t.log:2:1: expected `time_s,key[,cost]`, found 4 fields"
    );
}

#[test]
fn a_cost_is_optional_only_in_the_classic_csv() {
    // The classic CSV's cost column may be missing or empty: the source's cost applies.
    assert_eq!(
        rows("0,a,\n1,b\n", &TraceOptions::default()).unwrap(),
        [row(0, "a", None), row(S, "b", None)]
    );
    // A cost field named by the scenario must be on every line.
    let o = TraceOptions {
        cost_field: Some("bytes".into()),
        ..options(TraceFormat::Jsonl)
    };
    let text = "{\"time\":\"2024-05-14T09:00:00Z\",\"ip\":\"a\",\"bytes\":3}\n\
                {\"time\":\"2024-05-14T09:00:01Z\",\"ip\":\"a\"}\n";
    let err = rows(text, &o).unwrap_err();
    assert_eq!(err, "t.log:2:1: no `bytes` field for the cost");
}

#[test]
fn a_whole_number_that_does_not_parse_says_why() {
    use ratesim::sim::{parse_whole, parse_whole_from};
    let range = |min: u64| format!("expected a whole number from {min} to {}", u64::MAX);
    assert_eq!(parse_whole_from("1", 1), Ok(1));
    assert_eq!(parse_whole("+7"), Ok(7));
    assert_eq!(
        parse_whole_from("0", 1),
        Err(format!("`0` is too small; {}", range(1)))
    );
    for big in ["18446744073709551616", "+18446744073709551616"] {
        assert_eq!(
            parse_whole(big),
            Err(format!("`{big}` is too large (at most {})", u64::MAX))
        );
    }
    assert_eq!(
        parse_whole("-5"),
        Err(format!("`-5` is negative; {}", range(0)))
    );
    for text in ["1x", "", "-", "+", "-x"] {
        assert_eq!(
            parse_whole(text),
            Err(format!("`{text}` is not a whole number; {}", range(0))),
            "{text:?}"
        );
    }
}

/// A scenario names each trace format by the name the format gives itself, and
/// `NAMES` lists exactly those names, in the order messages list them.
#[test]
fn every_trace_format_reads_back_from_its_own_name() {
    let formats = [TraceFormat::Csv, TraceFormat::Combined, TraceFormat::Jsonl];
    for format in formats {
        assert_eq!(
            TraceFormat::from_name(format.name()),
            Some(format),
            "{format:?}"
        );
    }
    assert_eq!(formats.map(TraceFormat::name), TraceFormat::NAMES);
    assert_eq!(TraceFormat::from_name("tsv"), None);
}

/// A key template names at least one field, each inside its own `{…}`; a brace that
/// opens or closes nothing is an error unless doubled, and each error says why.
#[test]
fn a_key_template_refuses_empty_or_broken_fields_and_stray_braces() {
    let fields = |text: &str| -> Vec<String> {
        KeyTemplate::parse(text)
            .unwrap()
            .fields()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(fields("{ip}-{{{path}}}"), ["ip", "path"]);
    let err = |text: &str| KeyTemplate::parse(text).unwrap_err();
    assert!(err("").starts_with("empty key"), "{}", err(""));
    for text in ["{ip", "{ip} {path"] {
        assert!(err(text).contains("is not closed"), "{text}: {}", err(text));
    }
    for text in ["{}", "{ip} {}", "{a{b}"] {
        assert!(
            err(text).contains("expected a field name inside each"),
            "{text}: {}",
            err(text)
        );
    }
    for text in ["ip}", "{ip}}", "{ip} }"] {
        assert!(
            err(text).contains("closes nothing"),
            "{text}: {}",
            err(text)
        );
    }
    for text in ["{{ip}}", "x{{"] {
        assert!(
            err(text).contains("names no field"),
            "{text}: {}",
            err(text)
        );
    }
}

/// A class holds exactly its hundred codes: `"4xx"` keeps 400 and 499 and neither 399
/// nor 500 (a bound off by one at either end would differ here).
#[test]
fn a_status_class_holds_its_hundred_codes_and_none_beside_them() {
    let text: String = [(1, 399), (2, 400), (3, 499), (4, 500)]
        .iter()
        .map(|(i, status)| {
            format!(
                "10.0.0.{i} - - [14/May/2024:11:00:0{i} +0200] \"GET / HTTP/1.1\" {status} 1 \"-\" \"t\"\n"
            )
        })
        .collect();
    let keys = |o: TraceOptions| -> Vec<String> {
        let got = rows(&text, &o).unwrap_or_else(|e| panic!("{e}"));
        got.into_iter().map(|r| r.key).collect()
    };
    let class = || vec![StatusMatch::parse("4xx").unwrap()];
    let include = TraceOptions {
        include_status: class(),
        ..options(TraceFormat::Combined)
    };
    assert_eq!(keys(include), ["10.0.0.2", "10.0.0.3"]);
    let exclude = TraceOptions {
        exclude_status: class(),
        ..options(TraceFormat::Combined)
    };
    assert_eq!(keys(exclude), ["10.0.0.1", "10.0.0.4"]);
}
