//! `ratesim import` (docs/import.md): each conversion from a peer's units to a
//! scenario's `[limit]` at the input where it and its plausible neighbours write
//! different limits. Through the command: a config in, the scenario it prints out.

use std::fs;
use std::process::Command;

use ratesim::Nanos;

/// What an imported scenario's limit says: preset, max_requests, window, burst.
type Limit = (String, i64, Nanos, Option<i64>);

/// `ratesim import NAME` on `text` written as `NAME` in a fresh folder: the scenario's
/// (preset, max_requests, window, burst), or the exit code and stderr.
fn import(name: &str, text: &str) -> Result<Limit, (i32, String)> {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(name), text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ratesim"))
        .current_dir(dir.path())
        .args(["import", name])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err((out.status.code().unwrap_or(-1), stderr));
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    let t: toml::Table = stdout.parse().unwrap_or_else(|e| panic!("{e}\n{stdout}"));
    let limit = t["limit"].as_table().unwrap();
    Ok((
        t["algorithms"][0].as_str().unwrap().to_string(),
        limit["max_requests"].as_integer().unwrap(),
        Nanos::parse_duration(limit["window"].as_str().unwrap()).unwrap(),
        limit.get("burst").map(|b| b.as_integer().unwrap()),
    ))
}

/// An HAProxy time without a unit is milliseconds (HAProxy's rule for timeouts and
/// periods): `http_req_rate(1500)` is a period of 1.5 s, not 1500 s; with a unit it is
/// that unit. `gt 7` admits 7 a period. Rules out a bare number read as seconds (the
/// unit of `rate=` elsewhere) and a unit dropped.
#[test]
fn an_haproxy_period_without_a_unit_is_milliseconds() {
    let cfg = |period: &str| {
        format!(
            "frontend fe\n  stick-table type ip size 1k store http_req_rate({period})\n  \
             http-request track-sc0 src\n  http-request deny if {{ sc_http_req_rate(0) gt 7 }}\n"
        )
    };
    let haproxy = |window| Ok(("haproxy".to_string(), 7, window, None));
    assert_eq!(
        import("a.cfg", &cfg("1500")),
        haproxy(Nanos::from_millis(1500))
    );
    assert_eq!(
        import("b.cfg", &cfg("1500ms")),
        haproxy(Nanos::from_millis(1500))
    );
    assert_eq!(import("c.cfg", &cfg("2m")), haproxy(Nanos::from_secs(120)));
    assert_eq!(import("d.cfg", &cfg("250us")), haproxy(Nanos::new(250_000)));
}

/// Envoy's local rate limit: `fill_interval` of exactly 50 ms is the least Envoy
/// accepts (it refuses a bucket *below* 50 ms), `{seconds, nanos}` adds both fields,
/// and a bucket without `tokens_per_fill` fills one token a time. Rules out refusing
/// 50 ms itself (`<=`), the nanos ignored, and `tokens_per_fill` defaulting to
/// `max_tokens`.
#[test]
fn an_envoy_local_bucket_takes_fifty_milliseconds_and_one_token_a_fill_by_default() {
    let bucket =
        |interval: &str| format!("token_bucket:\n  max_tokens: 5\n  fill_interval: {interval}\n");
    let local = |window| Ok(("envoy_local".to_string(), 1, window, Some(5)));
    assert_eq!(
        import("a.yaml", &bucket("0.05s")),
        local(Nanos::from_millis(50))
    );
    assert_eq!(
        import("b.yaml", &bucket("{seconds: 1, nanos: 500000000}")),
        local(Nanos::from_millis(1500))
    );
    let (code, stderr) = import("c.yaml", &bucket("0.049999999s")).unwrap_err();
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.starts_with("ratesim: error: c.yaml:3: fill_interval below 50ms"),
        "{stderr}"
    );
}
