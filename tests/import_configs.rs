//! `ratesim import` end to end, on real-looking configs of the four kinds
//! (tests/data/configs/ and the bundled scenarios/configs/nginx.conf): the scenarios
//! it writes are parsed back as TOML and checked against the limits written in the
//! configs by hand; bad configs exit 2 naming file:line.
//!
//! Every imported scenario names its preset (`nginx`, `haproxy`, `envoy`,
//! `envoy_local`) and loads as written; the bundled nginx.conf's runs on the bundled
//! log.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use ratesim::Nanos;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn config(name: &str) -> PathBuf {
    manifest().join("tests/data/configs").join(name)
}

/// Runs `ratesim args` in `dir`.
fn ratesim(dir: &Path, args: &[&str]) -> Output {
    Command::cargo_bin("ratesim")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn describe(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Imports `file` with `--out` into a fresh folder; the scenarios it wrote, by name.
fn import_all(file: &Path, extra: &[&str]) -> (tempfile::TempDir, Vec<(String, toml::Table)>) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["import", file.to_str().unwrap(), "--out", "out"];
    args.extend_from_slice(extra);
    let out = ratesim(dir.path(), &args);
    assert!(out.status.success(), "{}", describe(&out));
    let mut scenarios: Vec<(String, toml::Table)> = fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = fs::read_to_string(&path).unwrap();
            (name, text.parse::<toml::Table>().expect(&text))
        })
        .collect();
    scenarios.sort_by(|a, b| a.0.cmp(&b.0));
    (dir, scenarios)
}

/// What a scenario's limit says: preset, max_requests, window, burst.
fn limit_of(t: &toml::Table) -> (String, i64, Nanos, Option<i64>) {
    let algos = t["algorithms"].as_array().unwrap();
    assert_eq!(algos.len(), 1, "{t}");
    let limit = t["limit"].as_table().unwrap();
    (
        algos[0].as_str().unwrap().to_string(),
        limit["max_requests"].as_integer().unwrap(),
        Nanos::parse_duration(limit["window"].as_str().unwrap()).unwrap(),
        limit.get("burst").map(|b| b.as_integer().unwrap()),
    )
}

/// `[preset.nginx]` as (burst, nodelay, delay).
fn nginx_table(t: &toml::Table) -> (i64, bool, i64) {
    let n = t["preset"]["nginx"].as_table().unwrap();
    (
        n["burst"].as_integer().unwrap(),
        n["nodelay"].as_bool().unwrap(),
        n["delay"].as_integer().unwrap(),
    )
}

#[test]
fn the_services_week_month_and_year_are_its_fixed_7_30_and_365_days() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.yaml");
    let mut yaml = String::from("domain: d\ndescriptors:\n");
    for unit in ["week", "month", "year"] {
        yaml.push_str(&format!(
            "  - key: {unit}\n    rate_limit:\n      unit: {unit}\n      requests_per_unit: 7\n"
        ));
    }
    fs::write(&file, yaml).unwrap();
    let (_out, got) = import_all(&file, &[]);
    let days: Vec<(String, Nanos)> = got
        .iter()
        .map(|(name, t)| (name.clone(), limit_of(t).2))
        .collect();
    let day = Nanos::from_secs(86_400);
    let want = |n: u64| Nanos::new(n * day.as_u64());
    assert_eq!(
        days,
        [
            ("d_month".to_string(), want(30)),
            ("d_week".to_string(), want(7)),
            ("d_year".to_string(), want(365)),
        ]
    );
}

#[test]
fn an_nginx_config_gives_one_scenario_per_zone_with_its_rate_and_limit_req_parameters() {
    let (_dir, got) = import_all(&config("nginx-api.conf"), &[]);
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["api", "login"]);
    let (api, login) = (&got[0].1, &got[1].1);
    // rate=5r/s, limit_req burst=10 delay=4
    assert_eq!(
        limit_of(api),
        ("nginx".into(), 5, Nanos::from_secs(1), None)
    );
    assert_eq!(nginx_table(api), (10, false, 4));
    // "zone=login:1m" rate=30r/m, a bare limit_req: nginx's defaults
    assert_eq!(
        limit_of(login),
        ("nginx".into(), 30, Nanos::from_secs(60), None)
    );
    assert_eq!(nginx_table(login), (0, false, 0));
    assert_eq!(api["name"].as_str(), Some("api"));
}

#[test]
fn an_nginx_import_warns_at_file_and_line_about_includes_and_locations() {
    let dir = tempfile::tempdir().unwrap();
    let file = config("nginx-api.conf");
    let out = ratesim(
        dir.path(),
        &["import", file.to_str().unwrap(), "--only", "api"],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let at = |line: u32| format!("ratesim: warning: {}:{line}: ", file.display());
    assert!(stderr.contains(&(at(4) + "`include")), "{stderr}");
    assert!(
        stderr.contains(&(at(36) + "this limit_req applies only")),
        "{stderr}"
    );
    // The scenario keeps the warnings that concern it as comments.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("#   line 36: this limit_req applies only"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("line 41"),
        "login's warning is not api's: {stdout}"
    );
}

#[test]
fn an_haproxy_config_gives_one_scenario_per_table_that_a_rule_denies_on() {
    let (_dir, got) = import_all(&config("haproxy.cfg"), &[]);
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["fe_web", "st_api"]);
    // store http_req_rate(10s) + deny if { sc_http_req_rate(0) gt 100 }
    assert_eq!(
        limit_of(&got[0].1),
        ("haproxy".into(), 100, Nanos::from_secs(10), None)
    );
    // the table of backend st_api, http_req_rate(1m), through `acl too_fast … ge 21`
    assert_eq!(
        limit_of(&got[1].1),
        ("haproxy".into(), 20, Nanos::from_secs(60), None)
    );
    assert!(got[0].1.get("preset").is_none());
}

#[test]
fn an_envoy_ratelimit_config_gives_one_scenario_per_limited_descriptor_nested_included() {
    let dir = tempfile::tempdir().unwrap();
    let file = config("ratelimit.yaml");
    let out = ratesim(
        dir.path(),
        &["import", file.to_str().unwrap(), "--out", "o"],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (_d, got) = import_all(&file, &[]);
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "edge_proxy_authenticated_false_remote_address",
            "edge_proxy_client_id_partner-42",
            "edge_proxy_remote_address",
        ]
    );
    let envoy = |n, w| ("envoy".to_string(), n, Nanos::from_secs(w), None);
    assert_eq!(limit_of(&got[0].1), envoy(600, 60));
    assert_eq!(limit_of(&got[1].1), envoy(100_000, 86_400));
    assert_eq!(limit_of(&got[2].1), envoy(50, 1));
    // unlimited and shadow_mode descriptors never refuse: named, not imported.
    let at = |line: u32| format!("{}:{line}: ", file.display());
    assert!(
        stderr.contains(&(at(30) + "descriptor path=/healthz is unlimited")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&(at(35) + "descriptor path=/search is in shadow_mode")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&(at(45) + "descriptor remote_address=50.0.0.5 has requests_per_unit 0")),
        "{stderr}"
    );
}

#[test]
fn an_envoy_local_rate_limit_gives_tokens_per_fill_per_fill_interval_with_max_tokens_as_burst() {
    let dir = tempfile::tempdir().unwrap();
    let file = config("envoy-local.yaml");
    let out = ratesim(
        dir.path(),
        &["import", file.to_str().unwrap(), "--out", "o"],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:32: filter_enforced is not 100 %",
            file.display()
        )),
        "{stderr}"
    );
    let (_d, got) = import_all(&file, &[]);
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "api_route",
            "api_route_client_id_foo",
            "http_local_rate_limiter"
        ]
    );
    let local = |n, w, b| ("envoy_local".to_string(), n, w, Some(b));
    // the route's bucket: 1000 per 60s, max_tokens 1000
    assert_eq!(limit_of(&got[0].1), local(1000, Nanos::from_secs(60), 1000));
    // its descriptor client_id=foo: fill_interval as {seconds: 60}
    assert_eq!(limit_of(&got[1].1), local(10, Nanos::from_secs(60), 10));
    // the filter's: max_tokens 100, tokens_per_fill 10, fill_interval 0.5s
    assert_eq!(limit_of(&got[2].1), local(10, Nanos::from_millis(500), 100));
}

/// Writes `text` as `name` in a fresh folder and imports it; (folder, output).
fn import_text(name: &str, text: &str, extra: &[&str]) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(name), text).unwrap();
    let mut args = vec!["import", name];
    args.extend_from_slice(extra);
    let out = ratesim(dir.path(), &args);
    (dir, out)
}

#[test]
fn configs_the_presets_cannot_model_exit_2_naming_file_and_line() {
    let cases: [(&str, &str, &str); 13] = [
        (
            "m.conf",
            "http {\n  server {\n    limit_req_zone $remote_addr zone=a:1m rate=2r/s;\n  }\n}\n",
            "m.conf:3: `limit_req_zone` is not allowed in a `server` block",
        ),
        (
            "a.conf",
            "http {\n  limit_req_zone $binary_remote_addr zone=a:1m rate=1.5r/s;\n}\n",
            "a.conf:2: limit_req_zone: `rate=1.5r/s`",
        ),
        (
            "b.conf",
            "http {\n limit_req_zone $binary_remote_addr zone=a:1m rate=2r/h;\n}\n",
            "b.conf:2: limit_req_zone: `rate=2r/h`: expected a rate like 10r/s",
        ),
        (
            "c.conf",
            "http {\n limit_req_zone $remote_addr zone=a:1m rate=2r/s;\n server {\n  \
             limit_req zone=a burst=5 lazy;\n }\n}\n",
            "c.conf:4: limit_req: unknown parameter `lazy`",
        ),
        (
            "d.conf",
            "http {\n  server {\n    limit_req zone=nope;\n  }\n}\n",
            "d.conf:3: limit_req names zone `nope`",
        ),
        (
            "e.conf",
            "http {\n limit_req_zone $remote_addr zone=a:1m rate=2r/s;\n server {\n",
            "e.conf:3: this `{` is never closed",
        ),
        (
            "f.conf",
            "http {\n limit_req_zone $remote_addr zone=a:1m rate=2r/s;\n limit_req zone=a \
             nodelay delay=3;\n}\n",
            "f.conf:3: limit_req: both nodelay and delay= given",
        ),
        (
            "g.cfg",
            "frontend fe\n  stick-table type ip size 1k store http_req_rate(10s)\n  \
             http-request track-sc0 src\n  http-request deny if { sc_http_req_rate(0) lt 5 }\n",
            "g.cfg:4: `sc_http_req_rate(0) lt 5`: expected `sc_http_req_rate(0) gt N`",
        ),
        (
            "h.cfg",
            "frontend fe\n  stick-table type ip size 1k store conn_rate(10s)\n  \
             http-request track-sc0 src\n  http-request deny if { sc_http_req_rate(0) gt 5 }\n",
            "h.cfg:2: table `fe` does not store http_req_rate(period)",
        ),
        (
            "i.yaml",
            "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      \
             requests_per_unit: 5\n",
            "i.yaml:5: unknown unit `fortnight`",
        ),
        (
            "j.yaml",
            "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, \
             requests_per_unit: [1\n",
            "j.yaml:5: not valid YAML",
        ),
        (
            "k.yaml",
            "token_bucket:\n  max_tokens: 5\n  fill_interval: 0.01s\n",
            "k.yaml:3: fill_interval below 50ms",
        ),
        (
            "l.yaml",
            "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      \
             requests_per_unit: -1\n",
            "l.yaml:6: requests_per_unit: expected a whole number",
        ),
    ];
    for (name, text, expected) in cases {
        let (_dir, out) = import_text(name, text, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", describe(&out));
        assert!(
            stderr.starts_with(&format!("ratesim: error: {expected}")),
            "{name}: expected `{expected}`\n{}",
            describe(&out)
        );
        assert!(out.stdout.is_empty(), "{name}: {}", describe(&out));
    }
}

#[test]
fn a_zone_used_with_different_parameters_gives_one_scenario_per_use_and_a_snippet_imports() {
    // A conf.d snippet: no http block around it, as nginx includes it into http.
    let text = "limit_req_zone $binary_remote_addr zone=one:1m rate=3r/s;\n\
                server {\n  location /a { limit_req zone=one burst=5; }\n  \
                location /b { limit_req zone=one burst=9 nodelay; }\n  \
                location /c { limit_req zone=one burst=5; }\n}\n";
    let (dir, out) = import_text("snippet.conf", text, &["--out", "o"]);
    assert!(out.status.success(), "{}", describe(&out));
    let read = |name: &str| -> toml::Table {
        fs::read_to_string(dir.path().join("o").join(name))
            .unwrap()
            .parse()
            .unwrap()
    };
    let a = read("one_line3.toml");
    let b = read("one_line4.toml");
    assert_eq!(nginx_table(&a), (5, false, 0));
    assert_eq!(nginx_table(&b), (9, true, 0));
    assert_eq!(limit_of(&b), ("nginx".into(), 3, Nanos::from_secs(1), None));
    // /c repeats /a's parameters: no third scenario.
    assert_eq!(fs::read_dir(dir.path().join("o")).unwrap().count(), 2);
}

#[test]
fn a_config_of_no_known_kind_asks_for_kind_and_kind_overrides_detection() {
    let (_dir, out) = import_text("x.conf", "server { listen 80; }\n", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--kind"),
        "{}",
        describe(&out)
    );
    // Read as haproxy, an nginx file holds no stick table: nothing to import.
    let nginx = fs::read_to_string(config("nginx-api.conf")).unwrap();
    let (_dir, out) = import_text("n.conf", &nginx, &["--kind", "haproxy"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no rate limit found to import as haproxy"),
        "{}",
        describe(&out)
    );
}

#[test]
fn several_scenarios_on_stdout_is_an_error_that_names_them_and_only_picks_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = config("haproxy.cfg");
    let out = ratesim(dir.path(), &["import", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("2 scenarios (fe_web, st_api)"), "{stderr}");
    assert!(stderr.contains("--out DIR"), "{stderr}");
    let out = ratesim(
        dir.path(),
        &["import", file.to_str().unwrap(), "--only", "nope"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let out = ratesim(
        dir.path(),
        &["import", file.to_str().unwrap(), "--only", "fe_web"],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let t: toml::Table = String::from_utf8_lossy(&out.stdout).parse().unwrap();
    assert_eq!(t["name"].as_str(), Some("fe_web"));
}

/// The bundled config imported with the bundled log, as the README shows, in a copy
/// of `scenarios/` (so relative paths are those a user sees at the repository's root).
fn import_bundled() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["configs", "traces"] {
        let to = dir.path().join("scenarios").join(sub);
        fs::create_dir_all(&to).unwrap();
        for e in fs::read_dir(manifest().join("scenarios").join(sub)).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
    let out = ratesim(
        dir.path(),
        &[
            "import",
            "scenarios/configs/nginx.conf",
            "--trace",
            "scenarios/traces/nginx-access.log.gz",
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    (dir, text)
}

#[test]
fn the_bundled_nginx_conf_imports_with_the_bundled_log_as_its_traffic() {
    let (_dir, text) = import_bundled();
    let t: toml::Table = text.parse().expect(&text);
    // scenarios/configs/nginx.conf: rate=10r/s, burst=80 nodelay, keyed by address.
    assert_eq!(
        limit_of(&t),
        ("nginx".into(), 10, Nanos::from_secs(1), None)
    );
    assert_eq!(nginx_table(&t), (80, true, 0));
    let traffic = t["traffic"].as_array().unwrap();
    assert_eq!(traffic.len(), 1);
    let trace = traffic[0].as_table().unwrap();
    assert_eq!(trace["kind"].as_str(), Some("trace"));
    assert_eq!(
        trace["path"].as_str(),
        Some("scenarios/traces/nginx-access.log.gz")
    );
    assert_eq!(trace["format"].as_str(), Some("combined"));
    assert_eq!(trace["key"].as_str(), Some("ip"));
    // The log's last request is in its 151st second (scenarios/nginx_log.toml runs 160 s).
    let duration = Nanos::parse_duration(t["duration"].as_str().unwrap()).unwrap();
    assert!(
        duration > Nanos::from_secs(100) && duration <= Nanos::from_secs(160),
        "{duration}"
    );
}

#[test]
fn the_imported_scenario_validates_and_runs_as_written() {
    let (dir, text) = import_bundled();
    assert!(text.contains("algorithms = [\"nginx\"]"), "{text}");
    fs::write(dir.path().join("imported.toml"), &text).unwrap();
    let out = ratesim(dir.path(), &["validate", "imported.toml"]);
    assert!(out.status.success(), "{}", describe(&out));
    let args = ["run", "imported.toml", "--no-charts", "--no-decisions"];
    let out = ratesim(dir.path(), &[&args[..], &["--out", "o"]].concat());
    assert!(out.status.success(), "{}", describe(&out));
    let summary = fs::read_to_string(dir.path().join("o/summary.csv")).unwrap();
    let row = summary.lines().find(|l| l.starts_with("nginx,"));
    assert!(row.is_some(), "the nginx preset ran:\n{summary}");
}

#[test]
fn a_csv_trace_is_measured_keyed_as_asked_and_written_absolute_under_out() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("t.csv"),
        "time_s,key\n0.5,alice\n3.25,bob\n7.999,alice\n",
    )
    .unwrap();
    let file = config("envoy-local.yaml");
    let args = [
        "import",
        file.to_str().unwrap(),
        "--trace",
        "t.csv",
        "--out",
        "o",
    ];
    let out = ratesim(dir.path(), &args);
    assert!(out.status.success(), "{}", describe(&out));
    let t: toml::Table = fs::read_to_string(dir.path().join("o/http_local_rate_limiter.toml"))
        .unwrap()
        .parse()
        .unwrap();
    // The last request at 7.999 s: the run covers whole seconds past it.
    assert_eq!(t["duration"].as_str(), Some("8s"));
    let trace = t["traffic"][0].as_table().unwrap();
    assert_eq!(trace["format"].as_str(), Some("csv"));
    let path = Path::new(trace["path"].as_str().unwrap());
    assert!(path.is_absolute(), "{path:?}");
    assert_eq!(path, fs::canonicalize(dir.path().join("t.csv")).unwrap());
    assert!(
        trace.get("key").is_none(),
        "a csv trace keeps its own key column"
    );

    let mut args = args.to_vec();
    args.extend(["--key", "user", "--duration", "1m"]);
    let out = ratesim(dir.path(), &args);
    assert!(out.status.success(), "{}", describe(&out));
    let t: toml::Table = fs::read_to_string(dir.path().join("o/http_local_rate_limiter.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(t["duration"].as_str(), Some("60s"));
    assert_eq!(t["traffic"][0]["key"].as_str(), Some("user"));
}

#[test]
fn no_prefix_of_any_config_read_as_any_kind_panics() {
    // Every cut of every test config (and the bundled one), read as each kind: an
    // import or an error, never a panic.
    let mut files: Vec<PathBuf> = fs::read_dir(manifest().join("tests/data/configs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.push(manifest().join("scenarios/configs/nginx.conf"));
    let mut errors = 0;
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        let cuts = (0..text.len())
            .filter(|i| text.is_char_boundary(*i))
            .step_by(7);
        for cut in cuts {
            for kind in ratesim::import::ConfigKind::ALL {
                if ratesim::import::import_str(&text[..cut], &file, Some(kind)).is_err() {
                    errors += 1;
                }
            }
        }
    }
    assert!(errors > 0, "some cuts must be refused");
}

#[test]
fn import_help_teaches_the_workflow_and_the_four_kinds() {
    let out = ratesim(manifest(), &["import", "--help"]);
    assert!(out.status.success(), "{}", describe(&out));
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Examples:",
        "ratesim run imported.toml",
        "limit_req_zone",
        "sc_http_req_rate",
        "requests_per_unit",
        "token_bucket",
        "file:line",
    ] {
        assert!(
            help.contains(needle),
            "import --help lacks {needle}:\n{help}"
        );
    }
}

#[test]
fn every_imported_scenario_loads_as_written_with_its_preset_and_the_configs_limits() {
    use ratesim::sim::Scenario;
    use ratesim::{Registry, Rule};
    let rule = |n: u64, w: Nanos| Rule::new(n, w).unwrap();
    let s = Nanos::from_secs;
    // (config, scenario, the rule written in the config, by hand)
    let expected: [(&str, &str, Rule); 10] = [
        ("nginx-api.conf", "api", rule(5, s(1))),
        ("nginx-api.conf", "login", rule(30, s(60))),
        ("haproxy.cfg", "fe_web", rule(100, s(10))),
        ("haproxy.cfg", "st_api", rule(20, s(60))),
        (
            "ratelimit.yaml",
            "edge_proxy_remote_address",
            rule(50, s(1)),
        ),
        (
            "ratelimit.yaml",
            "edge_proxy_authenticated_false_remote_address",
            rule(600, s(60)),
        ),
        (
            "ratelimit.yaml",
            "edge_proxy_client_id_partner-42",
            rule(100_000, s(86_400)),
        ),
        (
            "envoy-local.yaml",
            "http_local_rate_limiter",
            rule(10, Nanos::from_millis(500)).with_burst(100).unwrap(),
        ),
        (
            "envoy-local.yaml",
            "api_route",
            rule(1000, s(60)).with_burst(1000).unwrap(),
        ),
        (
            "envoy-local.yaml",
            "api_route_client_id_foo",
            rule(10, s(60)).with_burst(10).unwrap(),
        ),
    ];
    for file in [
        "nginx-api.conf",
        "haproxy.cfg",
        "ratelimit.yaml",
        "envoy-local.yaml",
    ] {
        let (dir, got) = import_all(&config(file), &[]);
        let mine: Vec<_> = expected.iter().filter(|e| e.0 == file).collect();
        assert_eq!(got.len(), mine.len(), "{file}");
        for (name, table) in got {
            let (_, _, want) = mine
                .iter()
                .find(|e| e.1 == name)
                .unwrap_or_else(|| panic!("{file}: unexpected scenario {name}"));
            let path = dir.path().join(format!("out/{name}.toml"));
            let scenario = Scenario::load_with(&path, Registry::standard())
                .unwrap_or_else(|e| panic!("{file}: {name}: {e}"));
            let preset = match file {
                "nginx-api.conf" => "nginx",
                "haproxy.cfg" => "haproxy",
                "ratelimit.yaml" => "envoy",
                _ => "envoy_local",
            };
            assert_eq!(scenario.algorithms, [preset], "{file}: {name}");
            assert!(table.contains_key("limit"), "{file}: {name}");
            assert_eq!(scenario.rule, *want, "{file}: {name}");
            assert!(scenario.extra_limits.is_empty(), "{file}: {name}");
            assert_eq!(scenario.name, name);
        }
    }
}
