//! Deployments (`[deployment]`): many servers, one limit. Analytic checks of each
//! store, the balancers, validation at the offending field, and determinism.

mod sim_support;

use std::path::Path;

use ratesim::Nanos;
use ratesim::sim::{ArrivalStream, RunReport, Scenario};
use sim_support::*;

/// `max` per 10 s, one client sending uniformly at `rate` per second for a minute,
/// with `deployment` (TOML lines, or empty for none).
fn steady(max: u64, rate: &str, deployment: &str) -> Scenario {
    let text = format!(
        "name = \"d\"\nduration = \"60s\"\nalgorithms = [\"all\"]\n\
         [limit]\nmax_requests = {max}\nwindow = \"10s\"\n\
         [[traffic]]\nkind = \"uniform\"\nrate = {rate}\n{deployment}"
    );
    parse_at(&text, Path::new("d.toml"))
}

fn over_admission(report: &RunReport, algorithm: &str) -> f64 {
    let a = report.algorithms.iter().find(|a| a.name == algorithm);
    a.unwrap_or_else(|| panic!("{algorithm} ran"))
        .metrics
        .over_admission
}

#[test]
fn local_limiters_behind_round_robin_admit_nodes_times_the_limit() {
    for nodes in [1u64, 2, 4, 8] {
        // nodes × 5 per 10 s: every node sees exactly its own limit.
        let rate = format!("{}", nodes as f64 * 0.5);
        let sc = steady(
            5,
            &rate,
            &format!("[deployment]\nnodes = {nodes}\nstore = \"local\""),
        );
        let report = run_quiet(&sc);
        assert_eq!(
            over_admission(&report, "sliding_window_log"),
            nodes as f64,
            "{nodes} nodes"
        );
        let nodes_csv = &report.algorithms[0].nodes;
        assert_eq!(nodes_csv.len() as u64, nodes);
        assert!(nodes_csv.iter().all(|n| n.attempts == 60 * 5 / 10));
    }
}

#[test]
fn a_shared_store_holds_the_limit_whatever_the_node_count() {
    for nodes in [1u64, 2, 4, 8] {
        let rate = format!("{}", nodes as f64 * 0.5);
        let dep = format!("[deployment]\nnodes = {nodes}\nstore = \"shared\"\nlatency = \"2ms\"");
        let report = run_quiet(&steady(5, &rate, &dep));
        assert_eq!(
            over_admission(&report, "sliding_window_log"),
            1.0,
            "{nodes} nodes"
        );
    }
}

#[test]
fn shared_with_no_latency_and_no_skew_is_byte_identical_to_one_server() {
    for client in [
        "",
        "[client]\nkind = \"retry\"\nmax_retries = 2\njitter = \"10ms\"",
    ] {
        let one = steady(5, "1.7", client);
        let dep =
            format!("{client}\n[deployment]\nnodes = 3\nstore = \"shared\"\nbalancer = \"random\"");
        let many = steady(5, "1.7", &dep);
        let (a, rows_a) = run_capturing(&one, 1);
        let (b, rows_b) = run_capturing(&many, 1);
        assert_eq!(rows_a, rows_b, "decisions ({client})");
        for (x, y) in a.algorithms.iter().zip(&b.algorithms) {
            assert_eq!(x.metrics, y.metrics, "{} ({client})", x.name);
            assert_eq!(x.window_counts, y.window_counts, "{}", x.name);
            assert_eq!(x.timeline, y.timeline, "{}", x.name);
        }
    }
}

/// `rows` (`(ms, key, cost)`) replayed for `duration` under `limit` (TOML lines), on
/// `deployment` (TOML lines), with `client` (TOML lines, or empty for open clients);
/// the report and every decision.
fn replay_trace(
    rows: &[(u64, &str, u64)],
    duration: &str,
    limit: &str,
    deployment: &str,
    client: &str,
) -> (RunReport, Vec<Vec<Row>>) {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("time_s,key,cost\n");
    for (t, key, cost) in rows {
        csv.push_str(&format!("{}.{:03},{key},{cost}\n", t / 1000, t % 1000));
    }
    std::fs::write(dir.path().join("t.csv"), csv).unwrap();
    let text = format!(
        "name = \"r\"\nduration = \"{duration}\"\nalgorithms = [\"all\"]\n[limit]\n{limit}\n\
         [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n{client}\n[deployment]\n{deployment}"
    );
    run_capturing(&parse_at(&text, &dir.path().join("r.toml")), 1)
}

/// One client's requests at `times_ms` under `limit` (TOML lines) and `deployment`.
fn replay(times_ms: &[u64], limit: &str, deployment: &str) -> RunReport {
    let rows: Vec<(u64, &str, u64)> = times_ms.iter().map(|&t| (t, "c", 1)).collect();
    replay_trace(&rows, "10s", limit, deployment, "").0
}

/// A 1-per-10s limit on one client, requests at `times_ms`, `shared_racy` at 10 ms.
fn racy(times_ms: &[u64]) -> RunReport {
    let limit = "max_requests = 1\nwindow = \"10s\"";
    replay(
        times_ms,
        limit,
        "nodes = 2\nstore = \"shared_racy\"\nlatency = \"10ms\"",
    )
}

#[test]
fn no_idle_sweep_forgets_a_state_a_later_stamp_still_counts() {
    // 1 per 1 s, stamped by the nodes, 400 ms to the store. The entry admitted at
    // 0.7 s counts until 1.7 s; the request at 1.65 s reaches the store at 2.05 s,
    // after the sweep due at 2 s, but its stamp is 1.65 s: it must be denied.
    let limit = "max_requests = 1\nwindow = \"1s\"";
    for store in ["\"shared\"\nclock = \"node\"", "\"shared_racy\""] {
        let dep = format!("nodes = 2\nstore = {store}\nlatency = \"400ms\"");
        let report = replay(&[700, 1650], limit, &dep);
        assert_eq!(
            over_admission(&report, "sliding_window_log"),
            1.0,
            "{store}"
        );
    }
}

#[test]
fn shared_racy_over_admits_exactly_when_a_read_falls_before_the_last_write_lands() {
    // Request at 0 reads at 10 ms and writes at 30 ms. A request at 5 ms reads at
    // 15 ms: stale, both pass. At 20 ms it reads at 30 ms, when the write lands
    // (writes land first): denied. At 25 ms, plainly after: denied.
    for (times, expected) in [
        ([0, 5], 2.0),
        ([0, 19], 2.0),
        ([0, 20], 1.0),
        ([0, 25], 1.0),
    ] {
        let report = racy(&times);
        assert_eq!(report.algorithms.len(), 6);
        for a in &report.algorithms {
            let got = a.metrics.over_admission;
            assert_eq!(got, expected, "{} on requests at {times:?} ms", a.name);
        }
    }
}

#[test]
fn local_split_gives_each_node_its_share_and_denies_a_sticky_client() {
    // 10 per 10 s over 4 nodes: shares 3, 3, 2, 2. One client, sticky: one node.
    let dep = "[deployment]\nnodes = 4\nstore = \"local_split\"\nbalancer = \"key_hash\"";
    let report = run_quiet(&steady(10, "1", dep));
    let log = report
        .algorithms
        .iter()
        .find(|a| a.name == "sliding_window_log")
        .unwrap();
    let busy: Vec<_> = log.nodes.iter().filter(|n| n.attempts > 0).collect();
    assert_eq!(busy.len(), 1, "{:?}", log.nodes);
    let share = if busy[0].node < 2 { 3 } else { 2 };
    assert_eq!(log.metrics.max_in_window, share);
    // Round robin spreads it: the whole limit again.
    let rr = run_quiet(&steady(
        10,
        "1",
        "[deployment]\nnodes = 4\nstore = \"local_split\"",
    ));
    assert_eq!(over_admission(&rr, "sliding_window_log"), 1.0);
}

#[test]
fn synced_limiters_over_admit_between_exchanges_and_less_with_shorter_intervals() {
    // 4 nodes, 5 per 10 s, 2 per second offered.
    let run = |interval: &str| {
        let dep =
            format!("[deployment]\nnodes = 4\nstore = \"synced\"\nsync_interval = \"{interval}\"");
        over_admission(&run_quiet(&steady(5, "2", &dep)), "sliding_window_log")
    };
    let (slow, fast) = (run("20s"), run("100ms"));
    assert!(slow > fast, "20s: {slow}, 100ms: {fast}");
    assert!(fast <= 1.2, "100ms: {fast}");
    assert!(slow >= 3.0, "20s: {slow}");
}

#[test]
fn skewed_node_clocks_on_a_shared_store_stamped_by_the_nodes_over_admit() {
    // Two nodes, one 1 s behind and one 1 s ahead, share a sliding log stamped by the
    // nodes: an entry stamped by the slow node expires 2 s early for the fast one.
    let dep = |clock: &str, skew: &str| {
        format!("[deployment]\nnodes = 2\nstore = \"shared\"\nclock = \"{clock}\"\n{skew}")
    };
    let skewed = run_quiet(&steady(5, "2", &dep("node", "clock_skew = \"1s\"")));
    let store = run_quiet(&steady(5, "2", &dep("store", "")));
    assert!(over_admission(&skewed, "sliding_window_log") > 1.0);
    assert_eq!(over_admission(&store, "sliding_window_log"), 1.0);
    let offsets: Vec<i64> = skewed.algorithms[0]
        .nodes
        .iter()
        .map(|n| n.clock_offset_ns)
        .collect();
    assert_eq!(offsets, [-1_000_000_000, 1_000_000_000]);
}

#[test]
fn deployments_are_identical_on_any_number_of_threads() {
    let deps = [
        "[deployment]\nnodes = 3\nstore = \"local\"\nbalancer = \"random\"\nclock_skew = \"30ms\"",
        "[deployment]\nnodes = 3\nstore = \"shared_racy\"\nlatency = \"40ms\"",
        "[deployment]\nnodes = 3\nstore = \"synced\"\nlatency = \"5ms\"\nsync_interval = \"500ms\"",
    ];
    for dep in deps {
        for client in ["", "[client]\nkind = \"retry\"\njitter = \"5ms\""] {
            let sc = steady(5, "3.3", &format!("{client}\n{dep}"));
            let (a, rows_a) = run_capturing(&sc, 1);
            let (b, rows_b) = run_capturing(&sc, 4);
            assert_eq!(a, b, "{dep} {client}");
            assert_eq!(rows_a, rows_b, "{dep} {client}");
        }
    }
}

#[test]
fn a_field_the_store_does_not_use_is_an_error_at_that_field() {
    let cases = [
        (
            "store = \"local\"\nlatency = \"2ms\"",
            3,
            "`latency` applies only",
        ),
        (
            "store = \"shared\"\nsync_interval = \"1s\"",
            3,
            "`sync_interval` applies only",
        ),
        (
            "store = \"local\"\nclock = \"node\"",
            3,
            "`clock` applies only",
        ),
        (
            "store = \"shared\"\nclock_skew = \"5ms\"",
            3,
            "`clock_skew` has no effect",
        ),
        ("store = \"etcd\"", 2, "unknown store `etcd`"),
        ("balancer = \"least_conn\"", 2, "unknown balancer"),
        ("nodes = 0", 2, "at least 1 node"),
        (
            "nodes = 11\nstore = \"local_split\"",
            2,
            "cannot give every node",
        ),
    ];
    for (fields, line, message) in cases {
        let text = format!(
            "name = \"d\"\nduration = \"1s\"\n[limit]\nmax_requests = 10\nwindow = \"1s\"\n\
             [[traffic]]\nkind = \"uniform\"\nrate = 1\n[deployment]\nnodes = 2\n{fields}"
        )
        .replacen("nodes = 2\nnodes", "nodes", 1);
        let err = Scenario::parse(&text, Path::new("d.toml")).unwrap_err();
        let expected_line = 9 + line - if fields.starts_with("nodes") { 1 } else { 0 };
        assert_eq!(
            err.position.map(|p| p.0),
            Some(expected_line),
            "{fields}: {err}"
        );
        assert!(err.message.contains(message), "{fields}: {err}");
    }
}

/// The bundled scenario `file` on the sliding log alone, after `edit`.
fn bundled_log(file: &str, edit: impl FnOnce(&mut Scenario)) -> ratesim::sim::Metrics {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(file);
    let mut s = load(&path);
    s.set_algorithms(&["sliding_window_log"], ratesim::Registry::builtin())
        .unwrap();
    edit(&mut s);
    run_quiet(&s).algorithms[0].metrics.clone()
}

#[test]
fn each_bundled_deployment_scenario_teaches_what_its_description_says() {
    let m = |file| bundled_log(file, |_| {});
    assert_eq!(m("nodes_local.toml").over_admission, 4.0);
    let sticky = m("nodes_split_sticky.toml");
    assert!(sticky.over_admission <= 0.5, "{sticky:?}");
    assert!(
        sticky.false_deny.unwrap() > sticky.allowed / 2,
        "{sticky:?}"
    );
    assert!(m("nodes_racy.toml").over_admission > 2.0);
    assert!(m("nodes_skew.toml").over_admission > 1.0);
    assert_eq!(m("nodes_synced.toml").over_admission, 4.0);
}

#[test]
fn each_bundled_deployment_lesson_disappears_with_the_fix_its_description_names() {
    let atomic_on_the_store_clock = |s: &mut Scenario| {
        let d = s.deployment.as_mut().unwrap();
        d.store = ratesim::sim::Sharing::Shared {
            clock: ratesim::sim::StoreClock::Store,
        };
        d.clock_skew = ratesim::Nanos::ZERO;
    };
    for file in ["nodes_racy.toml", "nodes_skew.toml"] {
        let m = bundled_log(file, atomic_on_the_store_clock);
        assert_eq!(m.over_admission, 1.0, "{file}");
    }
    let faster_sync = |s: &mut Scenario| {
        let d = s.deployment.as_mut().unwrap();
        d.store = ratesim::sim::Sharing::Synced {
            sync_interval: ratesim::Nanos::from_millis(100),
        };
    };
    assert_eq!(
        bundled_log("nodes_synced.toml", faster_sync).over_admission,
        1.6
    );
}

#[test]
fn on_every_store_a_cost_above_the_capacity_never_fits_and_a_lone_limiters_advice_is_judged() {
    // 2 per 10 s, one node: cost 1 at 0, 1 and 2 s (the third is denied, and would
    // pass later), then a cost of 3, which no algorithm ever admits.
    let rows = [(0, "c", 1), (1000, "c", 1), (2000, "c", 1), (3000, "c", 3)];
    let limit = "max_requests = 2\nwindow = \"10s\"";
    for (store, judged) in [
        ("\"local\"", true),
        ("\"local_split\"", true),
        ("\"shared\"\nlatency = \"5ms\"", true),
        ("\"shared\"\nclock = \"node\"\nlatency = \"5ms\"", true),
        ("\"shared_racy\"\nlatency = \"5ms\"", false),
        ("\"synced\"\nsync_interval = \"1s\"", false),
    ] {
        let dep = format!("nodes = 1\nstore = {store}");
        let (report, decisions) = replay_trace(&rows, "1h", limit, &dep, "");
        for (a, rows) in report.algorithms.iter().zip(&decisions) {
            let m = &a.metrics;
            let context = format!("{store}: {}: {m:?}", a.name);
            assert_eq!((m.denied, m.never_fits), (2, 1), "{context}");
            let waits: Vec<_> = rows.iter().map(|r| r.retry_after.is_some()).collect();
            assert_eq!(waits, [true, true, true, false], "{context}");
            // Where one limiter alone decides, its advice is judged, and exact; where
            // another store's writes decide too, nothing is judged.
            let judged_denials =
                m.retry_after_exact + m.retry_after_too_early + m.retry_after_too_late;
            assert_eq!(judged_denials, u64::from(judged), "{context}");
            assert_eq!(m.retry_after_exact, u64::from(judged), "{context}");
        }
    }
}

#[test]
fn a_retry_through_a_distant_store_waits_the_round_trip_then_the_advised_wait() {
    // 1 per 10 s, 100 ms each way to the store: the answer to the request at 1 s is
    // back at 1.2 s, and the retry leaves then plus the advised wait, when it passes.
    let limit = "max_requests = 1\nwindow = \"10s\"";
    let client = "[client]\nkind = \"retry\"\nmax_retries = 1";
    let round_trip = Nanos::from_millis(200);
    for store in [
        "\"shared\"",
        "\"shared\"\nclock = \"node\"",
        "\"shared_racy\"",
    ] {
        let dep = format!("nodes = 2\nstore = {store}\nlatency = \"100ms\"");
        let (report, decisions) =
            replay_trace(&[(0, "c", 1), (1000, "c", 1)], "1h", limit, &dep, client);
        for (a, rows) in report.algorithms.iter().zip(&decisions) {
            let context = format!("{store}: {}: {rows:?}", a.name);
            let [first, denied, retry] = rows.as_slice() else {
                panic!("{context}: three attempts expected");
            };
            assert!(first.allowed && !denied.allowed, "{context}");
            assert_eq!((retry.seq, retry.attempt), (denied.seq, 1), "{context}");
            let wait = denied.retry_after.unwrap();
            assert_eq!(retry.time, denied.time + round_trip + wait, "{context}");
            assert!(retry.allowed, "{context}");
            // Each client waits for its answers: the first one round trip, the
            // second two and the advised wait.
            let m = &a.metrics;
            assert_eq!(m.succeeded, Some(2), "{context}");
            let latency = (retry.time + round_trip - denied.time).as_u64();
            assert_eq!(m.latency_max_ns, Some(latency), "{context}");
        }
    }
}

#[test]
fn a_store_deciding_on_its_own_clock_sweeps_by_that_clock() {
    // As with the nodes' stamps: 1 per 1 s, 400 ms to the store. The store's clock
    // reads 1.1 s and 2.05 s; the sweep due at 2 s keeps the entry of 1.1 s, which
    // still counts at 2.05 s: denied.
    let limit = "max_requests = 1\nwindow = \"1s\"";
    let dep = "nodes = 2\nstore = \"shared\"\nlatency = \"400ms\"";
    let report = replay(&[700, 1650], limit, dep);
    assert_eq!(over_admission(&report, "sliding_window_log"), 1.0);
    // 1 per 1 s, an idle-key sweep every 3.6 s (a thousandth of the hour): `a` at 3 s
    // still counts at the sweep of 3.6 s and is idle by the one due at 7.2 s. Sent at
    // 7.15 s, `b` reaches a store 100 ms away after that sweep, which has forgotten
    // `a`: the store never holds both keys. A node's own limiter gets `b` before that
    // sweep, and holds both.
    let rows = [(3000, "a", 1), (7150, "b", 1)];
    for (dep, peak) in [
        ("nodes = 1\nstore = \"shared\"\nlatency = \"100ms\"", 1),
        ("nodes = 1\nstore = \"local\"", 2),
    ] {
        let (report, _) = replay_trace(&rows, "1h", limit, dep, "");
        for a in &report.algorithms {
            assert_eq!(a.metrics.peak_keys, peak, "{dep}: {}", a.name);
        }
    }
}

#[test]
fn a_node_whose_clock_is_behind_sweeps_late_enough_to_keep_what_it_still_counts() {
    // 1 per 1 s, round robin over two nodes, the first 1 s behind. Its clock stamps
    // `c` at 2 s and 2.7 s: the second is denied on every algorithm, although the
    // idle-key sweep due at 3.6 s (a thousandth of the hour) comes between them. `o`
    // only takes the second node's turn.
    let limit = "max_requests = 1\nwindow = \"1s\"";
    let dep = "nodes = 2\nstore = \"local\"\nclock_skew = \"1s\"";
    let rows = [(3000, "c", 1), (3300, "o", 1), (3700, "c", 1)];
    let (report, decisions) = replay_trace(&rows, "1h", limit, dep, "");
    for (a, rows) in report.algorithms.iter().zip(&decisions) {
        let allowed: Vec<bool> = rows.iter().map(|r| r.allowed).collect();
        assert_eq!(allowed, [true, true, false], "{}: {rows:?}", a.name);
        assert_eq!(a.metrics.over_admission, 1.0, "{}", a.name);
    }
}

#[test]
fn a_synced_node_hears_of_an_admission_when_its_exchange_arrives_and_not_before() {
    // 1 per 10 s, two nodes in turn, an exchange every second that arrives 100 ms after
    // its cut. `c` is admitted by the first node; the second admits `c` again until the
    // exchange that covers it arrives (at 1.1 s for an admission at 0.5 s), and denies
    // it from that instant on. Rounds with nothing to exchange are skipped, never the
    // next one: an admission at 2.95 s, after two idle rounds, arrives at 3.1 s.
    let limit = "max_requests = 1\nwindow = \"10s\"";
    let dep = "nodes = 2\nstore = \"synced\"\nsync_interval = \"1s\"\nlatency = \"100ms\"";
    for (times, second_allowed) in [
        ([500, 1099], true),
        ([500, 1100], false),
        // An admission at the cut itself belongs to the next exchange.
        ([1000, 1500], true),
        ([1000, 2100], false),
        ([2950, 3050], true),
        ([2950, 3200], false),
    ] {
        let rows = times.map(|t| (t, "c", 1));
        let (report, decisions) = replay_trace(&rows, "1h", limit, dep, "");
        for (a, rows) in report.algorithms.iter().zip(&decisions) {
            let allowed: Vec<bool> = rows.iter().map(|r| r.allowed).collect();
            assert_eq!(allowed, [true, second_allowed], "{}: {times:?}", a.name);
        }
    }
}

#[test]
fn an_admission_made_while_an_exchange_is_on_its_way_travels_with_the_next_one() {
    // As above (two nodes in turn, an exchange every second, 100 ms on the way). `c`
    // is admitted by the second node at 1.05 s, after the cut at 1 s and before that
    // exchange arrives; nothing more of `c` until the exchange cut at 2 s, which
    // carries it: the first node, asked at 2.3 s, denies `c`.
    let limit = "max_requests = 1\nwindow = \"10s\"";
    let dep = "nodes = 2\nstore = \"synced\"\nsync_interval = \"1s\"\nlatency = \"100ms\"";
    let rows = [
        (500, "x", 1),
        (1050, "c", 1),
        (1200, "y", 1),
        (2200, "z", 1),
        (2300, "c", 1),
    ];
    let (report, decisions) = replay_trace(&rows, "1h", limit, dep, "");
    for (a, rows) in report.algorithms.iter().zip(&decisions) {
        let allowed: Vec<bool> = rows.iter().map(|r| r.allowed).collect();
        assert_eq!(allowed, [true, true, true, true, false], "{}", a.name);
    }
}

#[test]
fn a_synced_deployments_peak_keys_add_up_every_nodes_keys_and_the_agreed_ones() {
    // `c` admitted by the first node at 0.5 s; the exchange at 1.1 s gives it to the
    // second, which then admits `d`: two nodes hold 1 and 2 keys, the agreed state 1.
    let limit = "max_requests = 1\nwindow = \"10s\"";
    let dep = "nodes = 2\nstore = \"synced\"\nsync_interval = \"1s\"\nlatency = \"100ms\"";
    let (report, _) = replay_trace(&[(500, "c", 1), (1500, "d", 1)], "1h", limit, dep, "");
    for a in &report.algorithms {
        assert_eq!(a.metrics.peak_keys, 4, "{}", a.name);
    }
}

/// The report names the balancer and the store as a scenario file writes them.
#[test]
fn the_report_names_the_balancer_and_the_store_as_the_file_writes_them() {
    for (balancer, store) in [
        ("round_robin", "local"),
        ("random", "local_split"),
        ("key_hash", "shared"),
        ("round_robin", "shared_racy"),
        ("random", "synced"),
    ] {
        let dep =
            format!("[deployment]\nnodes = 2\nbalancer = \"{balancer}\"\nstore = \"{store}\"");
        let mut s = steady(10, "1", &dep);
        s.set_algorithms(&["fixed_window"], ratesim::Registry::builtin())
            .unwrap();
        let d = run_quiet(&s).deployment.unwrap();
        assert_eq!((d.balancer.as_str(), d.store.as_str()), (balancer, store));
    }
}

/// `compare --nodes`: a scenario without `[deployment]` runs on that many local
/// limiters behind round robin; one with it keeps its settings and changes only the
/// count; `local_split` refuses a count that leaves a node without a permit, under
/// any of the limits.
#[test]
fn set_nodes_changes_only_the_node_count_and_refuses_a_split_with_an_empty_share() {
    use ratesim::sim::{Balancer, Deployment, Sharing};
    let mut plain = steady(10, "1", "");
    plain.set_nodes(3).unwrap();
    assert_eq!(
        plain.deployment,
        Some(Deployment {
            nodes: 3,
            balancer: Balancer::RoundRobin,
            store: Sharing::Local,
            latency: Nanos::ZERO,
            clock_skew: Nanos::ZERO,
        })
    );
    plain.set_nodes(0).unwrap();
    assert_eq!(plain.deployment.map(|d| d.nodes), Some(1), "at least one");
    let split = "[deployment]\nnodes = 2\nbalancer = \"key_hash\"\nstore = \"local_split\"";
    let mut s = steady(5, "1", split);
    let before = s.clone();
    let err = s.set_nodes(6).unwrap_err();
    assert!(
        err.message
            .contains("use at most 5 nodes or a larger limit"),
        "{err}"
    );
    assert_eq!(s, before, "refused: nothing changed");
    // Five permits over five nodes: one each.
    s.set_nodes(5).unwrap();
    let d = s.deployment.unwrap();
    assert_eq!(
        (d.nodes, d.balancer, d.store),
        (5, Balancer::KeyHash, Sharing::LocalSplit)
    );
    // A further [[limit]] with fewer permits than nodes is refused too.
    let two = Scenario::parse(
        &format!(
            "name = \"d\"\nduration = \"60s\"\n[[limit]]\nmax_requests = 5\nwindow = \"10s\"\n\
             [[limit]]\nmax_requests = 3\nwindow = \"1s\"\n\
             [[traffic]]\nkind = \"uniform\"\nrate = 1\n{split}"
        ),
        Path::new("d.toml"),
    );
    let mut two = two.unwrap();
    assert!(two.set_nodes(4).is_err());
    two.set_nodes(3).unwrap();
}

/// `[deployment]` fields left out take their documented defaults, and those given
/// reach the scenario as written.
#[test]
fn a_deployment_table_fills_in_its_documented_defaults() {
    use ratesim::sim::{Balancer, Deployment, Sharing, StoreClock};
    let deployment = |fields: &str| steady(10, "1", &format!("[deployment]\n{fields}")).deployment;
    let base = Deployment {
        nodes: 1,
        balancer: Balancer::RoundRobin,
        store: Sharing::Local,
        latency: Nanos::ZERO,
        clock_skew: Nanos::ZERO,
    };
    assert_eq!(deployment(""), Some(base));
    assert_eq!(
        deployment("store = \"shared\""),
        Some(Deployment {
            store: Sharing::Shared {
                clock: StoreClock::Store
            },
            ..base
        })
    );
    assert_eq!(
        deployment("store = \"synced\""),
        Some(Deployment {
            store: Sharing::Synced {
                sync_interval: Nanos::from_secs(1)
            },
            ..base
        })
    );
    assert_eq!(
        deployment(
            "nodes = 3\nbalancer = \"key_hash\"\nstore = \"shared\"\nclock = \"node\"\n\
             latency = \"2ms\"\nclock_skew = \"5ms\""
        ),
        Some(Deployment {
            nodes: 3,
            balancer: Balancer::KeyHash,
            store: Sharing::Shared {
                clock: StoreClock::Node
            },
            latency: Nanos::from_millis(2),
            clock_skew: Nanos::from_millis(5),
        })
    );
    assert_eq!(
        deployment("nodes = 2\nstore = \"synced\"\nsync_interval = \"250ms\"\nlatency = \"1ms\"")
            .map(|d| (d.store, d.latency)),
        Some((
            Sharing::Synced {
                sync_interval: Nanos::from_millis(250)
            },
            Nanos::from_millis(1)
        ))
    );
    assert_eq!(
        deployment("balancer = \"random\"\nstore = \"shared_racy\"\nlatency = \"1ms\"")
            .map(|d| (d.balancer, d.store)),
        Some((Balancer::Random, Sharing::SharedRacy))
    );
    assert_eq!(
        deployment("store = \"local_split\"\nclock_skew = \"1ms\"").map(|d| d.store),
        Some(Sharing::LocalSplit)
    );
    for (fields, at, message) in [
        (
            "store = \"synced\"\nsync_interval = 0",
            "d.toml:11:17",
            "expected a sync interval above zero",
        ),
        (
            "store = \"shared\"\nclock = \"wall\"",
            "d.toml:11:9",
            "unknown clock `wall`; expected \"store\" or \"node\"",
        ),
        (
            "store = \"local_split\"\nlatency = \"1ms\"",
            "d.toml:11:11",
            "`latency` applies only to store = \"shared\", \"shared_racy\" or \"synced\"; a \
             \"local_split\" limiter lives on the node itself",
        ),
        (
            "store = \"shared_racy\"\nsync_interval = \"1s\"",
            "d.toml:11:17",
            "`sync_interval` applies only to store = \"synced\"",
        ),
        (
            "store = \"synced\"\nclock = \"node\"",
            "d.toml:11:9",
            "`clock` applies only to store = \"shared\"",
        ),
    ] {
        let text = format!(
            "name = \"d\"\nduration = \"60s\"\n[limit]\nmax_requests = 10\nwindow = \"10s\"\n\
             [[traffic]]\nkind = \"uniform\"\nrate = 1\n[deployment]\n{fields}"
        );
        let err = Scenario::parse(&text, Path::new("d.toml")).unwrap_err();
        assert_eq!(err.to_string(), format!("{at}: {message}"));
    }
}

/// Behind a round-robin balancer a client's node depends on every other client's
/// requests, so the second pass that redraws the worst client's window series must
/// see the whole stream: the series it draws peaks at that client's `max_in_window`.
/// (A second pass fed only the worst client's arrivals would route them elsewhere.)
#[test]
fn the_worst_clients_series_behind_a_shared_balancer_is_that_clients() {
    for (balancer, store) in [("round_robin", "local"), ("random", "synced")] {
        let text = format!(
            "name = \"z\"\nseed = 11\nduration = \"120s\"\nalgorithms = [\"all\"]\n\
             [limit]\nmax_requests = 20\nwindow = \"1m\"\n\
             [[traffic]]\nkind = \"poisson\"\nrate = 500\nkeys = 2000\n\
             key_popularity = \"zipf\"\nzipf_exponent = 1.1\n\
             [deployment]\nnodes = 3\nbalancer = \"{balancer}\"\nstore = \"{store}\"\n"
        );
        let sc = parse_at(&text, Path::new("z.toml"));
        // Every first pass follows the first client admitted: the stream's first.
        let first = {
            let mut stream = ArrivalStream::new(&sc).unwrap();
            let (_, a) = stream.next_arrival().unwrap().unwrap();
            stream.keys().name(a.key).to_string()
        };
        let report = run_quiet(&sc);
        let mut redrawn = 0;
        for a in &report.algorithms {
            let peak = a.window_counts.iter().map(|w| w.count).max().unwrap_or(0);
            assert_eq!(
                peak, a.metrics.max_in_window,
                "{balancer}/{store} {}: the series is the worst client's",
                a.name
            );
            // A series of any other client was redrawn by a second pass.
            redrawn += usize::from(a.window_key.as_deref() != Some(first.as_str()));
        }
        assert!(redrawn > 0, "{balancer}/{store}: no second pass ran");
    }
}

/// Every denial names the rule that denied it and no admission names one
/// (`decisions.csv`'s `denied_by`), on every kind of store, the racy store's own
/// decision path included. Two rules, so a missing name is not filled in with the only
/// rule's.
#[test]
fn every_denial_names_its_rule_and_no_admission_does_on_every_store() {
    let dir = tempfile::tempdir().unwrap();
    let times = [0, 50, 100, 150, 200, 3000, 6000, 9000];
    let csv: String = times
        .iter()
        .map(|t| format!("{}.{:03},c,1\n", t / 1000, t % 1000))
        .collect();
    std::fs::write(dir.path().join("t.csv"), format!("time_s,key,cost\n{csv}")).unwrap();
    for store in [
        "\"local\"",
        "\"local_split\"",
        "\"shared\"",
        "\"shared_racy\"\nlatency = \"10ms\"",
        "\"synced\"\nsync_interval = \"1s\"",
    ] {
        let text = format!(
            "name = \"r\"\nduration = \"10s\"\nalgorithms = [\"all\"]\n\
             [[limit]]\nmax_requests = 2\nwindow = \"10s\"\n\
             [[limit]]\nmax_requests = 4\nwindow = \"1m\"\n\
             [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n\
             [deployment]\nnodes = 2\nstore = {store}\n"
        );
        let (_, decisions) = run_capturing(&parse_at(&text, &dir.path().join("r.toml")), 1);
        let mut denials = 0;
        for r in decisions.iter().flatten() {
            let named = r.denied_by.as_deref();
            assert!(
                named.is_some() != r.allowed && matches!(named, None | Some("2/10s" | "4/1m")),
                "{store}: {} at {} allowed {} denied_by {named:?}",
                r.algorithm,
                r.time,
                r.allowed
            );
            denials += usize::from(!r.allowed);
        }
        assert!(denials >= 6, "{store}: {denials} denials");
    }
}
