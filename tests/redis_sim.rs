//! `ratesim run --store URL`: the simulator with every state in a real `redis-server`
//! must write the same `decisions.csv`, `window_counts.csv` and `summary.csv` as the
//! in-memory run, on every bundled scenario — every decision, remaining count, advice,
//! probe of when a denial would pass, and idle-key eviction made by the Lua scripts at
//! the fake clock's instants. The one column that differs by design is
//! `state_bytes_per_key`: this process measures its own memory, not Redis's, so it is
//! empty there. The run's keys are gone afterwards, and its password is nowhere in what
//! it writes.

mod redis_support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use redis::Commands;

const PASSWORD: &str = "sim-s3cret";

fn ratesim(args: &[&str], dir: &Path) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ratesim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the ratesim binary runs")
}

fn describe(args: &[&str], out: &Output) -> String {
    format!(
        "ratesim {}\nexit: {:?}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn scenarios() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    found.sort();
    found
}

fn has_deployment(scenario: &Path) -> bool {
    fs::read_to_string(scenario)
        .unwrap()
        .lines()
        .any(|l| l.trim() == "[deployment]")
}

/// summary.csv's rows as fields, with the `state_bytes_per_key` column taken out and
/// returned apart.
fn summary_without_state_bytes(path: &Path) -> (Vec<Vec<String>>, Vec<String>) {
    let text = fs::read_to_string(path).unwrap();
    let mut rows: Vec<Vec<String>> = text
        .lines()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    let column = rows[0]
        .iter()
        .position(|h| h == "state_bytes_per_key")
        .expect("summary.csv has state_bytes_per_key");
    let taken = rows.iter_mut().skip(1).map(|r| r.remove(column)).collect();
    rows[0].remove(column);
    (rows, taken)
}

/// Runs `scenario` in memory and on the store at `url` (whose password is `PASSWORD`),
/// in `work`, and checks that both wrote the same decisions, window counts and summary,
/// and that the password is in nothing the Redis run wrote or printed.
/// A redis-server of its own that asks for [`PASSWORD`], and the store URL that gives
/// it; `None` (the skip already said why) without `redis-server`.
fn protected_server() -> Option<(redis_support::Server, String)> {
    let server = redis_support::Server::start(&["--requirepass", PASSWORD])?;
    let url = server.url_with(&format!("?pass={PASSWORD}"));
    Some((server, url))
}

fn decides_the_same_on_redis(work: &Path, scenario: &Path, url: &str) {
    let name = scenario.file_stem().unwrap().to_str().unwrap();
    let path = scenario.to_str().unwrap();
    let (memory, remote) = (format!("memory-{name}"), format!("redis-{name}"));
    let base = ["run", path, "--no-charts", "-q", "--out"];
    let args: Vec<&str> = base.iter().copied().chain([memory.as_str()]).collect();
    let out = ratesim(&args, work);
    assert!(out.status.success(), "{}", describe(&args, &out));
    let args: Vec<&str> = base
        .iter()
        .copied()
        .chain([remote.as_str(), "--store", url])
        .collect();
    let out = ratesim(&args, work);
    assert!(out.status.success(), "{}", describe(&args, &out));

    let (m, r) = (work.join(&memory), work.join(&remote));
    for file in ["decisions.csv", "window_counts.csv"] {
        let (a, b) = (
            fs::read(m.join(file)).unwrap(),
            fs::read(r.join(file)).unwrap(),
        );
        assert!(a == b, "{name}: {file} differs between memory and Redis");
    }
    let (mem_rows, mem_bytes) = summary_without_state_bytes(&m.join("summary.csv"));
    let (red_rows, red_bytes) = summary_without_state_bytes(&r.join("summary.csv"));
    assert_eq!(mem_rows, red_rows, "{name}: summary.csv differs");
    assert!(
        mem_bytes
            .iter()
            .all(|b| b.parse::<u64>().is_ok_and(|n| n > 0)),
        "{name}: memory measures its states: {mem_bytes:?}"
    );
    assert!(
        red_bytes.iter().all(String::is_empty),
        "{name}: Redis's states are not measured here: {red_bytes:?}"
    );
    // The password is in no file the run wrote, nor in what it printed.
    for entry in fs::read_dir(&r).unwrap() {
        let text = fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&text);
        assert!(
            !text.contains(PASSWORD),
            "{name}: a file holds the password"
        );
    }
    let printed = describe(&args, &out).replace(url, "");
    assert!(
        !printed.contains(PASSWORD),
        "{name}: output holds the password"
    );
}

#[test]
fn every_bundled_scenario_decides_the_same_on_redis_as_in_memory() {
    let Some((server, url)) = protected_server() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for scenario in scenarios().iter().filter(|s| !has_deployment(s)) {
        decides_the_same_on_redis(work.path(), scenario, &url);
        compared += 1;
    }
    assert!(compared >= 8, "only {compared} scenarios compared");
    // Every run removed its keys.
    let mut con = server.connection(&format!("?pass={PASSWORD}"));
    let left: Vec<String> = con.keys("*").unwrap();
    assert!(left.is_empty(), "keys left behind: {left:?}");
}

/// No bundled scenario has several `[[limit]]`s: on Redis each algorithm is then the
/// store's composite of one script per rule, which must decide as the in-memory
/// composite does (a limiter built from the first rule alone would admit more).
#[test]
fn a_scenario_with_several_limits_decides_the_same_on_redis_as_in_memory() {
    let Some((_server, url)) = protected_server() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let scenario = work.path().join("two_limits.toml");
    fs::write(
        &scenario,
        "name = \"two_limits\"\nduration = \"40s\"\nalgorithms = [\"all\"]\n\
         [[limit]]\nmax_requests = 4\nwindow = \"1s\"\n\
         [[limit]]\nmax_requests = 12\nwindow = \"10s\"\n\
         [[traffic]]\nkind = \"poisson\"\nrate = 3\nkeys = 3\n",
    )
    .unwrap();
    decides_the_same_on_redis(work.path(), &scenario, &url);
    // Both rules bind: 4 a second alone would admit nearly all of the ~360 requests;
    // with 12 per 10 s, a client gets at most 12 in each of the four windows plus 12
    // more across a boundary, so the three together at most 3 × 5 × 12.
    let (rows, _) = summary_without_state_bytes(&work.path().join("memory-two_limits/summary.csv"));
    let allowed = rows[0].iter().position(|h| h == "allowed").unwrap();
    for row in &rows[1..] {
        let admitted: u64 = row[allowed].parse().unwrap();
        assert!(admitted <= 3 * 5 * 12, "{row:?}");
        assert!(admitted > 0, "{row:?}");
    }
}

/// A request costlier than a rule's capacity can never pass; with several rules its
/// row names the first rule it can never fit (in memory: the first whose wait is
/// "never"). The store refuses it before any round trip and must name the same rule.
#[test]
fn a_request_that_never_fits_names_the_same_rule_on_redis_as_in_memory() {
    let Some((_server, url)) = protected_server() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let scenario = work.path().join("never_fits.toml");
    // Capacities 20 then 6 (bursts at their default, the max): a cost of 8 fits the
    // first rule and never the second, a cost of 30 fits neither; costs of 1 keep the
    // states busy so the costly requests meet fresh and used states alike.
    fs::write(
        &scenario,
        "name = \"never_fits\"\nduration = \"20s\"\nalgorithms = [\"all\"]\n\
         [[limit]]\nmax_requests = 20\nwindow = \"10s\"\n\
         [[limit]]\nmax_requests = 6\nwindow = \"1s\"\n\
         [[traffic]]\nkind = \"poisson\"\nrate = 4\nkeys = 2\n\
         [[traffic]]\nkind = \"poisson\"\nrate = 1\nkeys = 2\ncost = 8\n\
         [[traffic]]\nkind = \"poisson\"\nrate = 1\nkeys = 2\ncost = 30\n",
    )
    .unwrap();
    decides_the_same_on_redis(work.path(), &scenario, &url);
    // The comparison above is only worth something if such rows exist and name a rule.
    let text = fs::read_to_string(work.path().join("memory-never_fits/decisions.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (cost, by) = (col("cost"), col("denied_by"));
    let mut named = [0u32; 2];
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        match (f[cost], f[by]) {
            ("8", "6/1s") => named[0] += 1,
            ("30", "20/10s") => named[1] += 1,
            ("8" | "30", other) => panic!("a cost of {} denied by {other:?}", f[cost]),
            _ => {}
        }
    }
    assert!(named.iter().all(|&n| n > 0), "never-fits rows: {named:?}");
}

#[test]
fn a_scenario_with_a_deployment_is_refused_before_anything_is_written() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let url = server.url();
    let work = tempfile::tempdir().unwrap();
    let scenario = scenarios()
        .into_iter()
        .find(|s| has_deployment(s))
        .expect("a bundled deployment scenario");
    let args = [
        "run",
        scenario.to_str().unwrap(),
        "--out",
        "out",
        "--store",
        &url,
    ];
    let out = ratesim(&args, work.path());
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[deployment]"), "{}", describe(&args, &out));
    assert!(
        !work.path().join("out").exists(),
        "{}",
        describe(&args, &out)
    );
}

#[test]
fn an_unreachable_store_or_a_wrong_password_fails_before_anything_is_written() {
    let Some(server) = redis_support::Server::start(&["--requirepass", PASSWORD]) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let burst = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/burst.toml");
    let wrong = server.url_with("?pass=not-the-password");
    let unreachable = format!(
        "redis+unix://{}",
        work.path().join("no-such.sock").display()
    );
    for url in [wrong.as_str(), unreachable.as_str()] {
        let args = [
            "run",
            burst.to_str().unwrap(),
            "--out",
            "out",
            "--store",
            url,
        ];
        let out = ratesim(&args, work.path());
        assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--store"), "{}", describe(&args, &out));
        assert!(!stderr.contains("not-the-password"), "{stderr}");
        assert!(
            !work.path().join("out").exists(),
            "{}",
            describe(&args, &out)
        );
    }
}

/// With open clients, the decisions of different clients go to Redis together, a
/// pipeline of them per round trip (issue 30, item 8), and decide as memory does: 8,000
/// requests over 400 clients, each far under its limit, took 8,000 round trips when each
/// decision was its own call; a pipeline holds each client at most once, so with 400
/// equally likely clients most pipelines hold well over four.
#[test]
fn the_decisions_of_different_clients_share_round_trips_and_decide_as_in_memory() {
    use ratesim::redis::RedisStore;
    use ratesim::sim::{self, RunOptions, Scenario, StateBackend};
    let Some((_server, url)) = protected_server() else {
        return;
    };
    let text = "name = \"many_clients\"\nduration = \"40s\"\nseed = 3\n\
                algorithms = [\"token_bucket\"]\n\
                [limit]\nmax_requests = 10\nwindow = \"1s\"\n\
                [[traffic]]\nkind = \"poisson\"\nrate = 200\nkeys = 400\n";
    let scenario = Scenario::parse(text, Path::new("many_clients.toml")).unwrap();
    let store = RedisStore::builder("pipelined")
        .server(&url)
        .stop_after_failure()
        .open()
        .unwrap();
    let backend = StateBackend::Redis(store.clone());
    let on_redis = RunOptions {
        threads: 1,
        store: &backend,
        ..RunOptions::default()
    };
    let noop = &mut |_: &str| Ok(Box::new(sim::NoopSink) as Box<dyn sim::DecisionSink>);
    let remote = sim::run(&scenario, &on_redis, noop).unwrap();
    let memory = RunOptions {
        threads: 1,
        ..RunOptions::default()
    };
    let local = sim::run(&scenario, &memory, noop).unwrap();
    let (r, m) = (&remote.algorithms[0].metrics, &local.algorithms[0].metrics);
    assert_eq!(
        (r.attempts, r.allowed, r.denied, r.max_in_window),
        (m.attempts, m.allowed, m.denied, m.max_in_window)
    );
    assert!(r.attempts > 7_000, "{} requests", r.attempts);
    let exchanges = store.exchanges();
    assert!(
        exchanges * 4 < r.attempts,
        "{exchanges} exchanges with Redis for {} decisions",
        r.attempts
    );
    store.remove_all().unwrap();
}
